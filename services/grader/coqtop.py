"""Warm `coqtop` sessions: the task's imports are loaded once, then each answer is sent sentence
by sentence and the session is reset to a marker afterwards.

Framing. Every command we send is followed by `Locate verirl_sync_<nonce>.`, whose reply
(`No object of basename verirl_sync_<nonce>`) ends the command's output on stdout. The nonce is
fresh per command, so text the answer prints (`idtac "…"`) can never imitate the end of a
command. Errors are read from stderr, which the answer cannot write to, and stderr is drained on
every read so a chatty checker never blocks on a full pipe. Reads are raw `os.read` calls under
`select` with a deadline; any surprise (timeout, EOF, overflow) marks the session broken, and a
broken session is killed, never reused.
"""
from __future__ import annotations

import logging
import os
import re
import secrets
import select
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from services.grader.sandbox import Limits, Sandbox, kill_group

log = logging.getLogger(__name__)

MARKER = "verirl_marker"
_TOPLEVEL_LOCATION = re.compile(r"Toplevel input, characters (\d+)-\d+:")


class SessionBroken(Exception):
    """The session can no longer be trusted; `kind` is 'timeout', 'resource' or 'crash'."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


class CoqtopSession:
    """One coqtop process with `prelude` loaded. Not thread-safe: lease it to one caller at a
    time (see SessionPool). Discard after SessionBroken."""

    def __init__(self, prelude: str, sandbox: Sandbox, limits: Limits, coqtop: str = "coqtop",
                 max_uses: int = 50):
        self.prelude, self.limits, self.max_uses = prelude, limits, max_uses
        self.uses = 0
        self.broken = False
        self._dir = Path(tempfile.mkdtemp(prefix="verirl-coqtop-"))
        # CPU time accumulates over the session's answers; each answer has its own deadline.
        session_limits = limits.scaled(cpu_s=int(limits.cpu_s * (max_uses + 1)))
        self._proc = sandbox.spawn([coqtop, "-quiet"], self._dir, session_limits)
        self._out_fd = self._proc.stdout.fileno()
        self._err_fd = self._proc.stderr.fileno()
        self.command(f"{prelude}\nDefinition {MARKER} := tt.", time.monotonic() + limits.wall_s)

    # -- protocol -----------------------------------------------------------------------------

    def command(self, text: str, deadline: float) -> tuple[str, str]:
        """Send `text` (one or more sentences); return (stdout, stderr) produced by it."""
        if self.broken:
            raise SessionBroken("crash", "session already broken")
        token = f"verirl_sync_{secrets.token_hex(12)}"
        done = f"No object of basename {token}".encode()
        try:
            self._proc.stdin.write(f"{text}\nLocate {token}.\n".encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self._break("crash", f"checker stopped reading: {exc}")
        out, err = bytearray(), bytearray()
        while done not in out:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._break("timeout", "no reply before the deadline")
            ready, _, _ = select.select([self._out_fd, self._err_fd], [], [], remaining)
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self._break("crash", f"checker exited ({err.decode(errors='replace')[-200:]})")
                (out if fd == self._out_fd else err).extend(chunk)
            if len(out) + len(err) > self.limits.output_bytes:
                self._break("resource", "output limit exceeded")
        # Everything coqtop wrote to stderr for this command was flushed before it read our sync
        # line, so whatever is in the pipe now belongs to this command.
        while select.select([self._err_fd], [], [], 0)[0]:
            chunk = os.read(self._err_fd, 65536)
            if not chunk:
                break
            err.extend(chunk)
        text_out = out[: out.index(done)].decode(errors="replace")
        return text_out, err.decode(errors="replace")

    def reset(self, deadline: float) -> None:
        """Back to the state right after the prelude: no open proof, no task definitions."""
        _, err = self.command(f"Abort All.\nReset {MARKER}.", deadline)
        if "Error:" in err:
            self._break("crash", f"reset failed: {err.strip()[:200]}")
        self.uses += 1

    @property
    def reusable(self) -> bool:
        return not self.broken and self.uses < self.max_uses and self._proc.poll() is None

    def _break(self, kind: str, detail: str):
        self.close()
        raise SessionBroken(kind, detail)

    def close(self) -> None:
        self.broken = True
        kill_group(self._proc)
        try:
            self._proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - a zombie is not worth failing a verdict over
            log.warning("coqtop %s did not exit after SIGKILL", self._proc.pid)
        for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass
        shutil.rmtree(self._dir, ignore_errors=True)


def error_offset(stderr: str) -> int | None:
    """Character offset of a coqtop error within the sentence that caused it."""
    match = _TOPLEVEL_LOCATION.search(stderr)
    return int(match.group(1)) if match else None


class SessionPool:
    """Idle sessions per prelude. `lease` hands one to a single caller and takes it back if it is
    still trustworthy; sessions are created on demand, so the pool's size follows concurrency."""

    def __init__(self, factory, max_idle: int = 8):
        self._factory = factory
        self._idle: dict[str, list[CoqtopSession]] = {}
        self.leased: set[CoqtopSession] = set()
        self._lock = threading.Lock()
        self.max_idle = max_idle
        self.created = 0

    @contextmanager
    def lease(self, prelude: str) -> Iterator[CoqtopSession]:
        with self._lock:
            idle = self._idle.setdefault(prelude, [])
            session = idle.pop() if idle else None
        if session is None:
            session = self._factory(prelude)
            with self._lock:
                self.created += 1
        with self._lock:
            self.leased.add(session)
        try:
            yield session
        finally:
            with self._lock:
                self.leased.discard(session)
            if session.reusable:
                with self._lock:
                    idle = self._idle.setdefault(prelude, [])
                    if len(idle) < self.max_idle:
                        idle.append(session)
                        session = None
            if session is not None:
                session.close()

    def close(self) -> None:
        with self._lock:
            sessions = [s for idle in self._idle.values() for s in idle] + list(self.leased)
            self._idle.clear()
        for session in sessions:
            session.close()
