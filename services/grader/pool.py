"""The embedded grading pool: `grade()` on a bounded set of threads in this process.

Threads, not processes, because the work happens in checker subprocesses (coqc, coqtop, lean,
pytest); threads let every job share one verdict cache and one set of warm checker sessions."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterable

from services.grader.pipeline import grade
from shared.schemas import GradeMode, Task, Verdict


class LocalPool:
    def __init__(self, workers: int = 8):
        self.workers = workers
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grade")

    def submit(self, task: Task, answer: str, mode: GradeMode = "whole") -> Future[Verdict]:
        return self._executor.submit(grade, task, answer, mode)

    def grade_many(self, jobs: Iterable[tuple[Task, str]], mode: GradeMode = "whole") -> list[Verdict]:
        """Verdicts in the order of `jobs`."""
        futures = [self.submit(task, answer, mode) for task, answer in jobs]
        return [f.result() for f in futures]

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "LocalPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
