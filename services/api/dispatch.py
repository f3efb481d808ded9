"""Where grade jobs go: a Celery queue per backend when a broker is configured, else the local
thread pool in this process. Both end in the same `grade()` and write the verdict to the job row
(services/grader/worker.py)."""
from __future__ import annotations

import logging
from collections.abc import Iterable

from shared.schemas import Reason, Verdict
from shared.settings import Settings

log = logging.getLogger(__name__)


class CeleryDispatcher:
    kind = "celery"

    def __init__(self, settings: Settings):
        from services.grader.worker import make_celery

        self.app = make_celery(settings)

    def submit(self, jobs: Iterable[tuple[str, str]]) -> None:
        """Publish (job id, queue) pairs. Raises if the broker is unreachable."""
        from services.grader.worker import TASK_NAME

        with self.app.producer_or_acquire() as producer:
            for job_id, queue in jobs:
                self.app.send_task(TASK_NAME, args=[job_id], queue=queue, producer=producer)

    def health(self) -> dict:
        from services.grader.worker import QUEUES

        with self.app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=0, timeout=2)
            channel = connection.default_channel
            depth = {}
            for queue in QUEUES:
                try:
                    depth[queue] = channel.queue_declare(queue=queue, passive=True).message_count
                except connection.channel_errors:
                    depth[queue] = 0  # never used yet
        return {"ok": True, "kind": self.kind, "depth": depth}

    def close(self) -> None:
        self.app.close()


class PoolDispatcher:
    """Grades in this process on the grader's LocalPool. Jobs left unfinished by a previous
    process are submitted again at startup (see `app.py`), so none is lost on restart."""

    kind = "pool"

    def __init__(self, settings: Settings):
        from services.grader.pool import LocalPool

        self.settings = settings
        self.pool = LocalPool(workers=settings.grade_pool_workers)

    def submit(self, jobs: Iterable[tuple[str, str]]) -> None:
        from services.grader.worker import claim_job

        url = self.settings.database_url
        for job_id, _queue in jobs:
            claim = claim_job(url, job_id, self.settings.grade_max_attempts, worker="api-pool")
            if claim is None:
                continue
            future = self.pool.submit(claim.task, claim.answer, claim.mode)
            future.add_done_callback(lambda f, job_id=job_id: _store(url, job_id, f))

    def health(self) -> dict:
        return {"ok": True, "kind": self.kind, "workers": self.pool.workers}

    def close(self) -> None:
        self.pool.close()


def _store(database_url: str, job_id: str, future) -> None:
    from services.grader.worker import finish_job

    if future.cancelled():
        return  # shut down before grading: the row stays unfinished and is resubmitted at startup
    if (exc := future.exception()) is not None:
        log.error("grading job %s failed: %r", job_id, exc)
        verdict = Verdict(passed=False, reason=Reason.sandbox_error, feedback=f"grading failed: {type(exc).__name__}: {exc}")
    else:
        verdict = future.result()
    finish_job(database_url, job_id, verdict)


def make_dispatcher(settings: Settings) -> CeleryDispatcher | PoolDispatcher:
    return CeleryDispatcher(settings) if settings.broker_url else PoolDispatcher(settings)
