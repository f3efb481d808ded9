"""Helpers for the dashboard tests: the real API as a subprocess (`verirl serve api`) on a
throwaway Postgres database or SQLite file, and runs seeded through its HTTP endpoints."""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432"
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
TOKEN = f"dashboard-token-{secrets.token_hex(4)}"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    """`verirl serve api` in its own process group, and an authorised client for it."""

    def __init__(self, database_url: str, workdir: Path):
        env = {key: value for key, value in os.environ.items() if not key.startswith("VERIRL_")}
        env |= {"VERIRL_DATABASE_URL": database_url, "VERIRL_API_TOKEN": TOKEN,
                "VERIRL_DATA_DIR": str(workdir / "no-data"), "VERIRL_GRADE_POOL_WORKERS": "1"}
        port = free_port()
        self.database_url = database_url
        self.url = f"http://127.0.0.1:{port}"
        self.log = workdir / "api.log"
        self.process = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "api", "--port", str(port)],
                                        env=env, cwd=ROOT, stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the API did not come up:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)

    def post(self, path: str, body: dict) -> dict:
        response = self.client.post(path, json=body)
        assert response.status_code in (200, 201), response.text
        return response.json()

    def get(self, path: str, **params) -> dict | list:
        response = self.client.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def postgres_database():
    """Create a uniquely named database; returns (url, drop)."""
    name = f"verirl_t_{secrets.token_hex(5)}"
    admin = create_engine(f"{POSTGRES}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return f"{POSTGRES}/{name}", drop


# ---------------------------------------------------------------------------------------------
# Seeding through the API

FAMILIES = ("concrete", "map_rev", "poly_square")
PHASES = [{"tasks": "m0", "iterations": 3}, {"tasks": "m1", "iterations": 7}]


def eval_items(iteration: int, offset: int) -> list[dict]:
    """Six tasks, two per family, n=4, two turns; solved counts vary with the iteration."""
    items = []
    for f, family in enumerate(FAMILIES):
        for j in range(2):
            first = min(4, (iteration // 3 + f + j + offset) % 5)
            items.append({"task_id": f"m1/{family}/{j:04d}", "family": family, "n": 4,
                          "passed_by_turn": [first, min(4, first + (j + f + offset) % 2)]})
    return items


def episodes_for(iteration: int, items: list[dict]) -> list[dict]:
    """Held-out episodes that agree with `items`: the first ones solved at turn 1, the next at
    turn 2 (after a compile error), the rest failed twice."""
    episodes = []
    for item in items:
        at1, at2 = item["passed_by_turn"]
        for index in range(item["n"]):
            if index < at1:
                turns = [{"completion": f"```coq\nlia. (* {item['task_id']} #{index} *)\n```", "passed": True, "reason": "ok"}]
            else:
                wrong = {"completion": f"```coq\nauto. (* {item['task_id']} #{index} *)\n```", "passed": False,
                         "reason": "compile_error", "feedback": f"Error: attempt {index} left goals unsolved."}
                fixed = {"completion": "```coq\ninduction n; simpl; lia.\n```", "passed": True, "reason": "ok"}
                turns = [wrong, fixed if index < at2 else {**wrong, "feedback": "Error: still unsolved."}]
            episodes.append({"iteration": iteration, "split": "heldout", "task_id": item["task_id"], "index": index,
                             "family": item["family"], "prompt": f"Prove {item['task_id']}.",
                             "reward": float(any(t["passed"] for t in turns)), "turns": turns})
    return episodes


def iteration_metrics(iteration: int, offset: int) -> dict:
    phase = 0 if iteration < PHASES[0]["iterations"] else 1
    dead = iteration == 2
    return {"phase": phase, "phase_tasks": PHASES[phase]["tasks"], "groups": 12,
            "groups_with_signal": 0 if dead else min(12, iteration + 1 + offset), "dead": dead,
            "train_reward": 0.0 if dead else round(0.05 * iteration + 0.02 * offset, 4), "mean_turns": 1.5,
            "time_sampling_s": 30.0 + iteration, "time_grading_s": 4.0 + offset, "time_training_s": 12.5}


def seed_run(api: Api, name: str, offset: int, status: str = "running", tags=("m1",)) -> int:
    """A run with 10 iterations (phases m0 then m1), evals at 0, 3 and 6, and held-out episodes
    for every eval."""
    run = api.post("/runs", {"name": name, "config": {"phases": PHASES, "eval_k": 4, "lr": 4e-5, "seed": offset},
                             "tags": list(tags), "status": status, "phase": "1"})
    for iteration in range(10):
        api.post(f"/runs/{run['id']}/iterations", {"iteration": iteration, "metrics": iteration_metrics(iteration, offset)})
    for iteration in (0, 3, 6):
        items = eval_items(iteration, offset)
        api.post(f"/runs/{run['id']}/evals", {"iteration": iteration, "items": items})
        api.post(f"/runs/{run['id']}/episodes", {"episodes": episodes_for(iteration, items)})
    return run["id"]


def backdate(api: Api, hours: float = 1.0) -> None:
    """Move every stored run, iteration and eval `hours` into the past, as if the history were
    old: a delta poll must then send only what is written afterwards."""
    engine = create_engine(api.database_url)
    shift = {"postgresql": f"created_at - interval '{hours} hours'",
             "sqlite": f"datetime(created_at, '-{int(hours * 3600)} seconds')"}[engine.dialect.name]
    with engine.begin() as connection:
        for table in ("iteration_metrics", "heldout_evals"):
            connection.execute(text(f"UPDATE {table} SET created_at = {shift}"))
        connection.execute(text(f"UPDATE runs SET created_at = {shift}, updated_at = {shift.replace('created_at', 'updated_at')}"))
    engine.dispose()


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
