"""Benchmarks of the terminal and SWE workers, each side by side with its baseline in one run:

1. throughput per worker: reference answers of the shipped tasks graded through `grade()` (no
   cache), one at a time and with as many threads as venv slots, for each task type;
2. the venv slot pool vs building (and verifying) a fresh venv for every SWE episode, which is
   what a grader without a pool does to keep episodes apart; the same episodes, the same grader.

Wall times; on a shared machine they include waiting for a core, so compare rows of one run.
    python bench/workers.py [--episodes 16] [--slots 2]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import services.grader.venv_pool as venv_pool  # noqa: E402
from services.grader.backends import swe, terminal  # noqa: E402
from services.grader.backends.swe import SWEBackend  # noqa: E402
from services.grader.pipeline import grade  # noqa: E402
from services.grader.venv_pool import VenvPool  # noqa: E402


class FreshVenvPerEpisode(VenvPool):
    """The baseline: every lease builds and verifies a new venv, and deletes it afterwards."""

    @contextmanager
    def lease(self, holder: str):
        dest = self.root / f"fresh-{uuid.uuid4().hex[:8]}"
        try:
            yield self.build_fresh(dest)
        finally:
            shutil.rmtree(dest, ignore_errors=True)


def timed(fn, items, threads: int) -> tuple[float, list]:
    wall = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = list(pool.map(fn, items))
    return time.perf_counter() - wall, results


def answers(kind: str, n: int):
    loader, fence, gold = {"terminal": (terminal.load_task, "bash", "solution.sh"),
                           "swe": (swe.load_task, "diff", "solution.diff")}[kind]
    dirs = sorted(p for p in (ROOT / "tasks" / kind).iterdir() if p.is_dir())
    return [(loader(d), f"```{fence}\n{(d / gold).read_text()}```", (d / gold).read_text()) for d in (dirs * n)[:n]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16, help="graded answers per measurement")
    parser.add_argument("--slots", type=int, default=2, help="venv slots (and threads when parallel)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="verirl-bench-workers-"))
    root.chmod(0o755)
    try:
        pool = VenvPool(root / "pool", args.slots)
        pool.warm_up()
        venv_pool._pool = pool
        print(f"{args.episodes} reference answers per row, {args.slots} venv slots\n")

        print("1. throughput per worker (grade(), no cache)")
        print(f"   {'task type':10} {'threads':>7} {'wall s':>8} {'grades/s':>9} {'s/grade':>8}")
        for kind in ("terminal", "swe"):
            items = answers(kind, args.episodes)
            grade(*items[0][:2], use_cache=False)  # first use: setup caches, imports
            for threads in (1, args.slots):
                wall, verdicts = timed(lambda item: grade(item[0], item[1], use_cache=False), items, threads)
                assert all(v.passed for v in verdicts), [v.feedback for v in verdicts if not v.passed]
                print(f"   {kind:10} {threads:7d} {wall:8.2f} {len(items) / wall:9.2f} {wall / len(items):8.3f}")

        print("\n2. SWE episodes: leased slot from the pool vs a fresh verified venv per episode")
        items = answers("swe", args.episodes)
        rows = {}
        for name, backend in (("fresh venv per episode", SWEBackend(FreshVenvPerEpisode(root / "fresh", args.slots,
                                                                                       harness_root=pool.root))),
                              ("slot pool (ours)", SWEBackend(pool))):
            wall, verdicts = timed(lambda item: backend.check(item[0], item[2]), items, args.slots)
            assert all(v.passed for v in verdicts), [v.feedback for v in verdicts if not v.passed]
            rows[name] = wall
            print(f"   {name:24} {wall:7.2f} s  ({wall / len(items):.3f} s/episode)")
        print(f"   ratio fresh/pool: {rows['fresh venv per episode'] / rows['slot pool (ours)']:.2f}x")

        wall = time.perf_counter()
        for _ in range(args.episodes):
            with pool.lease("bench"):
                pass
        lease_s = (time.perf_counter() - wall) / args.episodes
        wall = time.perf_counter()
        for i in range(3):
            pool.build_fresh(root / f"one-{i}")
        build_s = (time.perf_counter() - wall) / 3
        print(f"   acquiring alone: lease {lease_s * 1000:.2f} ms vs build+verify {build_s * 1000:.0f} ms "
              f"({build_s / lease_s:.0f}x)")
    finally:
        venv_pool._pool = None
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
