"""Rollouts: bulk write, filtered and cursor-paginated read, one transcript."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from services.api.auth import Writer
from services.api.db import insert_ignoring_conflicts, transaction
from services.api.models import Episode, TaskRow, Turn, utcnow
from services.api.routes.deps import bump_run, engine, get_run
from services.api.schemas import EpisodeBatch, EpisodeDetail, EpisodeIn, EpisodeOut, EpisodePage, Split, TurnOut, WriteResult

router = APIRouter(tags=["episodes"])


def write_episodes(session: Session, run_id: int, episodes: list[EpisodeIn]) -> int:
    """Insert episodes and their turns with one bulk INSERT per table, skipping episodes whose
    natural key (run, iteration, split, task, index) exists. Returns how many were new."""
    unnamed = {e.task_id for e in episodes if not e.family}
    families = dict(session.execute(select(TaskRow.id, TaskRow.family).where(TaskRow.id.in_(unnamed))).all()) if unnamed else {}
    now = utcnow()
    rows = [{"run_id": run_id, "iteration": e.iteration, "split": e.split, "task_id": e.task_id, "index": e.index,
             "family": e.family or families.get(e.task_id, ""), "prompt": e.prompt, "reward": e.reward,
             "passed": any(t.passed for t in e.turns), "n_turns": len(e.turns),
             "policy_version": e.policy_version, "created_at": now} for e in episodes]
    key = Episode.iteration, Episode.split, Episode.task_id, Episode.index
    new_ids = {tuple(row[1:]): row[0] for row in
               insert_ignoring_conflicts(session, Episode.__table__, rows, returning=(Episode.id, *key))}
    turns = [{"episode_id": new_ids[(e.iteration, e.split, e.task_id, e.index)], "index": i,
              "completion": t.completion, "sampled_tokens": t.sampled_tokens, "passed": t.passed,
              "reason": t.reason.value if t.reason else "", "feedback": t.feedback}
             for e in episodes if (e.iteration, e.split, e.task_id, e.index) in new_ids
             for i, t in enumerate(e.turns)]
    insert_ignoring_conflicts(session, Turn.__table__, turns)
    return len(new_ids)


@router.post("/runs/{run_id}/episodes", status_code=201, response_model=WriteResult, dependencies=[Writer])
def post_episodes(run_id: int, body: EpisodeBatch, request: Request, response: Response) -> WriteResult:
    """Bulk write. All or nothing; episodes already stored are skipped, so a retry is a no-op."""
    limit = request.app.state.settings.episodes_batch_max
    if len(body.episodes) > limit:
        raise HTTPException(413, f"{len(body.episodes)} episodes in one request; the limit is {limit}")
    with transaction(engine(request)) as session:
        run = get_run(session, run_id)
        inserted = write_episodes(session, run_id, body.episodes)
        version = bump_run(session, run_id) if inserted else run.version
    if not inserted:
        response.status_code = 200
    return WriteResult(inserted=inserted, skipped=len(body.episodes) - inserted, run_version=version)


@router.get("/runs/{run_id}/episodes", response_model=EpisodePage)
def list_episodes(run_id: int, request: Request,
                  iteration: int | None = None, split: Split | None = None, family: str | None = None,
                  task_id: str | None = None, passed: bool | None = None,
                  after: Annotated[int, Query(description="cursor: only episodes with a larger id")] = 0,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> EpisodePage:
    """Episodes in id order (the order they were stored), filtered; page with `after`."""
    query = select(Episode).where(Episode.run_id == run_id, Episode.id > after).order_by(Episode.id).limit(limit)
    for column, value in ((Episode.iteration, iteration), (Episode.split, split), (Episode.family, family),
                          (Episode.task_id, task_id), (Episode.passed, passed)):
        if value is not None:
            query = query.where(column == value)
    with transaction(engine(request)) as session:
        get_run(session, run_id)
        items = [EpisodeOut.model_validate(e) for e in session.scalars(query)]
    return EpisodePage(items=items, next_after=items[-1].id if items else after, has_more=len(items) == limit)


@router.get("/episodes/{episode_id}", response_model=EpisodeDetail)
def read_episode(episode_id: int, request: Request) -> EpisodeDetail:
    """One episode with every turn: the transcript."""
    with transaction(engine(request)) as session:
        episode = session.get(Episode, episode_id)
        if episode is None:
            raise HTTPException(404, f"no episode with id {episode_id}")
        turns = session.scalars(select(Turn).where(Turn.episode_id == episode_id).order_by(Turn.index))
        return EpisodeDetail(**EpisodeOut.model_validate(episode).model_dump(), prompt=episode.prompt,
                             turns=[TurnOut.model_validate(t) for t in turns])
