"""Helpers the route modules share."""
from __future__ import annotations

from fastapi import HTTPException, Request
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from services.api.models import Run, utcnow


def engine(request: Request) -> Engine:
    return request.app.state.engine


def get_run(session: Session, run_id: int) -> Run:
    run = session.scalar(select(Run).where(Run.id == run_id))
    if run is None:
        raise HTTPException(404, f"no run with id {run_id}")
    return run


def bump_run(session: Session, run_id: int) -> int:
    """Record that something about the run changed; returns its new version."""
    return session.execute(update(Run).where(Run.id == run_id)
                           .values(version=Run.version + 1, updated_at=utcnow())
                           .returning(Run.version)).scalar_one()

