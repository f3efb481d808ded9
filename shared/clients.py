"""Typed httpx client for the verirl API (what the trainer and users' scripts use).

Every write the API accepts has a natural key, so this client retries writes freely on
connection errors and 502/503/504: a repeated request stores nothing twice.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from shared.schemas import GradeMode, Task, Verdict
from shared.settings import get_settings

RETRY_STATUS = {502, 503, 504}


class APIError(Exception):
    """The API answered with an error status; `detail` is its message."""

    def __init__(self, status: int, detail: str):
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class GradeJob:
    id: str
    status: str  # queued | running | done
    verdict: Verdict | None

    @classmethod
    def from_json(cls, data: dict) -> GradeJob:
        return cls(data["id"], data["status"], Verdict.model_validate(data["verdict"]) if data.get("verdict") else None)


def grade_item(task: Task | str, answer: str, mode: GradeMode = "whole") -> dict:
    """A grade request body: `task` is a Task (sent inline) or a stored task's id."""
    reference = {"task_id": task} if isinstance(task, str) else {"task": task.model_dump(mode="json")}
    return {**reference, "answer": answer, "mode": mode}


class APIClient:
    def __init__(self, base_url: str | None = None, token: str | None = None, *, timeout_s: float = 60.0,
                 retries: int = 4, transport: httpx.BaseTransport | None = None):
        settings = get_settings()
        self.retries = retries
        self.http = httpx.Client(base_url=base_url or settings.api_url, timeout=timeout_s, transport=transport,
                                 headers={"Authorization": f"Bearer {token or settings.api_token}"})

    def __enter__(self) -> APIClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs) -> Any:
        """JSON of a 2xx answer; raises APIError otherwise. Retries transient failures."""
        for attempt in range(self.retries + 1):
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError:
                if attempt == self.retries:
                    raise
            else:
                if response.status_code not in RETRY_STATUS or attempt == self.retries:
                    break
            time.sleep(min(0.2 * 2 ** attempt, 5.0))
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise APIError(response.status_code, str(detail))
        return response.json()

    # --- grading -------------------------------------------------------------------------------

    def grade(self, task: Task | str, answer: str, mode: GradeMode = "whole", *, timeout_s: float | None = None) -> GradeJob:
        """One answer; the verdict if it came within `timeout_s`, else a job to poll."""
        return GradeJob.from_json(self.request("POST", "/grade", json={**grade_item(task, answer, mode), "timeout_s": timeout_s}))

    def get_grade(self, job_id: str, *, wait_s: float = 0.0) -> GradeJob:
        return GradeJob.from_json(self.request("GET", f"/grade/{job_id}", params={"wait_s": wait_s}))

    def submit_batch(self, items: Sequence[dict], *, wait_s: float = 0.0) -> list[GradeJob]:
        """POST /grade/batch with items from `grade_item`; jobs in order."""
        body = self.request("POST", "/grade/batch", json={"items": list(items), "wait_s": wait_s})
        return [GradeJob.from_json(job) for job in body["jobs"]]

    def grade_batch(self, items: Sequence[dict], *, deadline_s: float = 600.0, wait_s: float = 10.0,
                    chunk: int = 500) -> list[Verdict]:
        """Verdicts of all `items`, in order. Sends the batch, then sends the items still
        pending again (which creates nothing new) until all are graded or `deadline_s` passes."""
        verdicts: list[Verdict | None] = [None] * len(items)
        deadline = time.monotonic() + deadline_s
        while pending := [i for i, v in enumerate(verdicts) if v is None]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(pending)} of {len(items)} answers not graded within {deadline_s} s")
            for start in range(0, len(pending), chunk):
                part = pending[start:start + chunk]
                for i, job in zip(part, self.submit_batch([items[i] for i in part], wait_s=wait_s)):
                    verdicts[i] = job.verdict
        return verdicts  # type: ignore[return-value]

    # --- runs ----------------------------------------------------------------------------------

    def create_run(self, name: str, config: dict | None = None, *, tags: Sequence[str] = (), status: str = "created",
                   phase: str = "") -> dict:
        """Create the run, or return it if a run of that name and config exists."""
        return self.request("POST", "/runs", json={"name": name, "config": config or {}, "tags": list(tags),
                                                   "status": status, "phase": phase})

    def get_run(self, run_id: int) -> dict:
        return self.request("GET", f"/runs/{run_id}")

    def list_runs(self, *, updated_after: datetime | None = None, limit: int = 100) -> dict:
        params = {"limit": limit} | ({"updated_after": updated_after.isoformat()} if updated_after else {})
        return self.request("GET", "/runs", params=params)

    def update_run(self, run_id: int, *, status: str | None = None, phase: str | None = None,
                   tags: Sequence[str] | None = None) -> dict:
        changes = {"status": status, "phase": phase, "tags": list(tags) if tags is not None else None}
        return self.request("PATCH", f"/runs/{run_id}", json={k: v for k, v in changes.items() if v is not None})

    def post_iteration(self, run_id: int, iteration: int, metrics: dict) -> dict:
        return self.request("POST", f"/runs/{run_id}/iterations", json={"iteration": iteration, "metrics": metrics})

    def iterations(self, run_id: int, *, after_iteration: int = -1) -> list[dict]:
        return self.request("GET", f"/runs/{run_id}/iterations", params={"after_iteration": after_iteration})

    def post_evals(self, run_id: int, iteration: int, items: Sequence[dict]) -> dict:
        """items: {task_id, n, passed_by_turn (cumulative), family (optional)}."""
        return self.request("POST", f"/runs/{run_id}/evals", json={"iteration": iteration, "items": list(items)})

    def trajectory(self, run_id: int, *, after_iteration: int = -1, ks: Sequence[int] = (1, 4, 8)) -> dict:
        return self.request("GET", f"/runs/{run_id}/trajectory",
                            params={"after_iteration": after_iteration, "k": list(ks)})

    def post_episodes(self, run_id: int, episodes: Sequence[dict], *, chunk: int = 1000) -> int:
        """Store episodes (each with its turns) in chunks; returns how many were new."""
        inserted = 0
        for start in range(0, len(episodes), chunk):
            body = {"episodes": list(episodes[start:start + chunk])}
            inserted += self.request("POST", f"/runs/{run_id}/episodes", json=body)["inserted"]
        return inserted

    def episodes(self, run_id: int, *, after: int = 0, limit: int = 100, **filters: Any) -> dict:
        """One page: {items, next_after, has_more}. Filters: iteration, split, family, task_id, passed."""
        params = {"after": after, "limit": limit} | {k: v for k, v in filters.items() if v is not None}
        return self.request("GET", f"/runs/{run_id}/episodes", params=params)

    def episode(self, episode_id: int) -> dict:
        return self.request("GET", f"/episodes/{episode_id}")

    def health(self) -> dict:
        return self.request("GET", "/health")
