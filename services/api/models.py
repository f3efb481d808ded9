"""The system of record: tables for datasets, runs, rollouts, held-out evals and grade jobs.

Every table that clients write to has a natural unique key, so a retried request (or a Celery
task delivered twice) inserts nothing new. Types stay portable (JSON, not JSONB) because the
embedded demo runs on SQLite; Postgres runs CI and compose. The layout is documented in
docs/api.md.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# SQLite only auto-increments an INTEGER PRIMARY KEY; Postgres gets a 64-bit identity.
BigId = BigInteger().with_variant(Integer, "sqlite")


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {
        dict[str, Any]: JSON,
        list[Any]: JSON,
        datetime: DateTime(timezone=True),
    }


class Dataset(Base):
    """One imported dataset file, `data/<rung>/<lang>/tasks.jsonl`, named `<rung>/<lang>`."""

    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    path: Mapped[str] = mapped_column(String(1000))
    task_count: Mapped[int] = mapped_column(Integer, default=0)
    imported_at: Mapped[datetime] = mapped_column(default=utcnow)


class TaskRow(Base):
    """A task as stored: the full `shared.schemas.Task` in `body`, a few fields lifted out for
    filtering, and `hash` (of the body) so that changed content is visible."""

    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(String(300), primary_key=True)
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"), index=True)
    rung: Mapped[str] = mapped_column(String(50), default="")
    family: Mapped[str] = mapped_column(String(200), default="")
    split: Mapped[str] = mapped_column(String(20), default="train")
    kind: Mapped[str] = mapped_column(String(20), default="proof")
    lang: Mapped[str | None] = mapped_column(String(20))
    hash: Mapped[str] = mapped_column(String(64))
    body: Mapped[dict[str, Any]]


class Run(Base):
    """A training run. `version` goes up on every write that concerns the run (patch, iteration
    metrics, evals, episodes), so a poller can ask "anything new?" by comparing one number."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    config: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(20), default="created")
    phase: Mapped[str] = mapped_column(String(100), default="")
    tags: Mapped[list[Any]] = mapped_column(default=list)
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class IterationMetric(Base):
    """Training metrics of one iteration (loss, reward, timings, …) as the trainer reports them."""

    __tablename__ = "iteration_metrics"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    iteration: Mapped[int] = mapped_column(Integer, primary_key=True)
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class HeldoutEval(Base):
    """One held-out task evaluated at one iteration: `n` episodes, `passed_by_turn[t]` of them
    solved within t+1 turns (cumulative). The trajectory endpoint aggregates these rows."""

    __tablename__ = "heldout_evals"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    iteration: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    family: Mapped[str] = mapped_column(String(200), default="")
    n: Mapped[int] = mapped_column(Integer)
    passed_by_turn: Mapped[list[Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Episode(Base):
    """One rollout: a task, its turns, the reward. Natural key: (run, iteration, split, task,
    index within the task's group)."""

    __tablename__ = "episodes"
    __table_args__ = (
        UniqueConstraint("run_id", "iteration", "split", "task_id", "index", name="uq_episodes_natural"),
        Index("ix_episodes_run_id_id", "run_id", "id"),
        Index("ix_episodes_run_iteration_id", "run_id", "iteration", "id"),
        Index("ix_episodes_run_family_id", "run_id", "family", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    iteration: Mapped[int] = mapped_column(Integer)
    split: Mapped[str] = mapped_column(String(20), default="train")
    task_id: Mapped[str] = mapped_column(String(300))
    index: Mapped[int] = mapped_column(Integer, default=0)
    family: Mapped[str] = mapped_column(String(200), default="")
    prompt: Mapped[str | None] = mapped_column(Text)
    reward: Mapped[float] = mapped_column(Float, default=0.0)
    passed: Mapped[bool] = mapped_column(Boolean, default=False)
    n_turns: Mapped[int] = mapped_column(Integer, default=0)
    policy_version: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Turn(Base):
    """One answer inside an episode and the verdict it got."""

    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("episode_id", "index", name="uq_turns_natural"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    episode_id: Mapped[int] = mapped_column(BigId, ForeignKey("episodes.id", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)
    completion: Mapped[str] = mapped_column(Text, default="")
    sampled_tokens: Mapped[int] = mapped_column(Integer, default=0)
    passed: Mapped[bool] = mapped_column(Boolean, default=False)
    reason: Mapped[str] = mapped_column(String(30), default="")
    feedback: Mapped[str] = mapped_column(Text, default="")


class GradeJob(Base):
    """One grading request and, once graded, its verdict.

    `id` is derived from the natural key (task hash, answer hash, mode, grader version), so the
    same request twice names the same row and stores one verdict. `attempts` counts deliveries to
    a worker; past `grade_max_attempts` the job is answered with a sandbox_error verdict."""

    __tablename__ = "grade_jobs"
    __table_args__ = (
        UniqueConstraint("task_hash", "answer_hash", "mode", "grader_version", name="uq_grade_jobs_natural"),
        Index("ix_grade_jobs_status_queue", "status", "queue"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    task_id: Mapped[str] = mapped_column(String(300), index=True)
    task_hash: Mapped[str] = mapped_column(String(64))
    answer_hash: Mapped[str] = mapped_column(String(64))
    mode: Mapped[str] = mapped_column(String(16))
    grader_version: Mapped[str] = mapped_column(String(32))
    queue: Mapped[str] = mapped_column(String(32))
    task: Mapped[dict[str, Any]]
    answer: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(200))
    verdict: Mapped[dict[str, Any] | None]
    passed: Mapped[bool | None] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(String(30))
    grade_s: Mapped[float | None] = mapped_column(Float)
    latency_s: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    enqueued_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
