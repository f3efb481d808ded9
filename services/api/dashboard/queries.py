"""What the dashboard reads, shaped for its pages and for cheap polling.

Polling uses two cursors. A run's `version` goes up with every write that concerns it, so "has
anything changed?" costs one primary-key read. When something has, `changed_after` (the time of
the client's previous read) says which rows to send. Rows are stamped before their transaction
commits, so a row can become visible after a read that began later than its stamp; every delta
therefore re-reads a window of `OVERLAP` before the cursor, and clients merge by key (iteration),
which makes the re-sent rows harmless. An answer with nothing new echoes the cursor it was given,
so repeated idle polls are byte-identical and the ETag turns them into 304s.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from services.api.models import Episode, HeldoutEval, IterationMetric, Run, Turn
from shared.metrics import TaskEval, rollup, summarize

OVERLAP = timedelta(seconds=30)

# The iteration metrics the run page draws; the full set stays at GET /runs/{id}/iterations.
ITERATION_FIELDS = (
    "phase", "phase_tasks", "train_reward", "turn1_pass_rate", "groups_with_signal", "groups", "dead",
    "mean_turns", "entropy", "loss", "time_sampling_s", "time_grading_s", "time_training_s", "time_sync_s",
    "time_total_s",
)

# How often a client should poll: soon while a run is being written to, rarely once it is quiet.
POLL_ACTIVE_S = 2.0
POLL_IDLE_S = 15.0
ACTIVE_WINDOW = timedelta(minutes=5)


def aware(moment: datetime) -> datetime:
    """SQLite hands stored UTC times back without a zone."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def stamp(moment: datetime | None) -> str | None:
    """Times go out as ISO 8601 strings in UTC; the views answer with plain JSON (no encoder pass)."""
    return None if moment is None else aware(moment).astimezone(UTC).isoformat()


def since(cursor: datetime | None) -> datetime | None:
    # In UTC: SQLite compares the stored UTC text, whatever zone the cursor was written in.
    return None if cursor is None else aware(cursor).astimezone(UTC) - OVERLAP


def poll_interval(runs: list[Run]) -> float:
    now = datetime.now(UTC)
    active = any(r.status in ("created", "running") and now - aware(r.updated_at) < ACTIVE_WINDOW for r in runs)
    return POLL_ACTIVE_S if active else POLL_IDLE_S


def phase_label(config: dict[str, Any], phase: str) -> str:
    """`phase` as the trainer records it is an index into `config["phases"]`; name it by its tasks."""
    phases = config.get("phases") if isinstance(config, dict) else None
    if phase.isdigit() and isinstance(phases, list) and int(phase) < len(phases) \
            and isinstance(phases[int(phase)], dict) and phases[int(phase)].get("tasks"):
        return f"{phase} · {phases[int(phase)]['tasks']}"
    return phase


def run_record(run: Run, with_config: bool) -> dict[str, Any]:
    record = {"id": run.id, "name": run.name, "status": run.status, "phase": run.phase,
              "phase_label": phase_label(run.config, run.phase), "tags": run.tags, "version": run.version,
              "created_at": stamp(run.created_at), "updated_at": stamp(run.updated_at)}
    if with_config:
        record["config"] = run.config
    return record


# ---------------------------------------------------------------------------------------------
# Runs list

def runs_overview(session: Session, changed_after: datetime | None) -> dict[str, Any]:
    """Runs changed after the cursor (all when none), each with its latest iteration and its
    latest held-out eval summarised. Reads only the latest eval iteration's rows of each run."""
    now = datetime.now(UTC)
    query = select(Run).order_by(Run.updated_at, Run.id)
    if changed_after is not None:
        query = query.where(Run.updated_at > since(changed_after))
    runs = list(session.scalars(query))
    ids = [r.id for r in runs]
    last_iteration: dict[int, int] = {}
    latest_eval: dict[int, dict[str, Any]] = {}
    if ids:
        last_iteration = dict(session.execute(
            select(IterationMetric.run_id, func.max(IterationMetric.iteration))
            .where(IterationMetric.run_id.in_(ids)).group_by(IterationMetric.run_id)).all())
        latest = (select(HeldoutEval.run_id, func.max(HeldoutEval.iteration).label("iteration"))
                  .where(HeldoutEval.run_id.in_(ids)).group_by(HeldoutEval.run_id).subquery())
        rows = session.execute(
            select(HeldoutEval.run_id, HeldoutEval.iteration, HeldoutEval.task_id, HeldoutEval.family,
                   HeldoutEval.n, HeldoutEval.passed_by_turn)
            .join(latest, and_(HeldoutEval.run_id == latest.c.run_id, HeldoutEval.iteration == latest.c.iteration))
            .order_by(HeldoutEval.run_id)).all()
        for run_id, group in groupby(rows, key=lambda row: row.run_id):
            group = list(group)
            summary = summarize([TaskEval(r.task_id, r.family, r.n, r.passed_by_turn) for r in group])
            latest_eval[run_id] = {"iteration": group[0].iteration, "tasks": summary["tasks"],
                                   "pass_rate": summary["pass_rate"], "turn1_rate": summary["turn1_rate"]}
    items = [{**run_record(r, with_config=False), "iteration": last_iteration.get(r.id),
              "latest_eval": latest_eval.get(r.id)} for r in runs]
    cursor = now if runs or changed_after is None else changed_after
    every = list(session.scalars(select(Run).where(Run.status.in_(("created", "running")))))
    return {"items": items, "cursor": stamp(cursor), "complete": changed_after is None, "poll_s": poll_interval(every)}


