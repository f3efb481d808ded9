"""Held-out evals and the trajectory the dashboard plots: per iteration, pass rate, turn-1 rate,
unbiased pass@k and solved-by-n-turns, overall and per family."""
from __future__ import annotations

from itertools import groupby
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import PositiveInt
from sqlalchemy import select

from services.api.auth import Writer
from services.api.db import insert_ignoring_conflicts, transaction
from services.api.models import HeldoutEval, TaskRow, utcnow
from services.api.routes.deps import bump_run, engine, get_run
from services.api.schemas import EvalBatch, EvalItem, Trajectory, TrajectoryPoint, WriteResult
from shared.metrics import TaskEval, rollup

router = APIRouter(tags=["evals"])


@router.post("/runs/{run_id}/evals", status_code=201, response_model=WriteResult, dependencies=[Writer])
def post_evals(run_id: int, body: EvalBatch, request: Request, response: Response) -> WriteResult:
    """Record held-out results of one iteration; (run, iteration, task) is the natural key."""
    with transaction(engine(request)) as session:
        run = get_run(session, run_id)
        missing = {item.task_id for item in body.items if item.family is None}
        families = dict(session.execute(select(TaskRow.id, TaskRow.family).where(TaskRow.id.in_(missing))).all()) if missing else {}
        rows = [{"run_id": run_id, "iteration": body.iteration, "task_id": item.task_id,
                 "family": family_of(item, families), "n": item.n, "passed_by_turn": item.passed_by_turn,
                 "created_at": utcnow()} for item in body.items]
        inserted = len(insert_ignoring_conflicts(session, HeldoutEval.__table__, rows, returning=(HeldoutEval.task_id,)))
        version = bump_run(session, run_id) if inserted else run.version
    if not inserted:
        response.status_code = 200
    return WriteResult(inserted=inserted, skipped=len(rows) - inserted, run_version=version)


def family_of(item: EvalItem, stored: dict[str, str]) -> str:
    if item.family is not None:
        return item.family
    if stored.get(item.task_id):
        return stored[item.task_id]
    parts = item.task_id.split("/")
    return parts[1] if len(parts) >= 3 else ""


@router.get("/runs/{run_id}/evals", response_model=list[EvalItem])
def list_evals(run_id: int, iteration: int, request: Request) -> list[EvalItem]:
    """The per-task rows of one iteration."""
    with transaction(engine(request)) as session:
        get_run(session, run_id)
        rows = session.scalars(select(HeldoutEval).where(HeldoutEval.run_id == run_id, HeldoutEval.iteration == iteration)
                               .order_by(HeldoutEval.task_id))
        return [EvalItem(task_id=r.task_id, family=r.family, n=r.n, passed_by_turn=r.passed_by_turn) for r in rows]


@router.get("/runs/{run_id}/trajectory", response_model=Trajectory)
def trajectory(run_id: int, request: Request,
               after_iteration: Annotated[int, Query(description="only iterations after this")] = -1,
               k: Annotated[list[PositiveInt], Query(description="pass@k for each k (tasks with n >= k)")] = [1, 4, 8],
               ) -> Trajectory:
    """Reads only this run's held-out rows (primary key run, iteration, task), so its cost does
    not grow with the number of episodes or turns stored."""
    ks = sorted(set(k))
    with transaction(engine(request)) as session:
        run = get_run(session, run_id)
        rows = session.execute(
            select(HeldoutEval.iteration, HeldoutEval.task_id, HeldoutEval.family, HeldoutEval.n, HeldoutEval.passed_by_turn)
            .where(HeldoutEval.run_id == run_id, HeldoutEval.iteration > after_iteration)
            .order_by(HeldoutEval.iteration)).all()
    points = []
    for iteration, group in groupby(rows, key=lambda row: row.iteration):
        evals = [TaskEval(r.task_id, r.family, r.n, r.passed_by_turn) for r in group]
        points.append(TrajectoryPoint(iteration=iteration, **rollup(evals, ks)))
    return Trajectory(run_id=run_id, run_version=run.version, ks=ks, iterations=points,
                      last_iteration=points[-1].iteration if points else (after_iteration if after_iteration >= 0 else None))
