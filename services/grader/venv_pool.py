"""A pool of per-slot virtualenvs in which graded pytest runs execute.

Why a pool, and why these rules: concurrent episodes that share one environment corrupt each
other (one re-points an editable install while another imports it), and an episode that leases a
half-built environment fails for reasons that have nothing to do with its answer. So:

- **Built and verified before it is leased.** A slot is built in a temp dir beside its final
  place, verified by importing pytest *inside the sandbox* with the slot's own interpreter, given a
  manifest, and only then renamed into place (a rename is atomic). A slot directory that exists is
  therefore a verified one; a crash mid-build leaves only a temp dir that is swept later.
- **One holder at a time.** An exclusive `flock` on `slot-<i>.lock` keeps other threads and other
  processes that share the pool directory out; an in-process table asserts it, and every lease
  is recorded (`records()`) so tests can prove no two leases of a slot overlapped.
- **Reset between leases.** Before each lease the slot is compared with its manifest (path, size
  and mtime of every file); any difference and it is rebuilt. Code under test never installs
  anything: the repository goes on `sys.path` through pytest's `pythonpath` option and the slot
  is mounted read-only in the sandbox.

How a slot is built (measured by `bench/workers.py`): `python -m venv --without-pip` plus one
`.pth` file pointing at a shared read-only *harness* directory that holds pytest, its
dependencies (copied once from the grader's own environment and byte-compiled) and the results
plugin below. No pip and no network are involved, so a slot builds in a fraction of a second.
Tasks therefore require nothing beyond the standard library and pytest.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata as metadata
import logging
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from services.grader.sandbox import Limits, Sandbox, get_sandbox, workdir
from shared.settings import get_settings

log = logging.getLogger(__name__)

# The interpreter slots are built from must be visible inside the sandbox, so it is looked up on
# the sandbox's own PATH rather than taken from the grader's (possibly private) installation.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
HARNESS_DISTS = ("pytest",)
RESULTS_PLUGIN = "verirl_results"

# A pytest plugin that reports every test's outcome as one JSON line framed by a nonce. The nonce
# arrives on file descriptor 4 (never in the environment, where /proc/<pid>/environ would show it
# to the code under test), fd 4 is closed before any test runs, and the process makes itself
# non-dumpable. Code that runs inside the test process itself can still find the nonce: that is
# the trust boundary of every pytest-based harness, SWE-bench's included (docs/terminal_swe.md).
PLUGIN_SOURCE = '''\
"""Report each test id's outcome as one nonce-framed JSON line on the original stdout."""
import ctypes
import json
import os

try:
    _NONCE = os.read(4, 256).decode().strip()
    os.close(4)
except OSError:
    _NONCE = ""
# Not dumpable: a program the tests start (same uid) cannot read the nonce out of /proc/<pid>/mem.
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
_OUT = os.dup(1)
_outcomes = {}


def pytest_runtest_logreport(report):
    if report.failed:
        outcome = "failed" if report.when == "call" else "error"
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call":
        outcome = "xpassed" if hasattr(report, "wasxfail") else "passed"
    else:
        return
    # A failing setup or teardown turns the test into an error whatever its call phase did.
    if report.nodeid not in _outcomes or outcome == "error":
        _outcomes[report.nodeid] = outcome


def pytest_collectreport(report):
    if report.failed:
        _outcomes[report.nodeid or "<collection>"] = "error"


def pytest_sessionfinish(session, exitstatus):
    if _NONCE:
        line = _NONCE + json.dumps(_outcomes, sort_keys=True) + _NONCE + "\\n"
        os.write(_OUT, line.encode())
