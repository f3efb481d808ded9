"""Fixtures for the API tests: a throwaway Postgres database per module, a Redis namespace per
session, and helpers that run the API and Celery workers as real subprocesses."""
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
import pytest
from sqlalchemy import create_engine, text

from services.api import db
from shared.schemas import Task

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379/0"
ROOT = Path(__file__).resolve().parents[2]

TOKEN = f"test-token-{secrets.token_hex(4)}"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ONE_PLUS_ONE = "Theorem t : 1 + 1 = 2.\nProof.\n{{PROOF}}\nQed.\n"


def rocq_task(task_id: str = "test/one_plus_one/0001", family: str = "one_plus_one") -> Task:
    return Task(id=task_id, rung="test", family=family, lang="rocq", theorem="t", statement=ONE_PLUS_ONE)


def fenced(block: str) -> str:
    return f"```coq\n{block}\n```"


@pytest.fixture(scope="module")
def database_url():
    """A fresh database for this module, dropped afterwards."""
    name = f"verirl_t_{secrets.token_hex(5)}"
    admin = create_engine(f"{POSTGRES}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = f"{POSTGRES}/{name}"
    db.upgrade(db.get_engine(url))
    yield url
    db.get_engine(url).dispose()
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="module")
def engine(database_url):
    return db.get_engine(database_url)


def count(engine, table: str, where: str = "true") -> int:
    with engine.connect() as connection:
        return connection.execute(text(f"SELECT count(*) FROM {table} WHERE {where}")).scalar_one()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """A subprocess in its own process group, with its output in a log file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path):
        self.name = name
        self.log = log_dir / f"{name}.log"
        self.process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=self.log.open("ab"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for_output(self, needle: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while needle not in self.output():
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.output()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} did not print {needle!r}:\n{self.output()[-3000:]}")
            time.sleep(0.1)

    def kill9(self) -> None:
        """SIGKILL the whole process group (a worker's main process and its children)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


class Stack:
    """The API and grading workers for one test module, on the module's database and its own
    Redis namespace."""

    def __init__(self, database_url: str, log_dir: Path, *, broker: bool = True, **settings: str):
        self.namespace = f"verirl_t_{secrets.token_hex(4)}:"
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("VERIRL_")}
        self.env |= {"VERIRL_DATABASE_URL": database_url, "VERIRL_BROKER_NAMESPACE": self.namespace, "VERIRL_API_TOKEN": TOKEN,
                    "VERIRL_DATA_DIR": str(log_dir / "no-data"),
                     **{f"VERIRL_{key.upper()}": value for key, value in settings.items()}}
        if broker:
            self.env["VERIRL_BROKER_URL"] = REDIS
        self.log_dir = log_dir
        self.services: list[Service] = []
        self.api: Service | None = None
        self.url = ""

    def start_worker(self, name: str, queues: str = "rocq") -> Service:
        """Start a worker (concurrency 1, node name `<name>@test`); `wait_ready` waits for it."""
        worker = Service(name, [sys.executable, "-m", "services.cli", "worker", "--queues", queues,
                                "--concurrency", "1", "--name", f"{name}@test"], self.env, self.log_dir)
        self.services.append(worker)
        return worker

    def start_api(self) -> Service:
        self.url = f"http://127.0.0.1:{free_port()}"
        self.api = Service("api", [sys.executable, "-m", "services.cli", "serve", "api", "--port", self.url.rsplit(":", 1)[1]],
                           self.env, self.log_dir)
        self.services.append(self.api)
        return self.api

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Until every worker has said it is ready and the API answers /health with 200."""
        for service in self.services:
            if service is not self.api and service.process.poll() is None:
                service.wait_for_output(" ready.", timeout_s)
        deadline = time.monotonic() + timeout_s
        while self.api is not None:
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.api.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"API did not come up:\n{self.api.output()[-3000:]}")
            time.sleep(0.2)

    def close(self) -> None:
        for service in self.services:
            service.kill9()  # nothing to save: the database and Redis keys go next
        import redis

        client = redis.Redis.from_url(REDIS)
        keys = list(client.scan_iter(f"{self.namespace}*"))
        if keys:
            client.delete(*keys)
