"""Runs and their per-iteration training metrics."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response
from sqlalchemy import select

from services.api.auth import Writer
from services.api.db import insert_ignoring_conflicts, transaction
from services.api.models import IterationMetric, Run, utcnow
from services.api.routes.deps import bump_run, engine, get_run
from services.api.schemas import IterationIn, IterationOut, RunCreate, RunList, RunOut, RunPatch, RunStatus, WriteResult

router = APIRouter(tags=["runs"])


@router.post("/runs", status_code=201, response_model=RunOut, dependencies=[Writer],
             responses={200: {"description": "a run with this name and config exists already"},
                        409: {"description": "a run with this name exists with a different config"}})
def create_run(body: RunCreate, request: Request, response: Response) -> RunOut:
    """Create a run. Its name is its natural key: sending the same run again returns it (200)."""
    now = utcnow()
    with transaction(engine(request)) as session:
        inserted = insert_ignoring_conflicts(session, Run.__table__, [{
            **body.model_dump(), "version": 1, "created_at": now, "updated_at": now}], returning=(Run.id,))
        run = session.scalar(select(Run).where(Run.name == body.name))
        if not inserted:
            if run.config != body.config:
                raise HTTPException(409, f"a run named {body.name!r} exists with a different config")
            response.status_code = 200
        return RunOut.model_validate(run)


@router.get("/runs", response_model=RunList)
def list_runs(request: Request,
              updated_after: Annotated[datetime | None, Query(description="only runs changed after this")] = None,
              status: RunStatus | None = None,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> RunList:
    """Runs in the order they last changed (oldest first), for polling with `updated_after`."""
    query = select(Run).order_by(Run.updated_at, Run.id).limit(limit)
    if updated_after is not None:
        query = query.where(Run.updated_at > updated_after)
    if status is not None:
        query = query.where(Run.status == status)
    with transaction(engine(request)) as session:
        items = [RunOut.model_validate(run) for run in session.scalars(query)]
    return RunList(items=items, cursor=items[-1].updated_at if items else updated_after)


@router.get("/runs/{run_id}", response_model=RunOut)
def read_run(run_id: int, request: Request) -> RunOut:
    with transaction(engine(request)) as session:
        return RunOut.model_validate(get_run(session, run_id))


@router.patch("/runs/{run_id}", response_model=RunOut, dependencies=[Writer])
def patch_run(run_id: int, body: RunPatch, request: Request) -> RunOut:
    """Change status, phase or tags."""
    with transaction(engine(request)) as session:
        run = get_run(session, run_id)
        changes = body.model_dump(exclude_none=True)
        if changes:
            for field, value in changes.items():
                setattr(run, field, value)
            run.version += 1
            run.updated_at = utcnow()
        session.flush()
        return RunOut.model_validate(run)


@router.post("/runs/{run_id}/iterations", status_code=201, response_model=WriteResult, dependencies=[Writer])
def post_iteration(run_id: int, body: IterationIn, request: Request, response: Response) -> WriteResult:
    """Record one iteration's metrics; (run, iteration) is the natural key, a repeat is skipped."""
    with transaction(engine(request)) as session:
        run = get_run(session, run_id)
        inserted = insert_ignoring_conflicts(session, IterationMetric.__table__, [{
            "run_id": run_id, **body.model_dump(), "created_at": utcnow()}], returning=(IterationMetric.iteration,))
        if not inserted:
            response.status_code = 200
            return WriteResult(inserted=0, skipped=1, run_version=run.version)
        return WriteResult(inserted=1, skipped=0, run_version=bump_run(session, run_id))


@router.get("/runs/{run_id}/iterations", response_model=list[IterationOut])
def list_iterations(run_id: int, request: Request,
                    after_iteration: Annotated[int, Query(description="only iterations after this")] = -1,
                    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> list[IterationOut]:
    with transaction(engine(request)) as session:
        get_run(session, run_id)
        rows = session.scalars(select(IterationMetric)
                               .where(IterationMetric.run_id == run_id, IterationMetric.iteration > after_iteration)
                               .order_by(IterationMetric.iteration).limit(limit))
        return [IterationOut.model_validate(row) for row in rows]
