"""The dashboard: its page at `/`, its static files, and the JSON views its pages poll.

The page is one HTML file with hash routes (`/#/run/3?family=…`), so every view and filter is a
link that can be shared. The JSON views live under /api/dashboard; the app's ETag middleware turns
an unchanged poll into a bodiless 304."""
from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import PositiveInt

from services.api.dashboard import queries
from services.api.db import transaction
from services.api.routes.deps import engine, get_run
from services.api.schemas import Split

STATIC = Path(__file__).parent / "static"
GZIP_MIN_BYTES = 1024

router = APIRouter(tags=["dashboard"])


class RevalidatedStaticFiles(StaticFiles):
    """Static files that the browser must revalidate (ETag → 304) before reuse, so a new
    release is picked up at the next load instead of after a heuristic expiry."""

    def file_response(self, *args, **kwargs):
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        return response


router.mount("/dashboard/static", RevalidatedStaticFiles(directory=STATIC), name="dashboard-static")


def answer(request: Request, payload: dict) -> Response:
    """Plain JSON (the views build JSON-native values, so FastAPI's encoder pass, which costs more
    than the queries on a long run, is skipped), gzipped when large and the client accepts it: a
    run's whole history is mostly repeated keys."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    if len(body) < GZIP_MIN_BYTES or "gzip" not in request.headers.get("accept-encoding", ""):
        return Response(body, media_type="application/json")
    return Response(gzip.compress(body, compresslevel=5, mtime=0), media_type="application/json",
                    headers={"Content-Encoding": "gzip", "Vary": "Accept-Encoding"})


@router.get("/", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


@router.get("/api/dashboard/runs")
def runs(request: Request,
         changed_after: Annotated[datetime | None, Query(description="the `cursor` of the previous answer")] = None):
    """Every run (or those changed since the cursor) with its latest iteration and held-out pass
    rate; `poll_s` says when to ask again."""
    with transaction(engine(request)) as session:
        return answer(request, queries.runs_overview(session, changed_after))


@router.get("/api/dashboard/runs/{run_id}/summary")
def run_summary(run_id: int, request: Request,
                since_version: Annotated[int | None, Query(description="the `version` of the previous answer")] = None,
                changed_after: Annotated[datetime | None, Query(description="the `cursor` of the previous answer")] = None,
                k: Annotated[list[PositiveInt], Query(description="pass@k for each k")] = [1, 4, 8],
                compact: Annotated[bool, Query(description="only what a comparison draws: eval points "
                                               "without families, no iteration rows, no config")] = False):
    """The run page's data: run, iteration metrics and held-out eval points (overall and per
    family). Pass back `version` and `cursor` to get only what changed."""
    with transaction(engine(request)) as session:
        run = get_run(session, run_id)
        return answer(request, queries.run_summary(session, run, sorted(set(k)), since_version, changed_after, compact))


@router.get("/api/dashboard/runs/{run_id}/episodes")
def episodes(run_id: int, request: Request,
             split: Split | None = None, iteration: int | None = None, family: str | None = None,
             task_id: str | None = None, passed: bool | None = None,
             solved_turn: Annotated[int | None, Query(ge=1, description="the turn (1-based) that first passed")] = None,
             after: Annotated[int, Query(description="cursor: only episodes with a larger id")] = 0,
             limit: Annotated[int, Query(ge=1, le=500)] = 50):
    """Episodes with each turn's verdict, for the transcripts list."""
    with transaction(engine(request)) as session:
        get_run(session, run_id)
        return answer(request, queries.episode_page(session, run_id, split=split, iteration=iteration, family=family,
                                                    task_id=task_id, passed=passed, solved_turn=solved_turn,
                                                    after=after, limit=limit))
