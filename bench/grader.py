"""Grader benchmarks, each against its obvious baseline on the same answers in the same run:

1. sandboxed fresh pipeline vs bare `coqc` on the same spliced file (overhead ratio; aim <= 1.15x)
2. warm coqtop sessions vs fresh coqc processes (throughput ratio; aim >= 2x)
3. verdict cache on a batch with duplicates vs the same batch uncached (speed-up)

Usage: python bench/grader.py [--n 40] [--workers 2]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.grader import pipeline  # noqa: E402
from services.grader.backends.rocq import RocqBackend  # noqa: E402
from services.grader.backends.rocq_syntax import split_statement  # noqa: E402
from services.grader.pool import LocalPool  # noqa: E402
from shared.protocol import fence_block  # noqa: E402
from shared.schemas import Task  # noqa: E402


def make_jobs(n: int) -> list[tuple[Task, str]]:
    """Typical curriculum answers: a custom recursive function, Arith + Lia, right and wrong."""
    jobs = []
    for i in range(n):
        c = i % 7 + 1
        statement = (
            "Require Import Arith Lia.\n\n"
            f"Fixpoint stepq{i} (n : nat) : nat := match n with 0 => {c} | S k => stepq{i} k + {2 * c} end.\n\n"
            f"Theorem stepq{i}_closed : forall n, stepq{i} n = {2 * c} * n + {c}.\nProof.\n{{{{PROOF}}}}\nQed.\n"
        )
        task = Task(id=f"bench/affine/{i:04d}", lang="rocq", theorem=f"stepq{i}_closed", statement=statement)
        block = ("induction n as [|k IH]; simpl.\n- reflexivity.\n- rewrite IH. lia." if i % 3
                 else "induction n; simpl; auto.")
        jobs.append((task, fence_block(block, "coq")))
    return jobs


def bare_coqc(jobs) -> float:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for task, answer in jobs:
            block = answer.split("\n", 1)[1].rsplit("```", 1)[0]
            source = split_statement(task.statement).with_block(block) + f"\nPrint Assumptions {task.theorem}.\n"
            path = Path(tmp) / "answer.v"
            path.write_text(source)
            subprocess.run(["coqc", "-q", str(path)], capture_output=True, cwd=tmp)
    return time.perf_counter() - start


def backend_run(jobs, warm: bool, workers: int) -> tuple[float, list]:
    backend = RocqBackend(warm=warm)
    pipeline._backends["rocq"] = backend  # the pipeline uses this backend for the run
    start = time.perf_counter()
    with LocalPool(workers) as pool:
        verdicts = pool.grade_many([(t, a) for t, a in jobs]) if workers > 1 else \
            [pipeline.grade(t, a, use_cache=False) for t, a in jobs]
    elapsed = time.perf_counter() - start
    pipeline.shutdown()
    return elapsed, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="answers per measurement")
    ap.add_argument("--workers", type=int, default=2, help="concurrent graders for the throughput test")
    args = ap.parse_args()
    jobs = make_jobs(args.n)

    # 1. sandbox + pipeline overhead, one at a time, fresh processes on both sides
    bare = bare_coqc(jobs)
    ours, _ = backend_run(jobs, warm=False, workers=1)
    print(f"[overhead]   bare coqc {bare:.2f}s  sandboxed pipeline {ours:.2f}s  "
          f"ratio {ours / bare:.3f}x  (aim <= 1.15x)")

    # 2. warm sessions vs fresh processes, same concurrency
    pipeline.get_cache().clear()
    fresh_s, fresh_v = backend_run(jobs, warm=False, workers=args.workers)
    pipeline.get_cache().clear()
    warm_s, warm_v = backend_run(jobs, warm=True, workers=args.workers)
    same = [(v.passed, v.reason, v.feedback) for v in fresh_v] == [(v.passed, v.reason, v.feedback) for v in warm_v]
    print(f"[warm]       fresh {len(jobs) / fresh_s:.2f} answers/s  warm {len(jobs) / warm_s:.2f} answers/s  "
          f"speed-up {fresh_s / warm_s:.2f}x  (aim >= 2x; identical verdicts: {same})")

    # 3. cache on a batch where every answer appears twice
    batch = jobs[: args.n // 2] * 2
    pipeline.get_cache().clear()
    start = time.perf_counter()
    for t, a in batch:
        pipeline.grade(t, a, use_cache=False)
    uncached = time.perf_counter() - start
    pipeline.get_cache().clear()
    start = time.perf_counter()
    for t, a in batch:
        pipeline.grade(t, a)
    cached = time.perf_counter() - start
    pipeline.shutdown()
    print(f"[cache]      batch of {len(batch)} with 50% duplicates: uncached {uncached:.2f}s  cached {cached:.2f}s  "
          f"speed-up {uncached / cached:.2f}x")


if __name__ == "__main__":
    main()
