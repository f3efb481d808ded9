"""Grade jobs: turning requests into rows (one per distinct request), sending them to the
dispatcher, and waiting for verdicts."""
from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import timedelta

from fastapi import HTTPException
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from services.api.db import insert_ignoring_conflicts, transaction
from services.api.models import GradeJob, TaskRow, utcnow
from services.api.schemas import GradeItem, GradeJobOut
from services.grader.pipeline import BACKENDS, backend_key
from shared.schemas import GRADER_VERSION, Task, Verdict

# A queued job never marked as sent is sent again when its request is repeated, after this long
# (the first request may still be between its commit and its publish).
RESEND_AFTER = timedelta(seconds=5)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def task_hash(task: Task) -> str:
    # Fields that cannot change a verdict stay out, as in the grader's verdict cache.
    return _sha256(task.model_dump_json(exclude={"certified", "split"}))


def job_key(task: Task, answer: str, mode: str) -> dict:
    """The natural key of a grade request, and the job id derived from it."""
    key = {"task_hash": task_hash(task), "answer_hash": _sha256(answer), "mode": mode,
           "grader_version": GRADER_VERSION}
    key["id"] = _sha256("\0".join(key.values()))[:32]
    return key


def resolve_tasks(session: Session, items: list[GradeItem]) -> list[Task]:
    """The task of each item; 422 naming the first unknown task id or ungradable task."""
    wanted = {item.task_id for item in items if item.task_id is not None}
    stored = {row.id: row.body for row in session.execute(select(TaskRow.id, TaskRow.body).where(TaskRow.id.in_(wanted)))}
    tasks = []
    for position, item in enumerate(items):
        if item.task is not None:
            task = item.task
        elif item.task_id in stored:
            task = Task.model_validate(stored[item.task_id])
        else:
            raise HTTPException(422, f"item {position}: unknown task_id {item.task_id!r}; import the dataset "
                                     "(`verirl db import-tasks`) or send the task inline")
        if backend_key(task) not in BACKENDS:
            raise HTTPException(422, f"item {position}: no grader for tasks of kind {task.kind!r} / lang {task.lang!r}")
        tasks.append(task)
    return tasks


def check_sizes(items: list[GradeItem], answer_max_chars: int) -> None:
    for position, item in enumerate(items):
        if len(item.answer) > answer_max_chars:
            raise HTTPException(413, f"item {position}: answer is {len(item.answer)} characters; "
                                     f"the limit is {answer_max_chars}")


def create_jobs(session: Session, items: list[GradeItem], tasks: list[Task]) -> tuple[list[str], list[tuple[str, str]]]:
    """Insert a row per distinct request. Returns the job id of every item (in order) and the
    (id, queue) pairs to send: new jobs, and old ones whose first send never happened."""
    rows: dict[str, dict] = {}
    ids = []
    for item, task in zip(items, tasks):
        key = job_key(task, item.answer, item.mode)
        ids.append(key["id"])
        rows.setdefault(key["id"], {**key, "task_id": task.id, "queue": backend_key(task),
                                    "task": task.model_dump(mode="json"), "answer": item.answer,
                                    "status": "queued", "attempts": 0, "created_at": utcnow()})
    inserted = {row.id for row in insert_ignoring_conflicts(session, GradeJob.__table__, list(rows.values()),
                                                            returning=(GradeJob.id,))}
    unsent = session.execute(select(GradeJob.id).where(
        GradeJob.id.in_(set(rows) - inserted), GradeJob.status == "queued", GradeJob.enqueued_at.is_(None),
        GradeJob.created_at < utcnow() - RESEND_AFTER)).scalars()
    return ids, [(job_id, rows[job_id]["queue"]) for job_id in sorted(inserted | set(unsent))]


def submit(engine: Engine, dispatcher, items: list[GradeItem]) -> list[str]:
    """Store the jobs of `items`, send the new ones, and return every item's job id."""
    with transaction(engine) as session:
        ids, to_send = create_jobs(session, items, resolve_tasks(session, items))
    try:
        send(engine, dispatcher, to_send)
    except Exception as exc:  # broker down: the rows are stored; repeating the request sends them
        raise HTTPException(503, f"grading queue unavailable ({type(exc).__name__}: {exc}); the jobs "
                                 "are stored and are sent when the request is repeated") from exc
    return ids


def send(engine: Engine, dispatcher, jobs: list[tuple[str, str]]) -> None:
    """Hand (id, queue) pairs to the dispatcher, then mark them sent."""
    if not jobs:
        return
    dispatcher.submit(jobs)
    with transaction(engine) as session:
        session.execute(update(GradeJob).where(GradeJob.id.in_([job_id for job_id, _ in jobs]),
                                               GradeJob.enqueued_at.is_(None)).values(enqueued_at=utcnow()))


def fetch_jobs(engine: Engine, ids: list[str]) -> dict[str, GradeJobOut]:
    with transaction(engine) as session:
        rows = session.scalars(select(GradeJob).where(GradeJob.id.in_(set(ids)))).all()
        return {row.id: job_out(row) for row in rows}


def job_out(row: GradeJob) -> GradeJobOut:
    return GradeJobOut(id=row.id, status=row.status, task_id=row.task_id, attempts=row.attempts,
                       verdict=Verdict.model_validate(row.verdict) if row.verdict else None,
                       created_at=row.created_at, finished_at=row.finished_at)


async def wait_for(engine: Engine, ids: list[str], timeout_s: float) -> dict[str, GradeJobOut]:
    """The jobs, once all are done or `timeout_s` has passed (polling the database)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    while True:
        jobs = await run_in_threadpool(fetch_jobs, engine, ids)
        remaining = deadline - time.monotonic()
        if remaining <= 0 or all(job.status == "done" for job in jobs.values()):
            return jobs
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 1.5, 0.25)


def resend_unfinished(engine: Engine, dispatcher) -> int:
    """At startup: send again what a previous API process left behind. With a broker, only jobs
    never published (the broker holds the rest); with the in-process pool, every unfinished job
    (the pool died with that process)."""
    unfinished = GradeJob.status != "done"
    if dispatcher.kind == "celery":
        unfinished = unfinished & GradeJob.enqueued_at.is_(None)
    with transaction(engine) as session:
        pending = [(row.id, row.queue) for row in session.execute(select(GradeJob.id, GradeJob.queue).where(unfinished))]
    send(engine, dispatcher, pending)
    return len(pending)
