"""The dashboard under a full store: does a page stay cheap as runs pile up?

Stores 1 run, measures, then 20 runs (each 1000 iterations with a held-out eval of 30 tasks every
10 iterations: 100 evals, 3000 eval rows, 1000 iteration rows per run), measures again, and prints
the growth from 1 run to 20 for each page's data payload and its render time in Chromium (time
from navigation to the chart drawn). Side by side, the live poll: ours (a delta after one new
eval, and a 304 when nothing changed) against the baseline of re-fetching the whole history.

Rows go in with bulk SQL (the API's own insert helper) into a throwaway Postgres database
(dropped at the end), or a SQLite file with --sqlite; the API runs as a real uvicorn subprocess.
    python bench/dashboard.py [--runs 20] [--evals 100] [--tasks 30] [--loads 3] [--sqlite]
"""
from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.api import db  # noqa: E402
from services.api.models import HeldoutEval, IterationMetric, Run  # noqa: E402

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432"
TOKEN = f"bench-{secrets.token_hex(4)}"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FAMILIES = ["bridge", "poly_square", "map_rev", "fold_rev", "compose_affine", "revacc"]
EVAL_EVERY = 10


# ---------------------------------------------------------------------------------------------
# The store

def store_runs(engine, first: int, count: int, evals: int, tasks: int) -> None:
    """Runs `first`…`first+count-1`, an hour old, with their iterations and evals."""
    old = datetime.now(UTC) - timedelta(hours=1)
    iterations = evals * EVAL_EVERY
    with db.transaction(engine) as session:
        for r in range(first, first + count):
            run_id = session.execute(Run.__table__.insert().returning(Run.id), {
                "name": f"bench-run-{r:02d}", "status": "finished", "phase": "1", "tags": ["bench", f"seed{r}"],
                "config": {"phases": [{"tasks": "m0", "iterations": iterations // 4},
                                      {"tasks": "m1", "iterations": iterations - iterations // 4}], "seed": r},
                "version": 1, "created_at": old, "updated_at": old}).scalar_one()
            db.insert_ignoring_conflicts(session, IterationMetric.__table__, [{
                "run_id": run_id, "iteration": i, "created_at": old,
                "metrics": {"phase": int(i >= iterations // 4), "phase_tasks": "m0" if i < iterations // 4 else "m1",
                            "train_reward": (i * 7 + r) % 100 / 100, "groups": 12, "groups_with_signal": (i + r) % 13,
                            "dead": (i + r) % 13 == 0, "turn1_pass_rate": (i * 3 + r) % 100 / 100, "mean_turns": 1.6,
                            "entropy": 0.9, "loss": 0.01, "sampled_tokens": 150000, "trained_tokens": 140000,
                            "time_sampling_s": 40.0 + i % 7, "time_grading_s": 6.0 + i % 3, "time_training_s": 15.0,
                            "time_sync_s": 1.2, "time_total_s": 62.0}} for i in range(iterations)])
            rows = []
            for e in range(evals):
                for t in range(tasks):
                    first_turn = (e + t + r) % 5
                    rows.append({"run_id": run_id, "iteration": e * EVAL_EVERY, "task_id": f"m1/{FAMILIES[t % 6]}/{t:04d}",
                                 "family": FAMILIES[t % 6], "n": 4, "created_at": old,
                                 "passed_by_turn": [min(4, first_turn), min(4, first_turn + (t % 2))]})
            db.insert_ignoring_conflicts(session, HeldoutEval.__table__, rows)


# ---------------------------------------------------------------------------------------------
# The API

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_api(database_url: str, workdir: Path) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERIRL_")}
    env |= {"VERIRL_DATABASE_URL": database_url, "VERIRL_API_TOKEN": TOKEN, "VERIRL_DATA_DIR": str(workdir / "none"),
            "VERIRL_GRADE_POOL_WORKERS": "1"}
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "api", "--port", str(port)], env=env, cwd=ROOT,
                               stdout=(workdir / "api.log").open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError((workdir / "api.log").read_text()[-3000:])


def fetch(client: httpx.Client, path: str, repeat: int = 1, **params) -> tuple[int, float, httpx.Response]:
    """Bytes on the wire (the body as sent, gzipped when large; 0 for a 304) and the median
    seconds of `repeat` requests."""
    headers = params.pop("headers", None) or {}
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(path, params=params, headers=headers)
        seconds.append(time.perf_counter() - start)
    return response.num_bytes_downloaded, statistics.median(seconds), response


# ---------------------------------------------------------------------------------------------
# Measurements

def payloads(client: httpx.Client, run_ids: list[int]) -> dict[str, tuple[int, float]]:
    """Bytes and server time (median of 3) of each page's data; the run page is the first run's."""
    runs_list = fetch(client, "/api/dashboard/runs", repeat=3)
    run_page = fetch(client, f"/api/dashboard/runs/{run_ids[0]}/summary", repeat=3)
    compare = [fetch(client, f"/api/dashboard/runs/{i}/summary", repeat=3, k=[1, 4], compact="true") for i in run_ids]
    json_kb = len(run_page[2].content) / 1024
    print(f"  run page JSON {json_kb:.1f} kB, {run_page[0] / 1024:.1f} kB on the wire (gzip)", flush=True)
    return {"runs list": runs_list[:2], "run page": run_page[:2],
            "compare (all runs)": (sum(c[0] for c in compare), sum(c[1] for c in compare))}


def render_times(browser, url: str, run_ids: list[int], loads: int) -> dict[str, float]:
    """Median seconds from navigation start to the page's chart or table in the DOM."""
    pages = {"runs list": ("/#/", "table.runs tbody tr"),
             "run page": (f"/#/run/{run_ids[0]}", "#trajectory circle"),
             "compare (all runs)": (f"/#/compare?runs={','.join(map(str, run_ids))}", "#compare-chart path")}
    times = {}
    for name, (path, selector) in pages.items():
        samples = []
        for _ in range(loads):
            context = browser.new_context(viewport={"width": 1366, "height": 900})
            page = context.new_page()
            page.goto(url + path)
            page.wait_for_selector(selector, state="attached", timeout=120_000)
            samples.append(page.evaluate("performance.now()") / 1000)
            context.close()
        times[name] = statistics.median(samples)
    return times


def live_poll(client: httpx.Client, run_id: int) -> dict[str, int]:
    """Bytes per poll: the baseline re-fetches the whole history; ours asks for the delta."""
    full = client.get(f"/api/dashboard/runs/{run_id}/summary").json()
    cursors = {"since_version": full["version"], "changed_after": full["cursor"]}
    idle = fetch(client, f"/api/dashboard/runs/{run_id}/summary", **cursors)
    unchanged = fetch(client, f"/api/dashboard/runs/{run_id}/summary", **cursors,
                      headers={"If-None-Match": idle[2].headers["ETag"]})
    iteration = max(p["iteration"] for p in full["evals"]) + EVAL_EVERY
    client.post(f"/runs/{run_id}/evals", json={"iteration": iteration, "items": [
        {"task_id": f"m1/{FAMILIES[t % 6]}/{t:04d}", "family": FAMILIES[t % 6], "n": 4, "passed_by_turn": [1, 2]}
        for t in range(30)]}).raise_for_status()
    delta = fetch(client, f"/api/dashboard/runs/{run_id}/summary", **cursors)
    whole = fetch(client, f"/api/dashboard/runs/{run_id}/summary")
    assert [p["iteration"] for p in delta[2].json()["evals"]] == [iteration]
    return {"baseline: whole history": whole[0], "ours: delta after a new eval": delta[0],
            "ours: nothing new (304)": unchanged[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs stored for the large measurement")
    parser.add_argument("--evals", type=int, default=100, help="held-out evals per run")
    parser.add_argument("--tasks", type=int, default=30, help="tasks per eval")
    parser.add_argument("--loads", type=int, default=3, help="page loads per render measurement (median)")
    parser.add_argument("--sqlite", action="store_true", help="a SQLite file instead of a throwaway Postgres database")
    args = parser.parse_args()
    if args.runs < 2 or args.evals < 1 or args.tasks < 1 or args.loads < 1:
        print("error: --runs must be at least 2 and --evals, --tasks, --loads at least 1", file=sys.stderr)
        return 2

    from playwright.sync_api import sync_playwright

    workdir = Path(tempfile.mkdtemp(prefix="verirl-bench-dashboard-"))
    name = f"verirl_bench_dash_{secrets.token_hex(4)}"
    admin = None
    if args.sqlite:
        url = f"sqlite:///{workdir}/verirl.db"
    else:
        admin = create_engine(f"{POSTGRES}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        url = f"{POSTGRES}/{name}"
    engine = db.get_engine(url)
    db.upgrade(engine)
    process = None
    try:
        process, api = start_api(url, workdir)
        results = {}
        with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120) as client, \
                sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for count, first in ((1, 0), (args.runs, 1)):
                start = time.perf_counter()
                store_runs(engine, first, count - first, args.evals, args.tasks)
                print(f"stored {count} run(s) × {args.evals} evals × {args.tasks} tasks "
                      f"({time.perf_counter() - start:.1f} s to insert)", flush=True)
                run_ids = [r["id"] for r in sorted(client.get("/api/dashboard/runs").json()["items"], key=lambda r: r["id"])]
                results[count] = (payloads(client, run_ids), render_times(browser, api, run_ids, args.loads))
            poll = live_poll(client, run_ids[0])
            browser.close()
    finally:
        if process is not None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        engine.dispose()
        if admin is not None:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()
        shutil.rmtree(workdir, ignore_errors=True)

    (small, small_render), (large, large_render) = results[1], results[args.runs]
    print(f"\npage data (bytes on the wire) and render time, 1 run -> {args.runs} runs "
          f"({args.evals} evals × {args.tasks} tasks each)")
    print(f"{'page':<20} {'payload 1':>11} {f'payload {args.runs}':>11} {'ratio':>7}   {'server 1':>9} {f'server {args.runs}':>9}"
          f"   {'render 1':>9} {f'render {args.runs}':>9} {'ratio':>7}")
    for page in small:
        (b1, s1), (b20, s20) = small[page], large[page]
        r1, r20 = small_render[page], large_render[page]
        print(f"{page:<20} {b1 / 1024:>9.1f}kB {b20 / 1024:>9.1f}kB {b20 / b1:>6.2f}x   {s1 * 1000:>7.0f}ms {s20 * 1000:>7.0f}ms"
              f"   {r1 * 1000:>7.0f}ms {r20 * 1000:>7.0f}ms {r20 / r1:>6.2f}x")
    print(f"\nlive poll of one run with {args.evals} evals stored, bytes per poll")
    whole = poll["baseline: whole history"]
    for label, size in poll.items():
        print(f"  {label:<32} {size:>9,d} B" + (f"   baseline/ours = {whole / size:,.0f}x" if size and label != "baseline: whole history" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
