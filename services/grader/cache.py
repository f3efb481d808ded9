"""Verdict cache keyed by hash(task, answer, mode, grader and checker version).

Sound because grading is a pure function of that tuple. In memory by default (bounded LRU);
with VERIRL_CACHE_DIR set, also one small JSON file per key so that it survives restarts and is
shared by the processes of a pool."""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

from shared.schemas import GRADER_VERSION, Task, Verdict


def cache_key(task: Task, answer: str, mode: str, backend_version: str) -> str:
    h = hashlib.sha256()
    for part in (GRADER_VERSION, backend_version, mode, task.model_dump_json(exclude={"certified", "split"}), answer):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


class VerdictCache:
    def __init__(self, directory: Path | None = None, max_items: int = 100_000):
        self.directory = directory
        self.max_items = max_items
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        if directory:
            directory.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            raw = self._items.get(key)
            if raw is not None:
                self._items.move_to_end(key)
        if raw is None and self.directory:
            path = self.directory / key[:2] / f"{key}.json"
            if path.exists():
                raw = path.read_text()
        return Verdict.model_validate_json(raw).model_copy(update={"cached": True}) if raw else None

    def put(self, key: str, verdict: Verdict) -> None:
        raw = verdict.model_copy(update={"cached": False}).model_dump_json()
        with self._lock:
            self._items[key] = raw
            if len(self._items) > self.max_items:
                self._items.popitem(last=False)
        if self.directory:
            path = self.directory / key[:2] / f"{key}.json"
            path.parent.mkdir(exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(raw)
            tmp.replace(path)  # atomic: readers in other processes never see half a file

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