# ---------------------------------------------------------------------------------------------
# One run

def run_summary(session: Session, run: Run, ks: list[int], since_version: int | None,
                changed_after: datetime | None, compact: bool = False) -> dict[str, Any]:
    """Everything the run page draws, or only what changed since the client's cursors.

    Without cursors: the whole history. With `since_version` equal to the run's version: nothing
    but the cursors back. Otherwise: iteration rows and eval points (recomputed whole, over all of
    their tasks) touched after `changed_after`, minus the overlap window, and the run's phases
    (always whole: a handful of ranges). `compact` leaves out what a comparison does not draw:
    iteration rows and the per-family breakdown of each eval point."""
    now = datetime.now(UTC)
    base = {"run_id": run.id, "version": run.version, "ks": ks, "poll_s": poll_interval([run])}
    if since_version is not None and since_version == run.version:
        return {**base, "unchanged": True, "cursor": stamp(changed_after)}
    after = since(changed_after)

    metric_rows = []
    if not compact:
        query = select(IterationMetric).where(IterationMetric.run_id == run.id).order_by(IterationMetric.iteration)
        if after is not None:
            query = query.where(IterationMetric.created_at > after)
        metric_rows = list(session.scalars(query))
    iterations = [{"iteration": m.iteration, **{k: m.metrics[k] for k in ITERATION_FIELDS if k in m.metrics}}
                  for m in metric_rows]

    touched = select(HeldoutEval.iteration).where(HeldoutEval.run_id == run.id).distinct()
    if after is not None:
        touched = touched.where(HeldoutEval.created_at > after)
    eval_rows = session.execute(
        select(HeldoutEval.iteration, HeldoutEval.task_id, HeldoutEval.family, HeldoutEval.n, HeldoutEval.passed_by_turn)
        .where(HeldoutEval.run_id == run.id, HeldoutEval.iteration.in_(touched))
        .order_by(HeldoutEval.iteration)).all()
    evals = []
    for iteration, group in groupby(eval_rows, key=lambda row: row.iteration):
        task_evals = [TaskEval(r.task_id, r.family, r.n, r.passed_by_turn) for r in group]
        evals.append({"iteration": iteration, **(summarize(task_evals, ks) if compact else rollup(task_evals, ks))})

    cursor = now if metric_rows or eval_rows or changed_after is None else changed_after
    return {**base, "unchanged": False, "complete": after is None, "cursor": stamp(cursor),
            "run": run_record(run, with_config=not compact), "phases": phases(session, run.id),
            "iterations": iterations, "evals": evals}


def phases(session: Session, run_id: int) -> list[dict[str, Any]]:
    """Contiguous ranges of iterations in one curriculum phase, from the `phase` (and
    `phase_tasks`) the trainer records with each iteration: [{from, to, phase, label}]."""
    rows = session.execute(select(IterationMetric.iteration, IterationMetric.metrics["phase"],
                                  IterationMetric.metrics["phase_tasks"])
                           .where(IterationMetric.run_id == run_id).order_by(IterationMetric.iteration)).all()
    ranges: list[dict[str, Any]] = []
    for iteration, phase, tasks in rows:
        if phase is None:
            continue
        label = f"phase {phase} · {tasks}" if tasks else f"phase {phase}"
        if ranges and ranges[-1]["label"] == label:
            ranges[-1]["to"] = iteration
        else:
            ranges.append({"from": iteration, "to": iteration, "phase": phase, "label": label})
    return ranges


# ---------------------------------------------------------------------------------------------
# Transcripts

def episode_page(session: Session, run_id: int, *, split: str | None, iteration: int | None, family: str | None,
                 task_id: str | None, passed: bool | None, solved_turn: int | None, after: int,
                 limit: int) -> dict[str, Any]:
    """Episodes in id order with the turn (1-based) that first passed and each turn's verdict,
    filtered; page with `after`. The answers themselves come from GET /episodes/{id}."""
    first_pass = (select(func.min(Turn.index)).where(Turn.episode_id == Episode.id, Turn.passed)
                  .correlate(Episode).scalar_subquery())
    query = (select(Episode, first_pass.label("first_pass"))
             .where(Episode.run_id == run_id, Episode.id > after).order_by(Episode.id).limit(limit))
    for column, value in ((Episode.split, split), (Episode.iteration, iteration), (Episode.family, family),
                          (Episode.task_id, task_id), (Episode.passed, passed)):
        if value is not None:
            query = query.where(column == value)
    if solved_turn is not None:
        query = query.where(first_pass == solved_turn - 1)
    rows = session.execute(query).all()
    verdicts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if rows:
        for turn in session.execute(select(Turn.episode_id, Turn.index, Turn.passed, Turn.reason)
                                    .where(Turn.episode_id.in_([e.id for e, _ in rows]))
                                    .order_by(Turn.episode_id, Turn.index)):
            verdicts[turn.episode_id].append({"passed": turn.passed, "reason": turn.reason})
    items = [{"id": e.id, "iteration": e.iteration, "split": e.split, "task_id": e.task_id, "index": e.index,
              "family": e.family, "reward": e.reward, "passed": e.passed, "n_turns": e.n_turns,
              "solved_turn": None if first is None else first + 1, "turns": verdicts[e.id]} for e, first in rows]
    return {"items": items, "next_after": items[-1]["id"] if items else after, "has_more": len(items) == limit}
