"""A driver for the leanprover-community REPL (github.com/leanprover-community/repl).

Protocol: each request is one JSON object followed by a blank line on stdin; each reply is one
(pretty-printed) JSON object followed by a blank line on stdout. JSON text never contains a raw
blank line (newlines inside strings are escaped), so a blank line always ends a reply.

    {"cmd": "theorem t : 1 = 1 := by sorry"}      -> {"sorries": [{"proofState": 0, "goal": …}], "env": 0}
    {"tactic": "rfl", "proofState": 0}             -> {"proofState": 1, "goals": [], "proofStatus": "Completed"}
    {"tactic": "bad", "proofState": 0}             -> {"message": "Lean error:\n…"}

What this driver guarantees, whatever the process does:
- every call has a real deadline: stdin is written and stdout read with raw, non-blocking fd
  operations under poll(), never a blocking readline() on a pipe;
- stderr is drained all the time by a thread into a bounded tail, so a chatty process never
  blocks on a full pipe;
- after a timeout, a crash, output that is not one JSON reply, or stray output between replies,
  the whole process group is killed; the next call starts a fresh process. A dead REPL is never
  reused, and neither is one that has served `max_uses` calls.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import tempfile
import threading
import time
from pathlib import Path

from services.grader.sandbox import Limits, Sandbox, get_sandbox, kill_group

STDERR_TAIL_BYTES = 64 * 1024
MAX_REPLY_BYTES = 16 * 1024 * 1024


class ReplError(Exception):
    """A call failed; `kind` is `timeout`, `crash` (the process died) or `garbled` (output that is
    not one JSON reply). The process has already been killed when this is raised."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


class _StderrTail(threading.Thread):
    """Reads a pipe to EOF, keeping only the last `cap` bytes."""

    def __init__(self, fd: int, cap: int = STDERR_TAIL_BYTES):
        super().__init__(daemon=True)
        self.fd, self.cap = fd, cap
        self.buffer = bytearray()
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 65536):
                with self.lock:
                    self.buffer += chunk
                    if len(self.buffer) > self.cap:
                        del self.buffer[: len(self.buffer) - self.cap]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def text(self) -> str:
        with self.lock:
            return self.buffer.decode("utf-8", errors="replace")


