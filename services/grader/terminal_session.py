"""Terminal episodes: the model's command blocks run one per turn in a sandbox, files persist
between turns, and after the episode the task's hidden tests decide.

The work dir never lives on the host's disk. Each sandboxed run gets private, size-capped tmpfs
mounts as /tmp and /tmp/work; the episode's files travel in as a tar on stdin and out as a base64
tar on stdout, framed by a nonce. So a command can fill at most its own tmpfs, can write nothing the host keeps except
through that stream, and the host never unpacks what a command produced (it only reads the
observation members of the tar in memory; unpacking happens inside the next sandbox).

What persists between turns: files under the work dir, the current directory and exported
variables. What does not: processes (every turn is a fresh sandbox, so nothing a command leaves
running can touch the next turn or the tests).

The scratch runner here (`run_scratch`) is also what the SWE backend runs its patch-and-test in.
"""
from __future__ import annotations

import base64
import io
import json
import re
import secrets
import tarfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from services.grader.backends.base import trim_feedback
from services.grader.sandbox import (
    SYSTEM_DIRS, BwrapSandbox, DockerSandbox, Limits, RunResult, Sandbox, UnconfinedSandbox, get_sandbox,
    workdir,
)
from services.grader.venv_pool import VenvPool, get_pool
from shared.protocol import FENCE_TAGS, extract_block
from shared.schemas import Reason, StepVerdict, Verdict
from shared.settings import get_settings

# A block whose only content is one of these words ends the episode (see docs/terminal_swe.md).
FINISH_WORDS = ("submit", "exit")
OBSERVATION_BYTES = 4096  # of stdout and of stderr, per turn, as the model sees them
TMP_MB = 16  # the sandbox's /tmp outside the work dir (the work dir's size is per task)
STATE_MARGIN_S = 5.0  # wall time a turn gets beyond its command's limit, to pack the state

# Runs inside the sandbox as `bash -c SCRIPT verirl BASE MODE ARGS...`. stdin: a nonce line, then
# a tar holding work/ and .session/ (plus, for `patch`, patch.diff and overlay/). Modes:
#   turn CMD LIMIT OBS_MAX: run CMD in the work dir under `timeout`, then print
#       NONCE base64(tar of work/ .session/ .obs/) NONCE
#   exec ARGV...: cd into the work dir and exec ARGV with the nonce readable once on fd 4
#   patch ARGV...: cd into work/repo, `git apply` patch.diff, copy overlay/ over it, then as exec
# The nonce is never exported: /proc/<pid>/environ would show it to the code under test.
WRAPPER = r'''
set -u
base=$1 mode=$2
shift 2
IFS= read -r nonce
umask 022
cd "$base" && tar -xpf - || { echo "verirl: could not restore the work dir" >&2; exit 70; }
case $mode in
turn)
    rm -rf .obs && mkdir -p .obs .session
    timeout -v -k 1 "$2" bash -c '
        exec 2>"$4/err"
        s=$1
        cd "$2"
        [ -f "$s/env" ] && . "$s/env" 2>/dev/null
        cd "$(cat "$s/cwd" 2>/dev/null)" 2>/dev/null || cd "$2"
        trap '"'"'pwd >"$s/cwd"; export -p | grep -v "^declare -[a-zA-Z]*r" >"$s/env"'"'"' EXIT
        eval "$3"' verirl "$base/.session" "$base/work" "$1" "$base/.obs" \
        </dev/null >.obs/out 2>.obs/timeout 3>&-
    rc=$?
    # Whatever the command left running goes now (`kill` is a builtin: it needs no free process
    # slot, which a fork bomb may have taken), so packing the state below can fork. Only inside a
    # private pid namespace, where -1 means "this sandbox".
    [ "${VERIRL_PIDNS:-}" = 1 ] && kill -9 -1 2>/dev/null
    # Truncate before writing anything else: a flood of output may have filled /tmp.
    sizes=$(stat -c %s .obs/out .obs/err)
    truncate -s "<$3" .obs/out .obs/err
    echo $rc >.obs/rc
    set -- $sizes
    echo "$1" >.obs/out.size
    echo "$2" >.obs/err.size
    printf %s "$nonce"
    tar -cf - work .session .obs | base64 -w0
    printf %s "$nonce"
    ;;
exec|patch)
    if [ "$mode" = patch ]; then
        cd work/repo || exit 70
        git apply --verbose --whitespace=nowarn "$base/patch.diff" >&2 \
            || { echo "verirl: the diff does not apply" >&2; exit 3; }
        cp -a "$base/overlay/." . && rm -rf "$base/overlay" "$base/patch.diff" || exit 70
    else
        cd work || exit 70
    fi
    printf '%sstarted%s' "$nonce" "$nonce"
    exec 4<<<"$nonce"
    unset nonce
    exec "$@"
    ;;
esac
'''


