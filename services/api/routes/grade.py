"""Grading: one answer (waits for the verdict up to a timeout, else 202), a batch, a job."""
from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from services.api import jobs
from services.api.auth import Writer
from services.api.routes.deps import engine
from services.api.schemas import GradeBatchOut, GradeBatchRequest, GradeJobOut, GradeRequest

router = APIRouter(tags=["grading"])


@router.post("/grade", response_model=GradeJobOut, dependencies=[Writer],
             responses={202: {"model": GradeJobOut, "description": "not graded yet: poll GET /grade/{id}"}})
async def grade(body: GradeRequest, request: Request):
    """Grade one answer. The same request again names the same job (and verdict)."""
    settings = request.app.state.settings
    jobs.check_sizes([body], settings.answer_max_chars)
    timeout = min(settings.grade_wait_s if body.timeout_s is None else body.timeout_s, settings.grade_wait_max_s)
    item = body.model_copy(update={"timeout_s": None})
    [job_id] = await run_in_threadpool(jobs.submit, engine(request), request.app.state.dispatcher, [item])
    job = (await jobs.wait_for(engine(request), [job_id], timeout))[job_id]
    if job.status != "done":
        return JSONResponse(job.model_dump(mode="json"), status_code=202, headers={"Location": f"/grade/{job_id}"})
    return job


@router.post("/grade/batch", response_model=GradeBatchOut, dependencies=[Writer])
async def grade_batch(body: GradeBatchRequest, request: Request) -> GradeBatchOut:
    """Grade many answers; waits up to `wait_s` for verdicts. Repeating the request (say with
    only the items not yet done) creates nothing new and returns the same jobs."""
    settings = request.app.state.settings
    if len(body.items) > settings.grade_batch_max:
        raise HTTPException(413, f"{len(body.items)} items in one batch; the limit is {settings.grade_batch_max}")
    jobs.check_sizes(body.items, settings.answer_max_chars)
    ids = await run_in_threadpool(jobs.submit, engine(request), request.app.state.dispatcher, body.items)
    found = await jobs.wait_for(engine(request), ids, min(body.wait_s, settings.grade_wait_max_s))
    out = [found[job_id] for job_id in ids]
    return GradeBatchOut(jobs=out, done=sum(job.status == "done" for job in out))


@router.get("/grade/{job_id}", response_model=GradeJobOut)
async def read_job(job_id: str, request: Request, wait_s: float = 0.0) -> GradeJobOut:
    """A job and, once graded, its verdict. `wait_s` waits (bounded) for it to finish."""
    wait = min(max(wait_s, 0.0), request.app.state.settings.grade_wait_max_s)
    found = await jobs.wait_for(engine(request), [job_id], wait)
    if job_id not in found:
        raise HTTPException(404, f"no grade job with id {job_id!r}")
    return found[job_id]