class LeanRepl:
    """One REPL process at a time, started on first use and replaced whenever it misbehaves.

    Not thread-safe: lease an instance to one caller at a time. `state` is scratch space tied to
    the current process (e.g. proof-state ids it handed out); it is emptied whenever the process
    is replaced, because ids from a dead process mean nothing to a new one."""

    def __init__(self, argv: list[str], *, sandbox: Sandbox | None = None, limits: Limits | None = None,
                 max_uses: int = 50, env: dict[str, str] | None = None, ro_binds: tuple[str, ...] = ()):
        self.argv = argv
        self.sandbox = sandbox or get_sandbox()
        limits = limits or Limits.from_settings()
        # The CPU rlimit counts over the process's whole life, so it covers all its uses; each
        # call is still bounded by its own wall-clock deadline.
        self.limits = limits.scaled(cpu_s=limits.cpu_s * max(1, max_uses))
        self.max_uses = max_uses
        self.env, self.ro_binds = env, ro_binds
        self.state: dict = {}
        self.starts = 0
        self._proc = None
        self._uses = 0
        self._stderr: _StderrTail | None = None
        self._workdir: Path | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stderr_tail(self) -> str:
        return self._stderr.text() if self._stderr else ""

    def request(self, payload: dict, timeout: float) -> dict:
        """Send one request and return its reply, within `timeout` seconds. Raises ReplError."""
        deadline = time.monotonic() + timeout
        if self._proc is not None and (self._uses >= self.max_uses or not self._healthy()):
            self.close()
        if self._proc is None:
            self._start()
        self._uses += 1
        try:
            self._write((json.dumps(payload, ensure_ascii=False) + "\n\n").encode(), deadline)
            reply = self._read_reply(deadline)
            if not _answers(payload, reply):
                raise ReplError("garbled", "the reply does not answer the request (process out of step)")
            return reply
        except ReplError as exc:
            self.close()
            tail = self.stderr_tail().strip()[-500:]
            raise ReplError(exc.kind, f"{exc}" + (f"; stderr: {tail}" if tail else "")) from None

    def close(self) -> None:
        """Kill the current process (if any); a later request starts a fresh one."""
        proc, self._proc = self._proc, None
        self.state.clear()
        if proc is None:
            return
        kill_group(proc)
        try:
            proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - SIGKILL was sent; reaping is best effort
            pass
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        if self._stderr is not None:
            self._stderr.join(2)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    # -- internals ------------------------------------------------------------------------------

    def _start(self) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix="verirl-lean-repl-"))
        try:
            proc = self.sandbox.spawn(self.argv, self._workdir, self.limits, env=self.env, ro_binds=self.ro_binds)
        except OSError as exc:
            shutil.rmtree(self._workdir, ignore_errors=True)
            raise ReplError("crash", f"could not start the REPL: {exc}") from None
        os.set_blocking(proc.stdin.fileno(), False)
        os.set_blocking(proc.stdout.fileno(), False)
        self._stderr = _StderrTail(os.dup(proc.stderr.fileno()))
        proc.stderr.close()
        self._stderr.start()
        self._proc, self._uses = proc, 0
        self.starts += 1
        self.state.clear()

    def _healthy(self) -> bool:
        """Alive, and nothing unread on stdout: stray output means the replies are out of step."""
        if self._proc.poll() is not None:
            return False
        poller = select.poll()
        poller.register(self._proc.stdout.fileno(), select.POLLIN)
        while poller.poll(0):
            try:
                chunk = os.read(self._proc.stdout.fileno(), 65536)
            except BlockingIOError:
                break
            if not chunk or chunk.strip():
                return False
        return True

    def _write(self, data: bytes, deadline: float) -> None:
        fd = self._proc.stdin.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ReplError("timeout", "the REPL did not accept the request in time")
            events = poller.poll(remaining * 1000)
            if any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events):
                raise ReplError("crash", f"the REPL closed its input (exit {self._proc.poll()})")
            if not events:
                continue
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise ReplError("crash", f"the REPL closed its input: {exc}") from None

    def _read_reply(self, deadline: float) -> dict:
        fd = self._proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        buf = bytearray()
        while True:
            start = len(buf) - len(buf.lstrip())
            end = buf.find(b"\n\n", start)
            if end >= 0:
                raw, rest = bytes(buf[start:end]), bytes(buf[end + 2:])
                if rest.strip():
                    raise ReplError("garbled", f"unexpected output after a reply: {rest[:200]!r}")
                try:
                    reply = json.loads(raw)
                except ValueError:
                    raise ReplError("garbled", f"reply is not JSON: {raw[:200]!r}") from None
                if not isinstance(reply, dict):
                    raise ReplError("garbled", f"reply is not a JSON object: {raw[:200]!r}")
                return reply
            if len(buf) > MAX_REPLY_BYTES:
                raise ReplError("garbled", f"reply larger than {MAX_REPLY_BYTES} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ReplError("timeout", "no reply from the REPL in time")
            if not poller.poll(remaining * 1000):
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                code = self._proc.poll()
                raise ReplError("crash", f"the REPL exited (exit {code}) before replying")
            buf += chunk


def _answers(payload: dict, reply: dict) -> bool:
    """Whether `reply` has the shape of an answer to `payload`: a command yields an environment,
    a tactic a proof state, and either may fail with a message. A reply of the other kind is a
    late copy of an earlier answer, and the process is out of step."""
    if "message" in reply and "env" not in reply and "proofState" not in reply:
        return True
    return ("proofState" in reply) if "tactic" in payload else ("env" in reply)
