"""Run untrusted processes: no network, a read-only system, a private writable work dir, and
limits on wall time, CPU, memory, processes, file size and captured output.

Three backends behind one interface:
- `bwrap` (default): bubblewrap in fresh namespaces. As root we first drop to a throw-away uid,
  because the kernel never enforces RLIMIT_NPROC for uid 0 (a fork bomb would go unchecked).
- `docker`: the same limits as `docker run` flags, for hosts with a daemon.
- `none`: rlimits and a process group only; must be chosen explicitly and logs a warning.

Whatever the backend, output pipes are drained by threads into bounded buffers (a full pipe
never blocks the child or us), and on timeout the whole process group is killed.
"""
from __future__ import annotations

import logging
import os
import random
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from shared.settings import Settings, get_settings

log = logging.getLogger(__name__)

# Where the work dir appears inside the sandbox; fixed so that messages (file paths in compiler
# errors) do not depend on the host's temp dir, which keeps verdicts a pure function.
INSIDE_WORKDIR = "/tmp/work"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
SANDBOX_UIDS = (200_000, 260_000)
TMPFS_BYTES = 256 * 1024 * 1024  # the private /tmp lives in memory: cap it
# What checkers print when a memory or stack limit stopped them (compared in lower case).
RESOURCE_MARKERS = ("out of memory", "stack overflow")
_BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
}


@dataclass(frozen=True)
class Limits:
    wall_s: float = 20.0
    cpu_s: int = 20
    memory_mb: int = 2048
    max_procs: int = 64
    file_size_mb: int = 64
    output_bytes: int = 1 << 20

    @classmethod
    def from_settings(cls, s: Settings | None = None) -> "Limits":
        s = s or get_settings()
        return cls(s.grade_wall_s, s.grade_cpu_s, s.grade_memory_mb, s.grade_max_procs,
                   s.grade_file_size_mb, s.grade_output_bytes)

    def scaled(self, **changes) -> "Limits":
        return replace(self, **changes)


@dataclass
class RunResult:
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    timed_out: bool = False
    output_truncated: bool = False

    @property
    def signal(self) -> int | None:
        """The signal that ended the process: bwrap reports its child's as exit status 128 + n."""
        rc = self.returncode
        if rc is None:
            return None
        if rc < 0:
            return -rc
        return rc - 128 if rc - 128 in (signal.SIGKILL, signal.SIGSEGV, signal.SIGXCPU, signal.SIGXFSZ,
                                        signal.SIGABRT) else None

    @property
    def limit_hit(self) -> str | None:
        """'timeout' or 'resource' when a limit ended the process, else None."""
        if self.timed_out or self.signal in (signal.SIGXCPU,):
            return "timeout"
        if self.output_truncated:
            return "resource"
        if self.signal in (signal.SIGKILL, signal.SIGSEGV, signal.SIGXFSZ, signal.SIGABRT):
            return "resource"
        if is_resource_message(self.stderr):
            return "resource"
        return None


def is_resource_message(text: str, markers: tuple[str, ...] = RESOURCE_MARKERS) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in markers)


