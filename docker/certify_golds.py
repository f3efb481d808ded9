"""Certify every gold of one rung in one language with the checker installed here; exit 1 if any
gold fails. The Lean grader image runs this as its last build step, so that a toolchain that
cannot check our own reference proofs fails `docker build` instead of a training run.

The tasks are the committed `data/<rung>/<lang>/tasks.jsonl` when it exists, else the rung as the
factory generates it (deterministic for a seed). Every gold is graded whole, through the same
`grade()` path as a worker; `--steps-per-family` more are also graded step by step (for Lean:
through the REPL), which checks that the step-mode tooling works too.

    python docker/certify_golds.py --rung m1 --lang lean --jobs 2 --steps-per-family 1
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def load(rung: str, lang: str, seed: int, per_family: int, data_dir: Path):
    from shared.factory import candidates
    from shared.tasks import read_tasks

    committed = data_dir / rung / lang / "tasks.jsonl"
    if committed.is_file():
        return read_tasks(committed), str(committed)
    return candidates(rung, lang, seed, per_family), f"generated {rung}/{lang} (seed {seed})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rung", default="m1", help="curriculum rung (default m1)")
    parser.add_argument("--lang", default="lean", help="rocq or lean (default lean)")
    parser.add_argument("--jobs", type=int, default=2, help="golds graded at once")
    parser.add_argument("--steps-per-family", type=int, default=1,
                        help="golds per family also graded step by step (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed when nothing is committed")
    parser.add_argument("--per-family", type=int, default=40, help="tasks per family when generating")
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="where committed datasets live")
    args = parser.parse_args(argv)

    from services.grader.pipeline import grade, shutdown
    from shared.factory import renderer
    from shared.factory.build import certify

    tasks, source = load(args.rung, args.lang, args.seed, args.per_family, args.data_dir)
    if not tasks:
        print(f"certify: no tasks in {source}", file=sys.stderr)
        return 1
    start = time.monotonic()
    _, rejected, version = certify(tasks, args.jobs)
    print(f"certify: {len(tasks) - len(rejected)}/{len(tasks)} golds of {source} pass whole with {version} "
          f"({time.monotonic() - start:.1f} s)")

    fence = renderer(args.lang).fence
    sampled: dict[str, list] = {}
    for task in tasks:
        family = sampled.setdefault(task.family, [])
        if len(family) < args.steps_per_family:
            family.append(task)
    step_failures = []
    try:
        for task in (t for family in sampled.values() for t in family):
            verdict = grade(task, fence(task.gold), "steps")
            if not verdict.passed:
                step_failures.append((task.id, verdict.feedback))
    finally:
        shutdown()
    stepped = sum(len(family) for family in sampled.values())
    if stepped:
        print(f"certify: {stepped - len(step_failures)}/{stepped} golds pass step by step")

    for task_id, feedback in [*rejected, *step_failures]:
        print(f"certify: FAILED {task_id}: {(feedback or '').strip()[:400]}", file=sys.stderr)
    return 1 if rejected or step_failures else 0


if __name__ == "__main__":
    sys.exit(main())