'''


class PoolBusy(RuntimeError):
    """No slot became free within the lease timeout."""


@dataclass(frozen=True)
class Slot:
    index: int
    path: Path
    harness: Path

    @property
    def python(self) -> str:
        return str(self.path / "bin" / "python")

    @property
    def ro_binds(self) -> tuple[str, ...]:
        return (str(self.path), str(self.harness))

    def pytest_argv(self, *args: str) -> list[str]:
        """`python -m pytest` with the results plugin, no cache, and no config but ours.

        `-P` keeps the current directory off sys.path and `-s` the user site, so neither can
        shadow pytest; the environment (TZ, PYTHONHASHSEED) is still honoured."""
        return [self.python, "-P", "-s", "-m", "pytest", "-c", str(self.harness / "pytest.ini"),
                "-p", RESULTS_PLUGIN, "-p", "no:cacheprovider", "-q", "--tb=short",
                "-o", "console_output_style=classic", *args]


@dataclass
class LeaseRecord:
    slot: int
    holder: str
    acquired: float
    released: float | None = None
    rebuilt: bool = False


def _sandbox_python() -> str:
    found = shutil.which("python3", path=SANDBOX_PATH)
    if found is None:
        raise RuntimeError(f"no python3 on {SANDBOX_PATH}; the sandbox needs one to run pytest")
    return found


def _dist_closure(names: tuple[str, ...]) -> list[metadata.Distribution]:
    """The distributions `names` need at run time here (extras and foreign markers left out)."""
    from packaging.requirements import Requirement  # a dependency of pytest itself

    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        dist = metadata.distribution(name)
        seen[key] = dist
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def _manifest(root: Path) -> str:
    """A digest of every entry under `root` (path, kind, size, mtime, link target)."""
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel == MANIFEST:
                continue
            st = os.lstat(path)
            target = os.readlink(path) if os.path.islink(path) else ""
            lines.append(f"{rel}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{target}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


MANIFEST = ".verirl-manifest"


class VenvPool:
    """`size` slots under `root`, shared safely by threads and by processes on one host."""

    def __init__(self, root: Path, size: int, *, sandbox: Sandbox | None = None,
                 base_python: str | None = None, lease_timeout_s: float = 300.0,
                 harness_root: Path | None = None):
        """`harness_root` (default: `root`) is where the shared harness dir is built or found;
        pools that share it build pytest's copy only once."""
        if size < 1:
            raise ValueError("a venv pool needs at least one slot")
        self.root = Path(root).resolve()
        self.size = size
        self.sandbox = sandbox or get_sandbox()
        self.base_python = base_python or _sandbox_python()
        self.lease_timeout_s = lease_timeout_s
        self.root.mkdir(parents=True, exist_ok=True)
        # Sandboxed runs use a throw-away uid, which must be able to reach the slots.
        self.root.chmod(0o755)
        for parent in self.root.parents:
            if not os.stat(parent).st_mode & 0o001:
                raise RuntimeError(f"venv pool {self.root}: {parent} is not searchable by other "
                                   "users, so sandboxed processes could not reach the slots")
        self._mutex = threading.Lock()
        self._holders: dict[int, str] = {}
        self._records: deque[LeaseRecord] = deque(maxlen=100_000)
        self._harness: Path | None = None
        self._harness_root = Path(harness_root).resolve() if harness_root else self.root

    # -- public ----------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Build and verify every slot now (a worker calls this at start, before taking jobs)."""
        for i in range(self.size):
            with self._locked(i, block=True):
                self._ensure(i)

    @contextmanager
    def lease(self, holder: str) -> Iterator[Slot]:
        """A verified slot held exclusively until the block ends; waits while all are busy."""
        deadline = time.monotonic() + self.lease_timeout_s
        while True:
            for i in range(self.size):
                with self._locked(i, block=False) as got:
                    if not got:
                        continue
                    with self._mutex:
                        assert i not in self._holders, f"slot {i} already leased to {self._holders[i]}"
                        self._holders[i] = holder
                    record = LeaseRecord(i, holder, time.monotonic())
                    try:
                        record.rebuilt = self._ensure(i)
                        with self._mutex:
                            self._records.append(record)
                        yield Slot(i, self._slot_dir(i), self.harness())
                    finally:
                        record.released = time.monotonic()
                        with self._mutex:
                            del self._holders[i]
                    return
            if time.monotonic() > deadline:
                raise PoolBusy(f"no venv slot free after {self.lease_timeout_s:.0f} s")
            time.sleep(0.01)

    def records(self) -> list[LeaseRecord]:
        with self._mutex:
            return list(self._records)

    def build_fresh(self, dest: Path) -> Slot:
        """Build and verify a slot at `dest` outside the pool (what a pool-less grader would do
        for every episode; the benchmark's baseline)."""
        self._build(Path(dest))
        return Slot(-1, Path(dest), self.harness())

    def harness(self) -> Path:
        """The shared read-only directory with pytest, its dependencies and the plugin."""
        if self._harness is None:
            with self._mutex:
                if self._harness is None:
                    self._harness = self._build_harness()
        return self._harness

    # -- slots -----------------------------------------------------------------------------

    def _slot_dir(self, i: int) -> Path:
        return self.root / f"slot-{i}"

    @contextmanager
    def _locked(self, i: int, *, block: bool) -> Iterator[bool]:
        fd = os.open(self.root / f"slot-{i}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # closing the descriptor drops the lock

    def _ensure(self, i: int) -> bool:
        """Make slot `i` match its manifest, rebuilding it if not. Call with its lock held.
        Returns whether it was (re)built."""
        final = self._slot_dir(i)
        marker = final / MANIFEST
        if marker.is_file() and marker.read_text() == _manifest(final):
            return False
        log.info("building venv slot %s", final)
        tmp = self.root / f".slot-{i}.build-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            self._build(tmp)
            if final.exists():
                trash = self.root / f".slot-{i}.trash-{uuid.uuid4().hex[:8]}"
                os.rename(final, trash)
                shutil.rmtree(trash, ignore_errors=True)
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return True

    def _build(self, dest: Path) -> None:
        harness = self.harness()
        shutil.rmtree(dest, ignore_errors=True)
        subprocess.run([self.base_python, "-m", "venv", "--without-pip", str(dest)],
                       check=True, capture_output=True, timeout=120)
        (site,) = (dest / "lib").glob("python3*/site-packages")
        (site / "verirl-harness.pth").write_text(str(harness / "site") + "\n")
        self._verify(dest, harness)
        (dest / MANIFEST).write_text(_manifest(dest))

    def _verify(self, slot_dir: Path, harness: Path) -> None:
        """Import pytest and the plugin with the slot's interpreter, inside the sandbox."""
        want = metadata.version("pytest")
        code = f"import pytest, {RESULTS_PLUGIN}; print(pytest.__version__)"
        with workdir("verirl-verify-") as wd:
            result = self.sandbox.run([str(slot_dir / "bin" / "python"), "-P", "-s", "-c", code], wd,
                                      Limits(wall_s=60, cpu_s=60), ro_binds=(str(slot_dir), str(harness)))
        if result.returncode != 0 or result.stdout.strip() != want:
            raise RuntimeError(f"venv slot {slot_dir} failed verification (exit {result.returncode}): "
                               f"{(result.stdout + result.stderr).strip()[-500:]}")

    # -- harness ---------------------------------------------------------------------------

    def _build_harness(self) -> Path:
        dists = _dist_closure(HARNESS_DISTS)
        tag = "-".join(f"{d.metadata['Name']}{d.version}" for d in sorted(dists, key=lambda d: d.metadata["Name"].lower()))
        py = subprocess.run([self.base_python, "-c", "import sys; print('py%d.%d' % sys.version_info[:2])"],
                            check=True, capture_output=True, text=True).stdout.strip()
        plugin_tag = hashlib.sha256(PLUGIN_SOURCE.encode()).hexdigest()[:8]
        final = self._harness_root / f"harness-{py}-{hashlib.sha256(tag.encode()).hexdigest()[:10]}-{plugin_tag}"
        if (final / MANIFEST).is_file():
            return final
        with open(self._harness_root / "harness.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (final / MANIFEST).is_file():
                return final
            tmp = self._harness_root / f".harness.build-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            try:
                site = tmp / "site"
                site.mkdir(parents=True)
                for dist in dists:
                    for file in dist.files or []:
                        parts = Path(file).parts
                        if ".." in parts or "__pycache__" in parts:
                            continue
                        src = Path(dist.locate_file(file))
                        if src.is_file():
                            (site / file).parent.mkdir(parents=True, exist_ok=True)
                            shutil.copy2(src, site / file)
                (site / f"{RESULTS_PLUGIN}.py").write_text(PLUGIN_SOURCE)
                (tmp / "pytest.ini").write_text("[pytest]\n")
                # Byte-compile once with the slots' interpreter: importing pytest from source on
                # every graded run would cost more than the run itself.
                subprocess.run([self.base_python, "-m", "compileall", "-q", "-j", "0", str(site)],
                               check=True, capture_output=True, timeout=300)
                (tmp / MANIFEST).write_text(tag)
                os.rename(tmp, final)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return final


_pool: VenvPool | None = None
_pool_lock = threading.Lock()


def get_pool() -> VenvPool:
    """This process's pool, from settings (`VERIRL_VENV_SLOTS`, `VERIRL_VENV_POOL_DIR`)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            s = get_settings()
            _pool = VenvPool(s.venv_pool_dir or s.var_dir / "venv-pool", s.venv_slots)
        return _pool


def warm_up() -> VenvPool:
    """Build and verify every slot of this process's pool. Call once when a worker that serves
    the `swe` or `terminal` queue starts, before it takes a job."""
    pool = get_pool()
    pool.warm_up()
    return pool
