"""`grade(task, answer) -> Verdict`: the one function every path calls (CLI, local pool, Celery
workers, tests). It bounds the input, picks the backend for the task, extracts the answer's block,
consults the verdict cache and times the check."""
from __future__ import annotations

import importlib
import threading
import time

from services.grader.backends.base import Backend
from services.grader.cache import VerdictCache, cache_key
from shared.schemas import GradeMode, Reason, Task, Verdict
from shared.settings import get_settings

# Backend per task language (proofs) or kind (terminal, swe); imported on first use.
BACKENDS = {
    "rocq": "services.grader.backends.rocq:RocqBackend",
    "lean": "services.grader.backends.lean:LeanBackend",
    "nd": "services.grader.backends.nd:NDBackend",
    "terminal": "services.grader.backends.terminal:TerminalBackend",
    "swe": "services.grader.backends.swe:SWEBackend",
}

_backends: dict[str, Backend] = {}
_lock = threading.Lock()
_cache: VerdictCache | None = None


def backend_key(task: Task) -> str:
    return task.lang if task.kind == "proof" and task.lang else task.kind


def get_backend(key: str) -> Backend:
    with _lock:
        if key not in _backends:
            module, cls = BACKENDS[key].split(":")
            _backends[key] = getattr(importlib.import_module(module), cls)()
        return _backends[key]


def get_cache() -> VerdictCache:
    global _cache
    if _cache is None:
        _cache = VerdictCache(get_settings().cache_dir)
    return _cache


def grade(task: Task, answer: str, mode: GradeMode = "whole", *, use_cache: bool = True) -> Verdict:
    start = time.monotonic()
    key = backend_key(task)
    if key not in BACKENDS:
        return Verdict(passed=False, reason=Reason.bad_format, feedback=f"no grader for tasks of kind {key!r}")
    backend = get_backend(key)
    limit = get_settings().answer_max_chars
    if len(answer) > limit:
        verdict = Verdict(passed=False, reason=Reason.bad_format,
                          feedback=f"answer is {len(answer)} characters; the limit is {limit}")
    else:
        ckey = cache_key(task, answer, mode, backend.version())
        if use_cache and (hit := get_cache().get(ckey)) is not None:
            return hit
        block = backend.extract(answer)
        verdict = block if isinstance(block, Verdict) else backend.check(task, block, mode)
    verdict = verdict.model_copy(update={
        "elapsed_s": round(time.monotonic() - start, 4),
        "backend": backend.name,
        "backend_version": backend.version(),
    })
    if use_cache and len(answer) <= limit and verdict.reason not in (Reason.sandbox_error,):
        get_cache().put(ckey, verdict)
    return verdict


def shutdown() -> None:
    """Close every backend (warm checker processes, slot pools)."""
    with _lock:
        for backend in _backends.values():
            backend.close()
        _backends.clear()