# -- the scratch sandbox ------------------------------------------------------------------------

class _ScratchBwrap(BwrapSandbox):
    """bubblewrap with size-capped tmpfs mounts as /tmp and /tmp/work and no host directory bound
    writable. The work dir has its own mount so that filling it leaves room in /tmp for the
    wrapper's bookkeeping (exit status, captured output)."""

    name = "bwrap"

    def __init__(self, size_mb: int):
        super().__init__()
        self.size_mb = size_mb

    def wrap(self, argv, workdir, network, ro_binds):
        cmd = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--proc", "/proc",
               "--dev", "/dev", "--size", str(TMP_MB << 20), "--tmpfs", "/tmp",
               "--size", str(self.size_mb << 20), "--tmpfs", "/tmp/work"]
        if network:
            cmd.append("--share-net")
        for path in (*SYSTEM_DIRS, *ro_binds):
            cmd += ["--ro-bind-try", path, path]
        return cmd + ["--chdir", "/tmp", "--", *argv]


class _ScratchDocker(DockerSandbox):
    """`docker run` with a size-capped tmpfs as /tmp. Needs a daemon (none on CI machines) and an
    image with bash, tar, git and python3."""

    def __init__(self, size_mb: int, image: str, limits: Limits):
        super().__init__(image=image, limits=limits)
        self.size_mb = size_mb

    def wrap(self, argv, workdir, network, ro_binds):
        lim = self.limits
        mounts = [arg for path in ro_binds for arg in ("-v", f"{path}:{path}:ro")]
        return ["docker", "run", "--rm", "-i", "--read-only",
                "--tmpfs", f"/tmp:size={TMP_MB}m,exec", "--tmpfs", f"/tmp/work:size={self.size_mb}m,exec",
                "--network", "bridge" if network else "none",
                "--memory", f"{lim.memory_mb}m", "--pids-limit", str(lim.max_procs),
                "--ulimit", f"cpu={lim.cpu_s}", "--user", "65534:65534", *mounts, "-w", "/tmp",
                self.image, *argv]


def scratch_sandbox(size_mb: int) -> Sandbox:
    """The configured sandbox, in its scratch form (`VERIRL_SANDBOX=none` runs unconfined, in a
    host temp dir, with no cap on disk use)."""
    base = get_sandbox()
    if isinstance(base, BwrapSandbox):
        return _ScratchBwrap(size_mb)
    if isinstance(base, DockerSandbox):
        return _ScratchDocker(size_mb, base.image, base.limits)
    return base


@dataclass
class ScratchRun:
    result: RunResult
    nonce: str

    def payloads(self) -> list[str]:
        """What the wrapper (or the results plugin) framed with this run's nonce, in order."""
        return re.findall(re.escape(self.nonce) + r"(.*?)" + re.escape(self.nonce), self.result.stdout, re.DOTALL)

    def framed(self) -> str | None:
        found = self.payloads()
        return found[-1] if found else None