class BoundedReader(threading.Thread):
    """Drains one pipe to EOF, keeping at most `cap` bytes; the rest is read and dropped.
    `on_overflow` runs once when the cap is first exceeded (the sandbox kills the process then)."""

    def __init__(self, fd: int, cap: int, on_overflow=None):
        super().__init__(daemon=True)
        self.fd, self.cap, self.on_overflow = fd, cap, on_overflow
        self.chunks: list[bytes] = []
        self.kept = 0
        self.truncated = False

    def run(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            room = self.cap - self.kept
            if room > 0:
                self.chunks.append(chunk[:room])
                self.kept += min(room, len(chunk))
            if len(chunk) > room and not self.truncated:
                self.truncated = True
                if self.on_overflow:
                    self.on_overflow()
        os.close(self.fd)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def _rlimits(limits: Limits, uid: int | None):
    """preexec_fn for the child: new session, limits, then (as root) a throw-away uid."""

    def apply() -> None:
        os.setsid()
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_procs,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

    return apply


class Sandbox:
    """Interface: build the argv that runs `argv` confined, with `workdir` writable inside."""

    name = "base"

    def wrap(self, argv: list[str], workdir: Path, network: bool, ro_binds: tuple[str, ...]) -> list[str]:
        raise NotImplementedError

    def uid(self) -> int | None:
        return None

    def inside(self, workdir: Path) -> str:
        """The work dir's path as the confined process sees it."""
        return INSIDE_WORKDIR

    # -- shared machinery ------------------------------------------------------------------

    def spawn(self, argv: list[str], workdir: Path, limits: Limits, *, env: dict[str, str] | None = None,
              network: bool = False, ro_binds: tuple[str, ...] = ()) -> subprocess.Popen:
        """Start a confined process with binary pipes (for interactive drivers)."""
        uid = self.uid()
        if uid is not None:
            _chown_tree(workdir, uid)
        full_env = {**_BASE_ENV, **(env or {})}
        return subprocess.Popen(
            self.wrap(argv, workdir, network, ro_binds),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=workdir, env=full_env, preexec_fn=_rlimits(limits, uid), close_fds=True,
        )

    def run(self, argv: list[str], workdir: Path, limits: Limits, *, stdin: bytes = b"",
            env: dict[str, str] | None = None, network: bool = False,
            ro_binds: tuple[str, ...] = ()) -> RunResult:
        start = time.monotonic()
        proc = self.spawn(argv, workdir, limits, env=env, network=network, ro_binds=ro_binds)
        # An output flood ends the run: nothing past the cap would be read anyway.
        flood = lambda: kill_group(proc)  # noqa: E731
        out = BoundedReader(os.dup(proc.stdout.fileno()), limits.output_bytes, flood)
        err = BoundedReader(os.dup(proc.stderr.fileno()), limits.output_bytes, flood)
        proc.stdout.close()
        proc.stderr.close()
        out.start()
        err.start()
        threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
        timed_out = False
        try:
            proc.wait(timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        kill_group(proc)
        proc.wait()
        # The group is dead, so the pipes reach EOF promptly; the bound is only a guard against a
        # grandchild that escaped the group while holding a pipe open.
        out.join(5)
        err.join(5)
        return RunResult(proc.returncode, out.text(), err.text(), time.monotonic() - start,
                         timed_out, out.truncated or err.truncated)


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process's whole group (it leads its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _chown_tree(path: Path, uid: int) -> None:
    os.chown(path, uid, uid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)


class BwrapSandbox(Sandbox):
    name = "bwrap"

    def __init__(self, extra_ro: tuple[str, ...] = ()):
        self.extra_ro = extra_ro

    def uid(self) -> int | None:
        return random.randrange(*SANDBOX_UIDS) if os.geteuid() == 0 else None

    def wrap(self, argv, workdir, network, ro_binds):
        cmd = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
               "--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
        if network:
            cmd.append("--share-net")
        for path in (*SYSTEM_DIRS, *self.extra_ro, *ro_binds):
            cmd += ["--ro-bind-try", path, path]
        cmd += ["--bind", str(workdir), INSIDE_WORKDIR, "--chdir", INSIDE_WORKDIR, "--"]
        return cmd + argv


class DockerSandbox(Sandbox):
    """Thin: the same confinement as `docker run` flags. Needs a daemon, so not run in CI here."""

    name = "docker"

    def __init__(self, image: str = "verirl-grader-rocq", limits: Limits | None = None):
        self.image, self.limits = image, limits or Limits()

    def wrap(self, argv, workdir, network, ro_binds):
        lim = self.limits
        return ["docker", "run", "--rm", "-i", "--read-only", "--tmpfs", "/tmp",
                "--network", "bridge" if network else "none",
                "--memory", f"{lim.memory_mb}m", "--pids-limit", str(lim.max_procs),
                "--ulimit", f"cpu={lim.cpu_s}", "--user", "65534:65534",
                "-v", f"{workdir}:{INSIDE_WORKDIR}", "-w", INSIDE_WORKDIR, self.image, *argv]


class UnconfinedSandbox(Sandbox):
    """No namespaces: rlimits and a process group only. For hosts without bubblewrap."""

    name = "none"

    def wrap(self, argv, workdir, network, ro_binds):
        return argv

    def inside(self, workdir: Path) -> str:
        return str(workdir)


def get_sandbox(settings: Settings | None = None) -> Sandbox:
    s = settings or get_settings()
    if s.sandbox == "bwrap":
        if shutil.which("bwrap") is None:
            raise RuntimeError("bubblewrap is not installed (apt-get install bubblewrap), "
                               "or set VERIRL_SANDBOX=none to run unconfined")
        return BwrapSandbox()
    if s.sandbox == "docker":
        return DockerSandbox(limits=Limits.from_settings(s))
    log.warning("VERIRL_SANDBOX=none: graded code runs WITHOUT a sandbox (rlimits only)")
    return UnconfinedSandbox()


@contextmanager
def workdir(prefix: str = "verirl-") -> Iterator[Path]:
    """A private temp dir that is removed afterwards, whoever owns what is inside."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
