"""The trainer service: training jobs behind HTTP.

`POST /jobs` with a training config (the same fields as a TOML config) starts a job;
`GET /jobs/{id}` reports its status and progress; `POST /jobs/{id}/stop` asks it to stop after the
current iteration, with a checkpoint that `resume` continues from. One job trains at a time (a
trainer uses the whole machine); a second `POST /jobs` while one runs is answered 409.
"""
from __future__ import annotations

import itertools
import logging
import threading
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from services.trainer.config import TrainConfig

log = logging.getLogger(__name__)

JobStatus = Literal["running", "stopping", "finished", "stopped", "failed"]


class JobRequest(BaseModel):
    config: TrainConfig
    resume: Path | None = Field(None, description="a run directory or checkpoint to continue from")


class JobOut(BaseModel):
    id: int
    status: JobStatus
    run_id: int | None = None
    name: str
    iterations_done: int = 0
    total_iterations: int
    last_line: str = ""
    error: str | None = None
    evals: dict[int, dict[str, Any]] = Field(default_factory=dict)


class Job:
    def __init__(self, id: int, request: JobRequest):
        self.id = id
        self.request = request
        self.status: JobStatus = "running"
        self.stop = threading.Event()
        self.lines: list[str] = []
        self.result = None
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name=f"job-{id}", daemon=True)

    def _run(self) -> None:
        from services.trainer.commands import run_training

        try:
            self.result = run_training(self.request.config, resume=self.request.resume,
                                       should_stop=self.stop.is_set, echo=self.lines.append)
            self.status = self.result.status
        except Exception as exc:  # the job fails; the service stays up and says why
            log.exception("job %d failed", self.id)
            self.error = f"{type(exc).__name__}: {exc}"
            self.status = "failed"

    def out(self) -> JobOut:
        result = self.result
        return JobOut(
            id=self.id, status=self.status, run_id=result.run_id if result else None,
            name=self.request.config.name,
            iterations_done=sum(line.startswith("iter ") for line in self.lines),
            total_iterations=self.request.config.total_iterations,
            last_line=self.lines[-1] if self.lines else "", error=self.error,
            evals=result.evals if result else {},
        )


def create_app() -> FastAPI:
    app = FastAPI(title="verirl trainer", version="1")
    jobs: dict[int, Job] = {}
    ids = itertools.count(1)
    lock = threading.Lock()

    def get(job_id: int) -> Job:
        if job_id not in jobs:
            raise HTTPException(404, f"no job {job_id}")
        return jobs[job_id]

    @app.get("/health")
    def health() -> dict:
        return {"ok": True, "jobs": len(jobs)}

    @app.post("/jobs", status_code=201, response_model=JobOut)
    def create_job(request: JobRequest) -> JobOut:
        with lock:
            busy = [j.id for j in jobs.values() if j.status in ("running", "stopping")]
            if busy:
                raise HTTPException(409, f"job {busy[0]} is still training; stop it first")
            job = Job(next(ids), request)
            jobs[job.id] = job
            job.thread.start()
        return job.out()

    @app.get("/jobs/{job_id}", response_model=JobOut)
    def read_job(job_id: int) -> JobOut:
        return get(job_id).out()

    @app.post("/jobs/{job_id}/stop", response_model=JobOut)
    def stop_job(job_id: int) -> JobOut:
        job = get(job_id)
        if job.status == "running":
            job.stop.set()
            job.status = "stopping"
        return job.out()

    return app