def run_scratch(mode: str, args: list[str], state: bytes, limits: Limits, *, size_mb: int,
                network: bool = False, ro_binds: tuple[str, ...] = ()) -> ScratchRun:
    """Run the wrapper in `mode` with `state` (a tar) unpacked in the sandbox's scratch dir.
    In the exec and patch modes, `{work}` in `args` stands for the work dir's path inside."""
    sandbox = scratch_sandbox(size_mb)
    nonce = secrets.token_hex(16)
    with workdir("verirl-scratch-") as host_dir:
        base = str(host_dir) if isinstance(sandbox, UnconfinedSandbox) else "/tmp"
        env = {"VERIRL_WORK": f"{base}/work", "VERIRL_PIDNS": "0" if isinstance(sandbox, UnconfinedSandbox) else "1"}
        if mode != "turn":
            args = [arg.replace("{work}", env["VERIRL_WORK"]) for arg in args]
        result = sandbox.run(["bash", "-c", WRAPPER, "verirl", base, mode, *args], host_dir, limits,
                             stdin=nonce.encode() + b"\n" + state, env=env, network=network,
                             ro_binds=ro_binds)
    return ScratchRun(result, nonce)


def pack(files: dict[str, bytes], dirs: tuple[str, ...] = ("work", ".session")) -> bytes:
    """A tar (built on the host from trusted content) of `files` plus empty `dirs`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def reported_outcomes(run: ScratchRun) -> dict[str, str] | None:
    """Test id -> outcome from the results plugin, or None if it reported nothing."""
    for payload in reversed(run.payloads()):
        try:
            data = json.loads(payload)
        except ValueError:
            continue
        if isinstance(data, dict):
            return {str(k): str(v) for k, v in data.items()}
    return None


# -- terminal tasks -----------------------------------------------------------------------------

@dataclass(frozen=True)
class TerminalSpec:
    """A terminal task directory (see docs/terminal_swe.md for the format)."""

    name: str
    path: Path
    instruction: str
    setup: str
    category: str = ""
    difficulty: str = "easy"
    max_turns: int = 10
    command_timeout_s: float = 10.0
    agent_timeout_s: float = 60.0
    test_timeout_s: float = 30.0
    allow_network: bool = False
    disk_mb: int = 32

    @classmethod
    def load(cls, path: str | Path) -> "TerminalSpec":
        path = Path(path).resolve()
        meta = yaml.safe_load((path / "task.yaml").read_text()) or {}
        setup = path / "setup.sh"
        if not (path / "tests").is_dir():
            raise ValueError(f"{path}: a terminal task needs a tests/ directory")
        return cls(
            name=path.name, path=path, instruction=str(meta["instruction"]).strip(),
            setup=setup.read_text() if setup.is_file() else "",
            category=str(meta.get("category", "")), difficulty=str(meta.get("difficulty", "easy")),
            max_turns=int(meta.get("max_turns", 10)),
            command_timeout_s=float(meta.get("command_timeout_sec", 10)),
            agent_timeout_s=float(meta.get("max_agent_timeout_sec", 60)),
            test_timeout_s=float(meta.get("max_test_timeout_sec", 30)),
            allow_network=bool(meta.get("allow_network", False)),
            disk_mb=int(meta.get("disk_mb", 32)),
        )

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"


DESTRUCTIVE = re.compile(
    r"\brm\s+(-\S+\s+)*(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b|\b(chmod|chown|chgrp)\s+(-[a-zA-Z]*\s+)*-[a-zA-Z]*R|"
    r"\bmkfs\b|\bdd\s+.*\bof=|\bshred\b|\bfind\b.*\s-delete\b|\bkill(all)?\s+(-\S+\s+)*-1\b|"
    r":\(\)\s*\{|\btruncate\s+-s\s*0\b|>\s*/dev/[sh]d[a-z]")
# A write (redirect, tee, touch, mkdir) to an absolute path outside the scratch dir.
OUTSIDE_WRITE = re.compile(r"(?:>>?|\btee\s+(?:-a\s+)?|\btouch\s+|\bmkdir\s+(?:-p\s+)?)\s*"
                           r"(/(?!tmp(/|\s|$)|dev/(null|stdout|stderr)\b)[^\s;|&)]*)")


def step_signals(command: str, exit_code: int | None, stderr: str, timed_out: bool,
                 failed_before: set[str], limit: str | None) -> list[str]:
    """The per-step facts a process reward can use (names in docs/terminal_swe.md)."""
    signals = []
    if exit_code != 0:
        signals.append("failed")
    if " ".join(command.split()) in failed_before:
        signals.append("repeat_error")
    if DESTRUCTIVE.search(command):
        signals.append("destructive")
    if OUTSIDE_WRITE.search(command) or "Read-only file system" in stderr:
        signals.append("outside_write")
    if timed_out:
        signals.append("timeout")
    if limit == "resource" or any(m in stderr for m in ("Resource temporarily unavailable", "No space left",
                                                         "File size limit exceeded")):
        signals.append("resource")
    return signals


@dataclass
class Observation:
    """What one turn produced. `text()` is what goes back to the model."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    truncated: bool = False
    finished: bool = False
    note: str = ""
    limit: str | None = None  # the sandbox limit that ended the turn, if one did
    killed: bool = False  # the session shell itself died; the turn's changes are lost
    step: StepVerdict | None = None

    def text(self) -> str:
        parts = [f"exit code: {self.exit_code}" + (" (timed out)" if self.timed_out else "")]
        if self.note:
            parts.append(self.note)
        if self.stdout:
            parts.append("stdout:\n" + self.stdout)
        if self.stderr:
            parts.append("stderr:\n" + self.stderr)
        if self.truncated:
            parts.append(f"(output truncated to {OBSERVATION_BYTES} bytes per stream)")
        return "\n".join(parts)


