"""Run compose's service commands outside Docker: the same command lines and the same environment
variables, with only what names a place rewritten to this machine (the database, the broker, the
other services' URLs, bind addresses and ports, container paths). Every process runs in its own
session and is stopped with its whole group."""
from __future__ import annotations

import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx

from tests.deploy.tools import ROOT

# Variables whose compose values name places inside the compose network.
ADDRESSES = ("VERIRL_DATABASE_URL", "VERIRL_BROKER_URL", "VERIRL_API_URL", "VERIRL_SAMPLER_URL")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def postgres_database() -> Iterator[str]:
    """A fresh, uniquely named database on the local PostgreSQL, dropped afterwards."""
    import psycopg

    name = f"verirl_t_{secrets.token_hex(5)}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Places:
    """Where this machine's stand-ins for the compose network are."""
    database_url: str
    broker_namespace: str
    var_dir: Path
    api_url: str = "http://127.0.0.1:9"
    sampler_url: str = "http://127.0.0.1:9"

    def environment(self, compose_env: dict[str, str]) -> dict[str, str]:
        """compose's variables with the addresses rewritten; plus the broker namespace that keeps
        this run off other users' queues, and what the images set in their own ENV."""
        env = dict(compose_env)
        local = {"VERIRL_DATABASE_URL": self.database_url, "VERIRL_BROKER_URL": "redis://127.0.0.1:6379/0",
                 "VERIRL_API_URL": self.api_url, "VERIRL_SAMPLER_URL": self.sampler_url}
        for key in ADDRESSES:
            if key in env:
                env[key] = local[key]
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("VERIRL_")}
        return {**inherited, **env, "VERIRL_BROKER_NAMESPACE": self.broker_namespace,
                "VERIRL_VAR_DIR": str(self.var_dir), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                "HOSTNAME": socket.gethostname(), "PYTHONUNBUFFERED": "1"}


def localise(command: list[str], port: int | None = None, paths: dict[str, str] | None = None) -> list[str]:
    """The same command line bound to 127.0.0.1 (and `port`), container paths mapped by `paths`."""
    out = list(command)
    for i, arg in enumerate(out[:-1]):
        if arg == "--host":
            out[i + 1] = "127.0.0.1"
        elif arg == "--port" and port is not None:
            out[i + 1] = str(port)
    return [(paths or {}).get(arg, arg) for arg in out]


def healthcheck(test: list[str], replacements: dict[str, str] | None = None) -> list[str]:
    """A compose healthcheck `test` as a local argv (compose's `$$` is a literal `$`)."""
    kind, *rest = test
    if kind == "CMD-SHELL":
        script = rest[0].replace("$$", "$")
        for old, new in (replacements or {}).items():
            script = script.replace(old, new)
        return ["sh", "-c", script]
    assert kind == "CMD", test
    return [_replace_all(arg, replacements or {}) for arg in rest]


def _replace_all(text: str, replacements: dict[str, str]) -> str:
    for old, new in replacements.items():
        text = text.replace(old, new)
    return text


@dataclass
class Running:
    name: str
    process: subprocess.Popen
    log: Path
    env: dict[str, str]

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            if self.process.poll() is not None:
                return
            try:
                os.killpg(self.process.pid, sig)
                self.process.wait(wait)
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_all(processes: list[Running]) -> None:
    """SIGTERM every group at once, so that their shutdowns overlap; then make sure of each."""
    for running in processes:
        if running.process.poll() is None:
            try:
                os.killpg(running.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for running in processes:
        running.stop()


def start(name: str, argv: list[str], env: dict[str, str], logs: Path) -> Running:
    log = logs / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    return Running(name, process, log, env)


def wait_until(check, running: Running, budget_s: float = 120.0, every_s: float = 0.5):
    """Call `check()` until it returns a true value; fail early, with the log, if the process dies.
    The budget only bounds a hang; no test asserts on how long anything took."""
    deadline = time.monotonic() + budget_s
    last = None
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            raise AssertionError(f"{running.name} exited with {running.process.returncode}:\n{running.tail()}")
        try:
            result = check()
            if result:
                return result
        except (httpx.HTTPError, OSError) as exc:
            last = exc
        time.sleep(every_s)
    raise AssertionError(f"{running.name} did not become healthy ({last}):\n{running.tail()}")


def http_ok(url: str):
    response = httpx.get(url, timeout=5)
    return response if response.status_code == 200 else None


def shell_words(command: list[str]) -> list[str]:
    """`sh -c SCRIPT` → the words of its `verirl …` part (after `||`), else the command itself."""
    if command[:2] == ["sh", "-c"]:
        script = command[2].split("||")[-1]
        return shlex.split(script)
    return command
