"""Re-certify the committed datasets: grade every gold through `grade()` and print verdicts/s.

Also measures, on the same sample of golds, the baseline (one fresh sandboxed `coqc` at a time)
against the build's path (the grader's thread pool with warm sessions) and prints the ratio.

    python bench/certify.py                      # every committed Rocq rung
    python bench/certify.py --rungs m1 m4 --jobs 2 --sample 24
Exit status 1 if any committed gold fails to re-certify."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.grader.backends.rocq import RocqBackend  # noqa: E402
from shared.factory import RUNG_NAMES  # noqa: E402
from shared.factory.build import grade_all  # noqa: E402
from shared.factory.calibrate import sample  # noqa: E402
from shared.factory.render_rocq import fence  # noqa: E402
from shared.tasks import dataset_dir, load_tasks  # noqa: E402


def regrade_pool(tasks, jobs: int) -> tuple[list[bool], float]:
    """The build's path: `grade()` on `jobs` threads sharing warm sessions; no verdict cache."""
    start = time.monotonic()
    passed = [v.passed for v in grade_all([(t, fence(t.gold)) for t in tasks], jobs)]
    return passed, time.monotonic() - start


def regrade_fresh_sequential(tasks) -> tuple[list[bool], float]:
    backend = RocqBackend(warm=False)
    start = time.monotonic()
    passed = [backend.check(t, t.gold).passed for t in tasks]
    return passed, time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rungs", nargs="*", default=list(RUNG_NAMES), help="rungs to re-certify")
    parser.add_argument("--jobs", type=int, default=2, help="golds graded at once")
    parser.add_argument("--sample", type=int, default=2, help="tasks per family in the baseline comparison")
    parser.add_argument("--data", type=Path, default=ROOT / "data", help="data root")
    args = parser.parse_args()

    failures, total, total_s, comparison = [], 0, 0.0, []
    for rung in args.rungs:
        path = dataset_dir(rung, "rocq", args.data) / "tasks.jsonl"
        if not path.exists():
            print(f"{rung}: no committed dataset at {path}")
            continue
        tasks = load_tasks(path)
        passed, elapsed = regrade_pool(tasks, args.jobs)
        failures += [t.id for t, ok in zip(tasks, passed) if not ok]
        total, total_s = total + len(tasks), total_s + elapsed
        print(f"{rung}: {sum(passed)}/{len(tasks)} re-certified in {elapsed:.1f} s "
              f"({len(tasks) / elapsed:.2f} verdicts/s, {args.jobs} jobs)")
        comparison += sample(tasks, args.sample)
    if total:
        print(f"all: {total - len(failures)}/{total} in {total_s:.1f} s ({total / total_s:.2f} verdicts/s)")
    if comparison:
        base_ok, base_s = regrade_fresh_sequential(comparison)
        ours_ok, ours_s = regrade_pool(comparison, args.jobs)
        assert base_ok == ours_ok, "warm pool and fresh coqc disagree on a gold"
        print(f"sample of {len(comparison)} golds: fresh coqc one at a time {len(comparison) / base_s:.2f}/s, "
              f"pool ({args.jobs} jobs, warm) {len(comparison) / ours_s:.2f}/s, ratio {base_s / ours_s:.2f}x")
    for tid in failures:
        print(f"FAILED to re-certify: {tid}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