@dataclass
class TerminalSession:
    """One episode of one terminal task. Stateful: create, `act`/`step` until `done`, then
    `finish()` once for the verdict; discard afterwards. One caller at a time.

    It starts from the work dir the task's setup.sh leaves (RuntimeError if setup fails: a broken
    task, not a bad answer)."""

    spec: TerminalSpec
    pool: VenvPool | None = None
    steps: list[StepVerdict] = field(default_factory=list)
    finished: bool = False
    agent_time_s: float = 0.0

    def __post_init__(self) -> None:
        self._state = _setup_state(self.spec)
        self._failed: set[str] = set()
        self._notes: list[str] = []
        self._verdict: Verdict | None = None

    @property
    def done(self) -> bool:
        return (self.finished or len(self.steps) >= self.spec.max_turns
                or self.agent_time_s >= self.spec.agent_timeout_s)

    def act(self, message: str) -> Observation:
        """One model turn: run the message's last ```bash block (or finish on `submit`)."""
        block = extract_block(message, FENCE_TAGS["terminal"])
        if block is None:
            return self._record(message[:200], Observation(note=(
                "no ```bash block found: reply with one ```bash block of commands, "
                "or a block containing only `submit` when you are done")))
        return self.step(block)

    def step(self, command: str) -> Observation:
        """Run one command block in the episode's sandbox and record it as a step."""
        if self.done:
            raise RuntimeError("the episode is over; call finish()")
        if command.strip() in FINISH_WORDS:
            self.finished = True
            return self._record(command.strip(), Observation(exit_code=0, finished=True, note="episode finished"))
        if "\0" in command or _not_utf8(command):
            return self._record(command[:200], Observation(note="the command contains a NUL byte or invalid text"))
        limit = min(self.spec.command_timeout_s, self.spec.agent_timeout_s - self.agent_time_s)
        start = time.monotonic()
        obs = self._turn(command, limit)
        self.agent_time_s += time.monotonic() - start
        return self._record(command, obs)

    def finish(self) -> Verdict:
        """End the episode and run the task's tests against its files. Idempotent."""
        if self._verdict is None:
            self.finished = True
            self._verdict = self._run_tests()
        return self._verdict

    # -- internals -------------------------------------------------------------------------

    def _turn(self, command: str, limit_s: float) -> Observation:
        obs, state = run_turn(self.spec, self._state, command, limit_s)
        if state is not None:
            self._state = state
        return obs

    def _record(self, command: str, obs: Observation) -> Observation:
        signals = [] if obs.finished else step_signals(command, obs.exit_code, obs.stderr, obs.timed_out,
                                                       self._failed, obs.limit)
        if obs.killed:
            signals.append("killed_session")
        if obs.exit_code != 0:
            self._failed.add(" ".join(command.split()))
        message = obs.note or (obs.stderr.strip().splitlines() or [""])[-1][:200]
        obs.step = StepVerdict(index=len(self.steps), text=command, ok=obs.exit_code == 0 and not obs.timed_out,
                               message=message, exit_code=obs.exit_code, signals=signals)
        self.steps.append(obs.step)
        if obs.note and not obs.finished:
            self._notes.append(f"step {obs.step.index + 1}: {obs.note}")
        return obs

    def _run_tests(self) -> Verdict:
        pool = self.pool or get_pool()
        tests = str(self.spec.tests_dir)
        with pool.lease(f"terminal:{self.spec.name}:{secrets.token_hex(4)}") as slot:
            argv = slot.pytest_argv("--rootdir", tests, "--confcutdir", tests, tests)
            run = run_scratch("exec", argv, self._state, _limits(self.spec, self.spec.test_timeout_s),
                              size_mb=self.spec.disk_mb, ro_binds=(*slot.ro_binds, tests))
        return tests_verdict(run, _step_summary(self.steps, self._notes), self.steps)


