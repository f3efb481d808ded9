"""Grade jobs off a queue: the Celery app (one queue per grader backend), and `claim_job` /
`finish_job`, which both the Celery task and the API's local pool (no broker) use around `grade()`.

A job is a row of `grade_jobs` (see services/api/models.py); the message carries only its id.
Delivery is at-least-once (late acks, requeue when a worker is lost), so processing is
idempotent: each delivery counts an attempt on the row, a job already graded is skipped, and the
first verdict written wins. After `grade_max_attempts` deliveries the job is answered with a
sandbox_error verdict instead of being graded again, so a job that kills its worker cannot loop.

Run a worker with `verirl worker --queues rocq,lean` (or `celery -A services.grader.worker worker
-Q rocq`).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from celery import Celery
from celery import Task as CeleryTask
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError

from services.api.db import get_engine, transaction
from services.api.models import GradeJob, utcnow
from services.grader.pipeline import grade
from shared.schemas import GradeMode, Reason, Task, Verdict
from shared.settings import Settings, get_settings

log = logging.getLogger(__name__)

# One queue per grader backend (services.grader.pipeline.backend_key), deployed separately.
QUEUES = ("rocq", "lean", "nd", "terminal", "swe")
TASK_NAME = "verirl.grade_job"


def make_celery(settings: Settings) -> Celery:
    """The Celery app for `settings`. Time limits must stay below the broker's visibility
    timeout, or Redis would hand a still-running job to a second worker."""
    if not settings.worker_soft_time_limit_s < settings.worker_hard_time_limit_s < settings.broker_visibility_timeout_s:
        raise ValueError("need worker_soft_time_limit_s < worker_hard_time_limit_s < broker_visibility_timeout_s")
    transport = {
        "visibility_timeout": settings.broker_visibility_timeout_s,
        # Look for messages of lost workers about ten times per visibility timeout.
        "unacked_restore_interval": max(1, settings.broker_visibility_timeout_s // 10),
        "unacked_restore_throttle": 1,
    }
    if settings.broker_namespace:
        transport["global_keyprefix"] = settings.broker_namespace
    app = Celery("verirl", set_as_current=False)
    app.conf.update(
        broker_url=settings.broker_url or "memory://",
        broker_transport_options=transport,
        broker_connection_retry_on_startup=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=settings.worker_soft_time_limit_s,
        task_time_limit=settings.worker_hard_time_limit_s,
        worker_max_tasks_per_child=settings.worker_max_tasks_per_child,
        task_ignore_result=True,  # verdicts go to the database, not a result backend
        task_default_queue=QUEUES[0],
        task_serializer="json",
        accept_content=["json"],
    )

    @app.task(name=TASK_NAME, bind=True, base=GradeJobTask, settings=settings, shared=False,
              autoretry_for=(OperationalError,), retry_backoff=True, max_retries=5)
    def grade_job(task: GradeJobTask, job_id: str) -> bool:
        return process_job(settings.database_url, job_id, settings.grade_max_attempts,
                           worker=f"{task.request.hostname}:{os.getpid()}")

    return app


def _as_utc(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes; everything stored is UTC.
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def finish_job(database_url: str, job_id: str, verdict: Verdict, *, started_before: datetime | None = None) -> bool:
    """Store `verdict` unless the job already has one (or, with `started_before`, unless its
    latest attempt started after that moment). True if this call stored it."""
    engine = get_engine(database_url)
    now = utcnow()
    with transaction(engine) as session:
        created_at = session.scalar(select(GradeJob.created_at).where(GradeJob.id == job_id))
        if created_at is None:
            return False
        unfinished = (GradeJob.id == job_id) & (GradeJob.status != "done")
        if started_before is not None:
            unfinished &= GradeJob.started_at <= started_before
        stored = session.execute(
            update(GradeJob)
            .where(unfinished)
            .values(status="done", verdict=verdict.model_dump(mode="json"), passed=verdict.passed,
                    reason=verdict.reason.value, grade_s=verdict.elapsed_s,
                    latency_s=(now - _as_utc(created_at)).total_seconds(), finished_at=now)
        ).rowcount
    return bool(stored)


@dataclass(frozen=True)
class Claim:
    """A job claimed for one grading attempt."""

    task: Task
    answer: str
    mode: GradeMode


def claim_job(database_url: str, job_id: str, max_attempts: int, worker: str) -> Claim | None:
    """Count one delivery of `job_id` and mark it running. None if there is nothing to grade:
    the job is already graded, unknown, or past `max_attempts` (then answered sandbox_error)."""
    with transaction(get_engine(database_url)) as session:
        claimed = session.execute(
            update(GradeJob)
            .where(GradeJob.id == job_id, GradeJob.status != "done")
            .values(attempts=GradeJob.attempts + 1, status="running", worker=worker, started_at=utcnow())
            .returning(GradeJob.attempts, GradeJob.task, GradeJob.answer, GradeJob.mode)
        ).one_or_none()
    if claimed is None:
        return None
    if claimed.attempts > max_attempts:
        finish_job(database_url, job_id, Verdict(
            passed=False, reason=Reason.sandbox_error,
            feedback=f"grading was interrupted {claimed.attempts - 1} times (the grading process "
                     f"was lost each time); not retried again"))
        return None
    return Claim(Task.model_validate(claimed.task), claimed.answer, claimed.mode)


def process_job(database_url: str, job_id: str, max_attempts: int, worker: str) -> bool:
    """Grade job `job_id` once: claim it, grade, store the verdict. True if it was graded."""
    claim = claim_job(database_url, job_id, max_attempts, worker)
    if claim is None:
        return False
    try:
        verdict = grade(claim.task, claim.answer, claim.mode)
    except SoftTimeLimitExceeded:
        verdict = Verdict(passed=False, reason=Reason.timeout, feedback="grading exceeded the worker's time limit")
    finish_job(database_url, job_id, verdict)
    return True


class GradeJobTask(CeleryTask):
    """Base of the grade task. Database outages are retried with backoff (see `make_celery`);
    any other failure, including the hard time limit (which Celery reports here from the parent
    process), stores a sandbox_error verdict so that no job is left unanswered."""

    settings: Settings

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        log.error("grade job %s failed: %r", args[0] if args else "?", exc)
        if not args:
            return
        started_before = None
        if isinstance(exc, TimeLimitExceeded):
            # Celery's timer also fires for a run whose process was already lost and whose job was
            # redelivered: answer only if the run cut short is the job's latest attempt.
            started_before = utcnow() - timedelta(seconds=self.settings.worker_hard_time_limit_s - 1)
        finish_job(self.settings.database_url, args[0], Verdict(
            passed=False, reason=Reason.sandbox_error, feedback=f"grading failed: {type(exc).__name__}: {exc}"),
            started_before=started_before)


app = make_celery(get_settings())
