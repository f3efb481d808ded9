"""The API: FastAPI app factory. `create_app()` wires settings, the database (migrated on start
unless told not to), the dataset import, the grading dispatcher and the routes.

Serve it with `verirl serve api`, or `uvicorn --factory services.api.app:create_app`."""
from __future__ import annotations

import hashlib
import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.responses import Response

from services.api import db, jobs
from services.api.dashboard import routes as dashboard_routes
from services.api.dispatch import make_dispatcher
from services.api.routes import episodes, evals, grade, health, runs
from services.api.tasks_import import import_tasks
from shared.settings import Settings, get_settings

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engine = db.get_engine(settings.database_url)
        if settings.db_upgrade_on_start:
            db.upgrade(engine)
        if settings.data_dir.is_dir():
            log.info("imported tasks: %s", import_tasks(engine, settings.data_dir))
        app.state.settings = settings
        app.state.engine = engine
        app.state.dispatcher = make_dispatcher(settings)
        app.state.metrics_registry = health.make_registry(engine)
        try:
            if resent := jobs.resend_unfinished(engine, app.state.dispatcher):
                log.info("sent %d unfinished grade jobs again", resent)
        except Exception as exc:  # broker down: serve anyway; /health says so, a repeated request resends
            log.warning("could not resend unfinished grade jobs: %r", exc)
        yield
        app.state.dispatcher.close()

    app = FastAPI(title="verirl API", version="1", lifespan=lifespan,
                  description="Runs, rollouts, held-out evals and per-item verdicts; grading through a queue. "
                              "Writes need `Authorization: Bearer <token>`.")
    for module in (grade, runs, evals, episodes, health):
        app.include_router(module.router)
    app.include_router(dashboard_routes.router)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.middleware("http")(etag)
    return app


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """Bad input is a 4xx that says what is wrong: 400 for a body that is not JSON, else 422."""
    errors = exc.errors()
    if any(error.get("type") == "json_invalid" for error in errors):
        ctx = errors[0].get("ctx", {})
        return JSONResponse({"detail": f"malformed JSON: {ctx.get('error', 'cannot parse the body')}"}, status_code=400)
    where = lambda error: ".".join(str(part) for part in error.get("loc", ()))  # noqa: E731
    message = "; ".join(f"{where(error)}: {error.get('msg')}" for error in errors[:5])
    return JSONResponse({"detail": f"invalid request: {message}", "errors": jsonable_encoder(errors, exclude={"input"})},
                        status_code=422)


async def etag(request: Request, call_next):
    """Weak ETag on JSON GET responses; a matching If-None-Match gets 304 with no body, which
    makes polling cheap for the dashboard."""
    response = await call_next(request)
    if request.method != "GET" or response.status_code != 200 or response.media_type not in (None, "application/json") \
            or not response.headers.get("content-type", "").startswith("application/json"):
        return response
    body = b"".join([chunk async for chunk in response.body_iterator])
    tag = f'W/"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"} | {"ETag": tag}
    if tag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers={"ETag": tag})
    return Response(body, status_code=200, headers=headers, media_type="application/json")