def _limits(spec: TerminalSpec, wall_s: float) -> Limits:
    return Limits.from_settings(get_settings()).scaled(
        wall_s=wall_s, cpu_s=max(1, int(wall_s) + 1), file_size_mb=spec.disk_mb,
        # the state comes back base64-encoded on stdout
        output_bytes=((spec.disk_mb + TMP_MB) << 20) * 3 // 2)


def run_turn(spec: TerminalSpec, state: bytes, command: str, limit_s: float) -> tuple[Observation, bytes | None]:
    """Run `command` against `state`: the observation, and the new state (None if the turn left
    none, e.g. because the command killed the session shell; the old state then stands)."""
    run = run_scratch("turn", [command, f"{max(limit_s, 0.1):.2f}", str(OBSERVATION_BYTES)], state,
                      _limits(spec, limit_s + STATE_MARGIN_S), size_mb=spec.disk_mb, network=spec.allow_network)
    packed = run.framed()
    members = _read_obs(packed) if packed is not None else None
    if members is None:
        res = run.result
        return Observation(
            res.stdout[-OBSERVATION_BYTES:], res.stderr[-OBSERVATION_BYTES:], res.returncode,
            timed_out=res.timed_out, limit=res.limit_hit, killed=True,
            note="the turn overran its time limit; changes made in it are lost" if res.timed_out
            else "the command killed the session shell; changes made in this turn are lost"), None
    rc_text = members.get("rc", "").strip()
    truncated = any(members.get(f"{n}.size", "").strip() != str(len(members.get(n, "").encode()))
                    for n in ("out", "err"))
    obs = Observation(members.get("out", ""), members.get("err", ""),
                      int(rc_text) if rc_text.lstrip("-").isdigit() else None,
                      timed_out="sending signal" in members.get("timeout", ""), truncated=truncated)
    return obs, base64.b64decode(packed)


@lru_cache(maxsize=256)
def _setup_state(spec: TerminalSpec) -> bytes:
    """The work dir after the task's setup.sh. Setup scripts must be deterministic: the result
    is computed once per process and task, and every episode starts from a copy."""
    if not spec.setup:
        return pack({})
    obs, state = run_turn(spec, pack({}), spec.setup, max(spec.test_timeout_s, spec.command_timeout_s))
    if obs.exit_code != 0 or state is None:
        raise RuntimeError(f"setup of {spec.name} failed (exit {obs.exit_code}): {(obs.stdout + obs.stderr)[-500:]}")
    return state


PASSING = ("passed", "xfailed", "skipped")


def tests_verdict(run: ScratchRun, preface: str, steps: list[StepVerdict] | None,
                  required: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None) -> Verdict:
    """The verdict of a pytest run through the results plugin.

    Without `required`, every reported test must pass, xfail or skip. With it (SWE), `required`
    maps a group name to (test ids, accepted outcomes); an id that did not run fails, as in
    SWE-bench."""
    outcomes = reported_outcomes(run)
    if outcomes is None:
        res = run.result
        if res.timed_out:
            return Verdict(passed=False, reason=Reason.timeout, steps=steps,
                           feedback=trim_feedback(preface + "the tests timed out", _limit()))
        if "started" not in run.payloads():  # the harness never reached pytest: not the answer's doing
            return Verdict(passed=False, reason=Reason.sandbox_error, steps=steps, feedback=trim_feedback(
                preface + f"the test run failed to start (exit {res.returncode}): " + res.stderr[-800:], _limit()))
        return Verdict(passed=False, reason=Reason.tests_failed, steps=steps, feedback=trim_feedback(
            preface + f"the test run ended without reporting results (exit {res.returncode}"
            + (f", signal {res.signal}" if res.signal else "") + "): " + _tail(res), _limit()))
    if required is None:
        required = {"tests": (tuple(outcomes), PASSING)}
    lines, failing = [], []
    for group, (ids, accepted) in required.items():
        bad = [tid for tid in ids if outcomes.get(tid, "not run") not in accepted]
        failing += bad
        lines.append(f"{group}: {len(ids) - len(bad)}/{len(ids)} passed")
    passed = bool(outcomes) and not failing
    detail = "; ".join(lines)
    if failing:
        detail += "\nfailing: " + ", ".join(f"{t} ({outcomes.get(t, 'not run')})" for t in failing)
        detail += "\n" + _failure_excerpt(run.result.stdout, run.nonce)
    return Verdict(passed=passed, reason=Reason.ok if passed else Reason.tests_failed, steps=steps,
                   feedback=trim_feedback(preface + detail, _limit()))


def _not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _limit() -> int:
    return get_settings().feedback_chars


def _tail(res: RunResult) -> str:
    return (res.stdout[-600:] + "\n" + res.stderr[-600:]).strip()


def _read_obs(packed: str) -> dict[str, str] | None:
    """The .obs/ members of a state tar, read in memory (nothing is unpacked on the host)."""
    try:
        raw = base64.b64decode(packed, validate=True)
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            found = {}
            for member in tar.getmembers():
                if member.isfile() and member.name.startswith(".obs/") and member.size <= 1 << 20:
                    data = tar.extractfile(member)
                    found[member.name[5:]] = data.read().decode("utf-8", errors="replace") if data else ""
            return found if "rc" in found else None
    except (ValueError, tarfile.TarError, EOFError):
        return None


def _step_summary(steps: list[StepVerdict], notes: list[str]) -> str:
    flagged = [f"step {s.index + 1} [{', '.join(s.signals)}]: {s.text.strip().splitlines()[0][:80] if s.text.strip() else ''}"
               for s in steps if set(s.signals) - {"failed"}]
    lines = notes + flagged
    return ("\n".join(lines) + "\n") if lines else ""


def _failure_excerpt(stdout: str, nonce: str) -> str:
    """pytest's short failure report, without the plugin's framed line."""
    text = re.sub(re.escape(nonce) + ".*?" + re.escape(nonce), "", stdout, flags=re.DOTALL)
    # pytest's closing line says how long the run took; dropping it keeps verdicts a pure function
    # of (task, answer), as the verdict cache assumes.
    text = re.sub(r" in \d+(?:\.\d+)?s(?: \([0-9:]+\))?(?=(?: =+)?$)", "", text, flags=re.MULTILINE)
    start = text.find("= FAILURES =")
    start = text.rfind("\n", 0, start) + 1 if start >= 0 else max(0, len(text) - 1200)
    return text[start:].strip()
