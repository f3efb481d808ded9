"""The local stack: API (SQLite, grading in its local pool) and sampler (hf engine) as separate
processes on free 127.0.0.1 ports — what the demo runs and the integration tests train against.

Each service runs in its own session (process group), so stopping it stops everything it started
(the API's grading processes, coqc); nothing outlives the `Stack`, and a service whose parent is
killed outright gets SIGTERM from the kernel. Logs go to `<workdir>/logs/`.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the parent dies, so that a service started by a
    process that is killed outright (no chance to clean up) does not live on."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Service:
    name: str
    process: subprocess.Popen
    url: str
    log: Path

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM to the whole process group, SIGKILL after `grace_s`."""
        if self.process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # children the leader left behind in its group
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class Stack:
    """Start with `start_api()` / `start_sampler(...)`, or use as a context manager that stops
    every service on exit (also on an exception or Ctrl-C)."""

    workdir: Path
    token: str = "demo-token"
    services: list[Service] = field(default_factory=list)

    def __enter__(self) -> Stack:
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        for service in reversed(self.services):
            service.stop()
        self.services.clear()

    def _spawn(self, name: str, args: list[str], port: int, env: dict[str, str], health: str,
               timeout_s: float) -> Service:
        log = self.workdir / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            process = subprocess.Popen([sys.executable, "-m", "services.cli", *args], stdout=out,
                                       stderr=subprocess.STDOUT, env={**os.environ, **env},
                                       start_new_session=True, preexec_fn=die_with_parent)
        service = Service(name, process, f"http://127.0.0.1:{port}", log)
        self.services.append(service)
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with status {process.returncode}:\n{service.log_tail()}")
            try:
                if httpx.get(service.url + health, timeout=2.0).status_code == 200:
                    return service
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not healthy after {timeout_s:.0f} s:\n{service.log_tail()}")
            time.sleep(0.3)

    def start_api(self, grade_workers: int = 2, timeout_s: float = 120.0) -> Service:
        port = free_port()
        env = {
            "VERIRL_DATABASE_URL": f"sqlite:///{(self.workdir / 'verirl.db').resolve()}",
            "VERIRL_API_TOKEN": self.token,
            "VERIRL_BROKER_URL": "",
            "VERIRL_GRADE_POOL_WORKERS": str(grade_workers),
            "VERIRL_DATA_DIR": str((self.workdir / "no-data").resolve()),
        }
        return self._spawn("api", ["serve", "api", "--port", str(port)], port, env, "/health", timeout_s)

    def start_sampler(self, model: Path, threads: int | None = None, timeout_s: float = 120.0) -> Service:
        port = free_port()
        args = ["serve", "sampler", "--model", str(model), "--port", str(port), "--served-model-name", "base"]
        if threads:
            args += ["--threads", str(threads)]
        return self._spawn("sampler", args, port, {}, "/health", timeout_s)
