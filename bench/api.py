"""Benchmarks of the API service, each run side by side with its baseline in one go:

1. episode ingest: the endpoint's one INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING per
   table vs row-by-row ORM inserts (one flush per row, as a naive endpoint does to learn each
   episode's id);
2. grading: POST /grade/batch through the API and two Celery workers vs calling `grade()` in one
   process, on the same distinct Rocq answers (real coqc);
3. held-out trajectory query time with 10k vs 1M turns stored (bulk SQL in a throwaway database).

Needs Postgres and Redis (defaults: the local ones). Every database it creates is dropped.
    python bench/api.py [--episodes 2000] [--grades 24] [--large-turns 1000000] [--only NAME]
"""
from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.api import db  # noqa: E402
from services.api.models import Episode, Run, Turn  # noqa: E402
from services.api.routes.episodes import write_episodes  # noqa: E402
from services.api.schemas import EpisodeIn  # noqa: E402
from shared.schemas import Task  # noqa: E402

ONE_PLUS_ONE = "Theorem t : 1 + 1 = 2.\nProof.\n{{PROOF}}\nQed.\n"


@contextmanager
def throwaway_database(postgres: str):
    name = f"verirl_bench_{secrets.token_hex(4)}"
    admin = create_engine(f"{postgres}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = f"{postgres}/{name}"
    try:
        db.upgrade(db.get_engine(url))
        yield url
    finally:
        db.get_engine(url).dispose()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# --- 1. episode ingest -------------------------------------------------------------------------

def make_episodes(n: int, tag: str) -> list[EpisodeIn]:
    return [EpisodeIn.model_validate({
        "iteration": i // 64, "task_id": f"m1/sq/{tag}{i // 8:05d}", "index": i % 8, "family": "sq",
        "reward": float(i % 3 == 0), "policy_version": i // 64,
        "turns": [{"completion": "```coq\nintros n. lia.\n```", "sampled_tokens": 24, "passed": False,
                   "reason": "compile_error", "feedback": "Error: Unable to unify"},
                  {"completion": "```coq\ninduction n; simpl; lia.\n```", "sampled_tokens": 31, "passed": i % 3 == 0,
                   "reason": "ok" if i % 3 == 0 else "compile_error", "feedback": ""}]}) for i in range(n)]


def insert_row_by_row(session, run_id: int, episodes: list[EpisodeIn]) -> None:
    for e in episodes:
        row = Episode(run_id=run_id, iteration=e.iteration, split=e.split, task_id=e.task_id, index=e.index,
                      family=e.family, reward=e.reward, passed=any(t.passed for t in e.turns),
                      n_turns=len(e.turns), policy_version=e.policy_version)
        session.add(row)
        session.flush()  # the episode's id, for its turns
        for i, t in enumerate(e.turns):
            session.add(Turn(episode_id=row.id, index=i, completion=t.completion, sampled_tokens=t.sampled_tokens,
                             passed=t.passed, reason=t.reason.value if t.reason else "", feedback=t.feedback))
            session.flush()


def bench_ingest(postgres: str, n: int) -> None:
    with throwaway_database(postgres) as url:
        engine = db.get_engine(url)
        with db.transaction(engine) as session:
            runs = [Run(name="baseline"), Run(name="bulk")]
            session.add_all(runs)
            session.flush()
            baseline_id, bulk_id = runs[0].id, runs[1].id
        baseline_eps, bulk_eps = make_episodes(n, "a"), make_episodes(n, "b")
        start = time.perf_counter()
        with db.transaction(engine) as session:
            insert_row_by_row(session, baseline_id, baseline_eps)
        baseline = time.perf_counter() - start
        start = time.perf_counter()
        with db.transaction(engine) as session:
            inserted = write_episodes(session, bulk_id, bulk_eps)
        ours = time.perf_counter() - start
        assert inserted == n
        start = time.perf_counter()
        with db.transaction(engine) as session:
            assert write_episodes(session, bulk_id, bulk_eps) == 0
        retry = time.perf_counter() - start
    print(f"[ingest] {n} episodes x 2 turns on Postgres")
    print(f"  row-by-row ORM inserts   {baseline:8.3f} s   {n / baseline:9.0f} episodes/s")
    print(f"  bulk INSERT (ours)       {ours:8.3f} s   {n / ours:9.0f} episodes/s")
    print(f"  same batch again (no-op) {retry:8.3f} s")
    print(f"  speed-up: {baseline / ours:.1f}x")


# --- 2. grading through the queue --------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workloads(n: int, dataset: Path) -> dict[str, list[tuple[Task, str]]]:
    """Distinct (task, answer) pairs: trivial proofs (overhead dominates) and, when the dataset
    exists, gold proofs of real tasks (induction, lia: the checker dominates)."""
    tag = secrets.token_hex(3)
    tiny = Task(id="bench/one_plus_one/0001", lang="rocq", theorem="t", statement=ONE_PLUS_ONE)
    found = {"trivial proofs (1 + 1 = 2)": [(tiny, f"```coq\n(* {tag} {i} *) reflexivity.\n```") for i in range(n)]}
    if dataset.is_file():
        tasks = [Task.model_validate_json(line) for line in dataset.read_text().splitlines()[:n] if line.strip()]
        found[f"gold proofs of {dataset}"] = [(t, f"```coq\n(* {tag} *)\n{t.gold}\n```") for t in tasks]
    else:
        print(f"  ({dataset} not found: only the trivial workload)")
    return found


def bench_grading(postgres: str, redis_url: str, n: int, dataset: Path) -> None:
    import redis

    from services.grader.pipeline import grade, shutdown
    from shared.clients import APIClient, grade_item

    print(f"[grading] distinct Rocq answers (real coqc), {os.cpu_count()} CPU cores")
    jobs = workloads(n, dataset)
    def in_process() -> dict[str, float]:
        seconds = {}
        for name, pairs in jobs.items():
            grade(*pairs[0], use_cache=False)  # warm the checker, as a running worker is
            start = time.perf_counter()
            verdicts = [grade(task, answer, use_cache=False) for task, answer in pairs]
            seconds[name] = time.perf_counter() - start
            assert all(v.passed for v in verdicts), [v.feedback for v in verdicts if not v.passed][:1]
        shutdown()
        return seconds

    # In-process runs before and after the queued ones, averaged: the machine's load drifts.
    before = in_process()
    with throwaway_database(postgres) as url, tempfile.TemporaryDirectory() as logs:
        namespace = f"verirl_bench_{secrets.token_hex(4)}:"
        token = secrets.token_hex(8)
        env = {k: v for k, v in os.environ.items() if not k.startswith("VERIRL_")} | {
            "VERIRL_DATABASE_URL": url, "VERIRL_BROKER_URL": redis_url, "VERIRL_BROKER_NAMESPACE": namespace,
            "VERIRL_API_TOKEN": token, "VERIRL_DATA_DIR": str(Path(logs) / "none")}
        port = free_port()
        commands = [["worker", "--queues", "rocq", "--name", f"bench{i}@%h"] for i in (1, 2)]
        commands.append(["serve", "api", "--port", str(port)])
        processes = [subprocess.Popen([sys.executable, "-m", "services.cli", *argv], env=env, cwd=ROOT,
                                      stdout=open(Path(logs) / f"{i}.log", "wb"), stderr=subprocess.STDOUT,
                                      start_new_session=True) for i, argv in enumerate(commands)]
        try:
            deadline = time.monotonic() + 120
            while not all(" ready." in (Path(logs) / f"{i}.log").read_text(errors="replace") for i in (0, 1)):
                assert time.monotonic() < deadline, "workers did not start"
                time.sleep(0.2)
            with APIClient(f"http://127.0.0.1:{port}", token) as client:
                while True:
                    try:
                        client.http.get("/health").raise_for_status()
                        break
                    except httpx.HTTPError:
                        assert time.monotonic() < deadline, "API did not start"
                        time.sleep(0.2)
                queued = {}
                for name, pairs in jobs.items():
                    warm = [grade_item(task, answer.replace("```coq\n", f"```coq\n(* warm {i} *) "))
                            for i, (task, answer) in enumerate(pairs[:4])]
                    client.grade_batch(warm, wait_s=30)  # both workers' checkers up
                    start = time.perf_counter()
                    verdicts = client.grade_batch([grade_item(task, answer) for task, answer in pairs], wait_s=30)
                    queued[name] = time.perf_counter() - start
                    assert all(v.passed for v in verdicts)
        finally:
            for process in processes:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            broker = redis.Redis.from_url(redis_url)
            if keys := list(broker.scan_iter(f"{namespace}*")):
                broker.delete(*keys)
    after = in_process()
    for name, pairs in jobs.items():
        direct = (before[name] + after[name]) / 2
        print(f"  {len(pairs)} {name}")
        print(f"    grade() in one process    {direct:7.2f} s  {direct / len(pairs) * 1000:7.1f} ms/answer "
              f"(runs before/after: {before[name]:.2f} s / {after[name]:.2f} s)")
        print(f"    /grade/batch, 2 workers   {queued[name]:7.2f} s  {queued[name] / len(pairs) * 1000:7.1f} ms/answer")
        print(f"    speed-up {direct / queued[name]:.2f}x; queue overhead per answer at 2-way parallelism: "
              f"{(2 * queued[name] - direct) / len(pairs) * 1000:+.0f} ms")


# --- 3. trajectory query vs stored turns -------------------------------------------------------

FILL = """
INSERT INTO runs (name, config, status, phase, tags, version, created_at, updated_at)
SELECT 'run-' || r, '{}', 'finished', '', '[]', 1, now(), now() FROM generate_series(1, :runs) r;
INSERT INTO heldout_evals (run_id, iteration, task_id, family, n, passed_by_turn, created_at)
SELECT r.id, it, 'm1/f' || (t % 6) || '/' || t, 'f' || (t % 6), 8,
       json_build_array(t % 5, least(8, t % 5 + 2), least(8, t % 5 + 3)), now()
FROM runs r, generate_series(0, :iterations - 1) it, generate_series(0, :tasks - 1) t;
INSERT INTO episodes (run_id, iteration, split, task_id, index, family, reward, passed, n_turns, policy_version, created_at)
SELECT 1 + (e % :runs), (e / :runs) % 1000, 'train', 'm1/f/' || (e / (:runs * 1000)), 0, 'f', 1, true, 2, 0, now()
FROM generate_series(0, :episodes - 1) e;
INSERT INTO turns (episode_id, index, completion, sampled_tokens, passed, reason, feedback)
SELECT e.id, i, 'intros n. induction n; simpl; lia.', 30, i = 1, 'ok', '' FROM episodes e, generate_series(0, 1) i;
ANALYZE;
"""


def bench_trajectory(postgres: str, sizes: list[int], budget_s: float, rounds: int = 30) -> None:
    from contextlib import ExitStack

    from fastapi.testclient import TestClient

    from services.api.app import create_app
    from shared.settings import Settings

    print(f"[trajectory] GET /runs/1/trajectory (50 iterations x 30 held-out tasks), median of {rounds}, "
          "databases queried in turn so that load drift hits all sizes alike")
    with ExitStack() as stack:
        clients, fills = {}, {}
        for turns in sizes:
            url = stack.enter_context(throwaway_database(postgres))
            runs = max(2, turns // 10_000)
            start = time.perf_counter()
            with db.get_engine(url).begin() as connection:
                for statement in FILL.strip().split(";\n"):
                    connection.execute(text(statement), {"runs": runs, "iterations": 50, "tasks": 30,
                                                         "episodes": turns // 2})
            fills[turns] = time.perf_counter() - start
            settings = Settings(database_url=url, db_upgrade_on_start=False, data_dir=Path("/nonexistent"))
            clients[turns] = stack.enter_context(TestClient(create_app(settings)))
            following = [size for size in sizes if size > turns]
            if following and fills[turns] * following[0] / turns > budget_s:
                print(f"  filling {following[0]:,} turns would take about {fills[turns] * following[0] / turns:.0f} s "
                      f"(over {budget_s:.0f} s) on this machine; stopping at {turns:,}")
                break
        times: dict[int, list[float]] = {turns: [] for turns in clients}
        for _ in range(rounds + 1):
            for turns, client in clients.items():
                start = time.perf_counter()
                response = client.get("/runs/1/trajectory")
                times[turns].append(time.perf_counter() - start)
                assert len(response.json()["iterations"]) == 50
        results = {turns: statistics.median(t[1:]) for turns, t in times.items()}  # the first is a warm-up
    for turns, median in results.items():
        print(f"  {turns:>9,} turns, {max(2, turns // 10_000):>4} runs (filled in {fills[turns]:5.1f} s): "
              f"{median * 1000:7.2f} ms")
    smallest, largest = min(results), max(results)
    if largest != smallest:
        print(f"  growth from {smallest:,} to {largest:,} turns: {results[largest] / results[smallest]:.2f}x "
              f"for {largest / smallest:.0f}x the data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default="postgresql+psycopg://postgres@127.0.0.1:5432",
                        help="server URL without a database; throwaway databases are created there")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="broker for the grading benchmark")
    parser.add_argument("--episodes", type=int, default=2000, help="episodes to ingest")
    parser.add_argument("--grades", type=int, default=24, help="answers to grade")
    parser.add_argument("--dataset", type=Path, default=ROOT / "data/m1/rocq/tasks.jsonl",
                        help="tasks whose gold proofs form the realistic grading workload")
    parser.add_argument("--small-turns", type=int, default=10_000)
    parser.add_argument("--large-turns", type=int, default=1_000_000)
    parser.add_argument("--fill-budget-s", type=float, default=120.0,
                        help="skip a trajectory size whose fill would take longer than this")
    parser.add_argument("--only", choices=["ingest", "grading", "trajectory"], help="run one benchmark")
    args = parser.parse_args()
    if args.only in (None, "ingest"):
        bench_ingest(args.postgres, args.episodes)
    if args.only in (None, "grading"):
        bench_grading(args.postgres, args.redis, args.grades, args.dataset)
    if args.only in (None, "trajectory"):
        sizes = [args.small_turns]
        while sizes[-1] * 10 < args.large_turns:
            sizes.append(sizes[-1] * 10)
        bench_trajectory(args.postgres, sizes + [args.large_turns], args.fill_budget_s)


if __name__ == "__main__":
    main()
