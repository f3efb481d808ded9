"""/health (database and queue) and /metrics (Prometheus)."""
from __future__ import annotations

import logging

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from sqlalchemy import Engine, case, func, select, text

from services.api.models import GradeJob

log = logging.getLogger(__name__)
router = APIRouter(tags=["operations"])

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


@router.get("/health")
def health(request: Request) -> JSONResponse:
    """200 when the database and the grading queue answer, else 503 saying which does not."""
    report = {}
    try:
        with request.app.state.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        report["database"] = {"ok": True, "dialect": request.app.state.engine.dialect.name}
    except Exception as exc:
        report["database"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    try:
        report["queue"] = request.app.state.dispatcher.health()
    except Exception as exc:
        report["queue"] = {"ok": False, "kind": request.app.state.dispatcher.kind, "error": f"{type(exc).__name__}: {exc}"}
    ok = all(part["ok"] for part in report.values())
    return JSONResponse({"status": "ok" if ok else "unavailable", **report}, status_code=200 if ok else 503)


class GradeJobCollector:
    """Grading metrics read from the grade_jobs table at scrape time, so they count the work of
    every worker process and every API replica reports the same totals."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def collect(self):
        depth = GaugeMetricFamily("verirl_grade_jobs", "grade jobs not yet graded (queue depth)",
                                  labels=["queue", "status"])
        verdicts = CounterMetricFamily("verirl_grade_verdicts", "stored verdicts by reason", labels=["reason"])
        done = GradeJob.status == "done"
        with self.engine.connect() as connection:
            for queue, status, count in connection.execute(
                    select(GradeJob.queue, GradeJob.status, func.count()).where(~done).group_by(GradeJob.queue, GradeJob.status)):
                depth.add_metric([queue, status], count)
            for reason, count in connection.execute(select(GradeJob.reason, func.count()).where(done).group_by(GradeJob.reason)):
                verdicts.add_metric([reason or ""], count)
            histograms = [self._histogram(connection, "verirl_grade_latency_seconds",
                                          "request to verdict, per graded job", GradeJob.latency_s),
                          self._histogram(connection, "verirl_grade_check_seconds",
                                          "time inside grade(), per graded job", GradeJob.grade_s)]
        yield depth
        yield verdicts
        yield from histograms

    @staticmethod
    def _histogram(connection, name: str, documentation: str, column) -> HistogramMetricFamily:
        row = connection.execute(select(
            *(func.sum(case((column <= bound, 1), else_=0)) for bound in LATENCY_BUCKETS),
            func.count(column), func.sum(column))).one()
        *cumulative, count, total = row
        buckets = [(str(bound), int(n or 0)) for bound, n in zip(LATENCY_BUCKETS, cumulative)]
        family = HistogramMetricFamily(name, documentation)
        family.add_metric([], buckets + [("+Inf", int(count or 0))], float(total or 0.0))
        return family


def make_registry(engine: Engine) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(GradeJobCollector(engine))
    return registry


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format: queue depth, verdicts by reason, grading latency histograms."""
    return Response(generate_latest(request.app.state.metrics_registry), media_type=CONTENT_TYPE_LATEST)
