"""Lean 4 backend: screen the tactic block, splice it under `theorem … := by`, compile the file with
`lean --json` in the sandbox, and audit the original theorem with `#print axioms`.

How the audit resists forgery. The checked file ends with three commands the harness appends:

    #print "<nonce>-BEGIN"
    #print axioms <theorem>
    #print "<nonce>-END"

`lean --json` prints each message as one JSON object carrying its source position. We accept a
report only if the messages positioned on those three lines are exactly these three, in this
order, consecutive in the output, with the fresh random nonce (drawn after the answer is fixed, so
the answer cannot know it). The answer's own messages (`trace`, errors) carry positions inside the
proof and never count; a line it managed to write to stdout itself would need the nonce, and a
second report at the audit line makes the audit ambiguous, which fails. What the audit cannot
see — a block that leaves the proof and redefines `#print axioms` with a macro — is stopped before
anything runs by the lexical screen (lean_syntax.py), which refuses every command keyword and every
metaprogramming entry point, wherever it occurs in the block (code, strings or comments).

Steps mode (`mode="steps"`) runs the block one top-level tactic at a time through the
leanprover-community REPL (see lean_repl.py) to report the goals after each step, then grades the
whole file exactly as above: per-step success alone never passes an answer.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from services.grader.backends.base import Backend, trim_feedback
from services.grader.backends.lean_syntax import (
    ALLOWED_AXIOMS, AuditError, Spliced, TaskError, audit_commands, parse_messages, read_audit, screen,
    splice, split_steps,
)
from services.grader.lean_repl import LeanRepl, ReplError
from services.grader.sandbox import RESOURCE_MARKERS, Limits, RunResult, get_sandbox, is_resource_message, workdir
from shared.schemas import PROOF_HOLE, GradeMode, Reason, StepVerdict, Task, Verdict
from shared.settings import Settings, get_settings

# ---------------------------------------------------------------------------------------------
# The toolchain: which binaries to run and what the sandbox must see of them.


class ToolMissing(Exception):
    """The Lean toolchain (or REPL) is not usable here; the message says what to do."""


@dataclass(frozen=True)
class Toolchain:
    lean: str
    lake: str | None
    prefix: Path | None  # the toolchain root (`lean --print-prefix`)
    project: Path | None  # a Lake project whose packages the file may import

    @property
    def ro_binds(self) -> tuple[str, ...]:
        root = self.prefix or Path(self.lean).parent
        return tuple(str(p) for p in (root, self.project) if p is not None)

    @property
    def env(self) -> dict[str, str]:
        if self.prefix is None:
            return {}
        return {"PATH": f"{self.prefix}/bin:/usr/local/bin:/usr/bin:/bin", "LEAN_SYSROOT": str(self.prefix)}

    def command(self, *argv: str) -> list[str]:
        """`argv` run with the project's import path (`lake env`) when a project is configured."""
        if self.project is None:
            return list(argv)
        if self.lake is None:
            raise ToolMissing("VERIRL_LEAN_PROJECT is set but no `lake` was found next to lean")
        return [self.lake, "-d", str(self.project), "env", *argv]


_toolchains: dict[tuple[str, str | None], Toolchain] = {}
_versions: dict[tuple[str, str | None], str] = {}
_toolchain_lock = threading.Lock()


def find_toolchain(settings: Settings, check_access: bool = False) -> Toolchain:
    """Resolve `settings.lean` (and `lean_project`) once per process. Raises ToolMissing."""
    key = (settings.lean, str(settings.lean_project) if settings.lean_project else None)
    with _toolchain_lock:
        found = _toolchains.get(key)
        if found is None:
            found = _toolchains[key] = _resolve(settings)
    if check_access:
        for path in found.ro_binds:
            _require_world_readable(Path(path))
    return found


def _resolve(settings: Settings) -> Toolchain:
    path = shutil.which(settings.lean)
    if path is None:
        raise ToolMissing(f"Lean binary {settings.lean!r} not found: install a toolchain with elan "
                          "or set VERIRL_LEAN to the lean executable")
    project = settings.lean_project
    if project is not None and not (project.is_dir()):
        raise ToolMissing(f"VERIRL_LEAN_PROJECT={project} is not a directory")
    prefix = None
    try:
        out = subprocess.run([path, "--print-prefix"], capture_output=True, text=True, timeout=60,
                             cwd=project)
        if out.returncode == 0 and Path(out.stdout.strip()).is_dir():
            prefix = Path(out.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    if prefix is None and Path(path).resolve().parent.name == "bin":  # the usual toolchain layout
        prefix = Path(path).resolve().parent.parent
    lean = str(prefix / "bin" / "lean") if prefix and (prefix / "bin" / "lean").exists() else path
    lake = str(prefix / "bin" / "lake") if prefix and (prefix / "bin" / "lake").exists() else shutil.which("lake")
    return Toolchain(lean, lake, prefix, project)


def _require_world_readable(path: Path) -> None:
    """As root the sandbox drops to a throw-away uid, which must be able to read the toolchain."""
    for part in [path, *path.parents]:
        mode = part.stat().st_mode
        if not mode & stat.S_IXOTH or (part == path and not mode & stat.S_IROTH):
            raise ToolMissing(f"{path} is not readable by the sandbox's unprivileged user ({part} has mode "
                              f"{stat.filemode(mode)}); install the toolchain world-readable, e.g. ELAN_HOME=/opt/elan")


def toolchain_version(settings: Settings) -> str:
    key = (settings.lean, str(settings.lean_project) if settings.lean_project else None)
    with _toolchain_lock:
        if key in _versions:
            return _versions[key]
    try:
        chain = find_toolchain(settings)
        out = subprocess.run([chain.lean, "--version"], capture_output=True, text=True, timeout=60,
                             cwd=chain.project)
        version = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unavailable"
    except (ToolMissing, OSError, subprocess.SubprocessError):
        version = "unavailable"
    if version != "unavailable" and chain.project is not None:
        manifest = chain.project / "lake-manifest.json"
        if manifest.exists():  # the project's pinned packages change verdicts as much as lean does
            version += " project:" + hashlib.sha256(manifest.read_bytes()).hexdigest()[:12]
    with _toolchain_lock:
        _versions[key] = version
    return version


# ---------------------------------------------------------------------------------------------
# The backend.

_TIMEOUT_MARKERS = ("maximum number of heartbeats", "(deterministic) timeout")
_RESOURCE_MARKERS = RESOURCE_MARKERS + ("maximum recursion depth", "std::bad_alloc")


class LeanBackend(Backend):
    name = "lean"
    fence = "lean"

    def __init__(self) -> None:
        self.settings = get_settings()
        self.sandbox = get_sandbox(self.settings)
        self.limits = Limits.from_settings(self.settings)
        self._idle_repls: list[LeanRepl] = []
        self._repl_lock = threading.Lock()

    def version(self) -> str:
        return toolchain_version(self.settings)

    def close(self) -> None:
        with self._repl_lock:
            repls, self._idle_repls = self._idle_repls, []
        for repl in repls:
            repl.close()

    def check(self, task: Task, block: str, mode: GradeMode = "whole") -> Verdict:
        refusal = screen(block)
        if refusal:
            return Verdict(passed=False, reason=refusal.reason, feedback=refusal.feedback)
        if not task.statement or not task.theorem:
            return _failed(Reason.sandbox_error, "task has no statement or theorem")
        try:
            spliced = splice(task.statement, task.theorem, block)
            chain = find_toolchain(self.settings, check_access=self._drops_privileges())
        except (TaskError, ToolMissing) as exc:
            return _failed(Reason.sandbox_error, str(exc))
        if mode == "steps":
            return self.check_steps(task, block, spliced, chain)
        return self.check_whole(task, spliced, chain)

    def _drops_privileges(self) -> bool:
        return self.sandbox.name == "bwrap" and os.geteuid() == 0

    # -- whole file -----------------------------------------------------------------------------

    def check_whole(self, task: Task, spliced: Spliced, chain: Toolchain) -> Verdict:
        nonce = secrets.token_hex(16)
        source = spliced.source.rstrip("\n") + "\n"
        audit_line = source.count("\n") + 1
        source += audit_commands(task.theorem, nonce)
        with workdir("verirl-lean-") as work:
            (work / "Answer.lean").write_text(source)
            try:
                result = self.sandbox.run(chain.command(chain.lean, "--json", "Answer.lean"), work,
                                          self.limits, env=chain.env, ro_binds=chain.ro_binds)
            except (OSError, ToolMissing) as exc:
                return _failed(Reason.sandbox_error, f"could not start lean: {exc}")
        return self._verdict(result, spliced, audit_line, nonce, task.theorem)

    def _verdict(self, result: RunResult, spliced: Spliced, audit_line: int, nonce: str, theorem: str) -> Verdict:
        if result.limit_hit == "timeout":
            return _failed(Reason.timeout, f"Lean did not finish within {self.limits.wall_s:g} s")
        if result.output_truncated:  # the sandbox stopped Lean at the output cap
            return _failed(Reason.resource, f"Lean's output exceeded {self.limits.output_bytes} bytes")
        messages = parse_messages(result.stdout)
        errors = [m for m in messages if m.severity == "error"]
        stderr = result.stderr.lower()
        if result.limit_hit == "resource" or is_resource_message(stderr, _RESOURCE_MARKERS):
            return _failed(Reason.resource, "Lean ran out of resources (memory, stack or file size): "
                                            + result.stderr.strip()[-300:])
        fixed = [m for m in errors if m.line < spliced.theorem_line]
        if fixed:
            text = "\n".join(f"{spliced.locate(m.line, m.column)}: {m.text}" for m in fixed)
            return _failed(Reason.sandbox_error, trim_feedback("the task's own definitions do not compile with "
                                                               "this toolchain:\n" + text, self.settings.feedback_chars))
        if errors:
            text = "\n".join(f"{spliced.locate(m.line, m.column)}: error: {m.text.strip()}" for m in errors)
            lowered = text.lower()
            reason = (Reason.timeout if any(k in lowered for k in _TIMEOUT_MARKERS)
                      else Reason.resource if is_resource_message(lowered, _RESOURCE_MARKERS)
                      else Reason.compile_error)
            return _failed(reason, trim_feedback("Lean reported errors (block:L:C is line L, column C of "
                                                 "your block):\n" + text, self.settings.feedback_chars))
        try:
            axioms = read_audit(messages, audit_line, nonce, theorem)
        except AuditError as exc:
            if exc.kind == "missing":
                return _failed(Reason.sandbox_error, f"{exc} (lean exit {result.returncode}: "
                                                     f"{result.stderr.strip()[-300:]})")
            return _failed(Reason.axioms, str(exc))
        extra = [a for a in axioms if a not in ALLOWED_AXIOMS]
        if extra:
            return Verdict(passed=False, reason=Reason.axioms, axioms=axioms,
                           feedback=f"the proof depends on axioms that are not allowed: {', '.join(extra)} "
                                    f"(allowed: {', '.join(sorted(ALLOWED_AXIOMS))})")
        return Verdict(passed=True, reason=Reason.ok, axioms=axioms)

    # -- one tactic at a time -------------------------------------------------------------------

    def check_steps(self, task: Task, block: str, spliced: Spliced, chain: Toolchain) -> Verdict:
        """Run each top-level tactic in the REPL, recording the goals after it (for a failed step:
        the goals it was applied to). Opening the task's proof and running all of the answer's
        steps each get the wall-clock limit. A REPL that crashes is replaced and the answer rerun
        once."""
        repl_path = shutil.which(self.settings.lean_repl)
        if repl_path is None:
            return _failed(Reason.sandbox_error, f"Lean REPL {self.settings.lean_repl!r} not found: build "
                           "leanprover-community/repl and set VERIRL_LEAN_REPL to its binary")
        if self._drops_privileges():
            try:
                _require_world_readable(Path(repl_path).resolve())
            except ToolMissing as exc:
                return _failed(Reason.sandbox_error, str(exc))
        for attempt in (1, 2):
            repl = self._lease_repl(chain, repl_path)
            try:
                steps, failed = self._run_steps(repl, task, block)
                break
            except ReplError as exc:
                if exc.kind != "crash" or attempt == 2:
                    reason = {"timeout": Reason.timeout, "crash": Reason.resource}.get(exc.kind, Reason.sandbox_error)
                    return _failed(reason, f"the Lean REPL {exc.kind}: {exc}")
            finally:
                self._return_repl(repl)
        if failed is not None:
            return failed.model_copy(update={"steps": steps})
        return self.check_whole(task, spliced, chain).model_copy(update={"steps": steps})

    def _open_proof(self, repl: LeanRepl, statement: str) -> tuple[int, list[str]] | Verdict:
        """The proof state at the hole with its goals, opened once per REPL process: the imports
        are loaded once (they dominate with large libraries), each statement elaborated once on
        top of them. REPL environments and proof states are immutable, so sharing them between
        answers leaks nothing."""
        key = ("proof at the hole", statement)
        if key in repl.state:
            return repl.state[key]
        imports, rest, hole_line = _repl_commands(statement)
        timeout = self.limits.wall_s
        request: dict = {"cmd": rest}
        if imports:
            if ("imports", imports) not in repl.state:
                reply = repl.request({"cmd": imports}, timeout)
                if _errors(reply) or not isinstance(reply.get("env"), int):
                    return _failed(Reason.sandbox_error, "the REPL could not load the task's imports: "
                                   + "; ".join(_errors(reply))[:500])
                repl.state[("imports", imports)] = reply["env"]
            request["env"] = repl.state[("imports", imports)]
        reply = repl.request(request, timeout)
        hole = [s for s in reply.get("sorries", []) if (s.get("pos") or {}).get("line") == hole_line]
        if _errors(reply) or len(hole) != 1 or not isinstance(hole[0].get("proofState"), int):
            return _failed(Reason.sandbox_error, "the REPL could not open the task's proof: "
                           + ("; ".join(_errors(reply)) or "no proof state at the hole")[:500])
        repl.state[key] = (hole[0]["proofState"], [str(hole[0].get("goal", ""))])
        return repl.state[key]

    def _run_steps(self, repl: LeanRepl, task: Task, block: str) -> tuple[list[StepVerdict], Verdict | None]:
        try:
            opened = self._open_proof(repl, task.statement)
        except ReplError as exc:  # before any of the answer ran: the REPL or the task is at fault
            return [], _failed(Reason.sandbox_error, f"the Lean REPL could not open the task's proof ({exc.kind}): {exc}")
        if isinstance(opened, Verdict):
            return [], opened
        state, goals = opened
        steps: list[StepVerdict] = []
        deadline = time.monotonic() + self.limits.wall_s  # one budget for all of the answer's steps
        for index, text in enumerate(split_steps(block)):
            reply = repl.request({"tactic": text, "proofState": state}, max(deadline - time.monotonic(), 0.01))
            error = _tactic_error(reply)
            if error is None and not isinstance(reply.get("proofState"), int):
                repl.close()
                raise ReplError("garbled", f"reply without a proof state: {str(reply)[:200]}")
            if error is not None:
                steps.append(StepVerdict(index=index, text=text, ok=False, message=error, goals="\n\n".join(goals)))
                feedback = f"step {index + 1} failed:\n{text}\n{error}\ngoals before it:\n" + "\n\n".join(goals)
                return steps, _failed(Reason.compile_error, trim_feedback(feedback, self.settings.feedback_chars))
            state, goals = reply["proofState"], [str(g) for g in reply.get("goals", [])]
            steps.append(StepVerdict(index=index, text=text, ok=True, goals="\n\n".join(goals)))
        if goals:
            feedback = "unsolved goals after the last step:\n" + "\n\n".join(goals)
            return steps, _failed(Reason.compile_error, trim_feedback(feedback, self.settings.feedback_chars))
        return steps, None

    def _lease_repl(self, chain: Toolchain, repl_path: str) -> LeanRepl:
        with self._repl_lock:
            if self._idle_repls:
                return self._idle_repls.pop()
        binds = (*chain.ro_binds, str(Path(repl_path).resolve().parent))
        return LeanRepl(chain.command(repl_path), sandbox=self.sandbox, limits=self.limits,
                        max_uses=self.settings.warm_session_max_uses, env=chain.env, ro_binds=binds)

    def _return_repl(self, repl: LeanRepl) -> None:
        with self._repl_lock:
            self._idle_repls.append(repl)


def _repl_commands(statement: str) -> tuple[str, str, int]:
    """The statement as REPL commands: its leading `import` lines, the rest with the harness's own
    `sorry` in the hole, and the hole's line within that rest."""
    lines = statement.split("\n")
    count = 0
    while count < len(lines) and (not lines[count].strip() or lines[count].startswith(("import ", "--"))):
        count += 1
    imports = "\n".join(lines[:count]).strip() if any(line.startswith("import ") for line in lines[:count]) else ""
    rest = lines[count:] if imports else lines
    hole = next(i for i, line in enumerate(rest) if line.strip() == PROOF_HOLE)
    rest[hole] = rest[hole].replace(PROOF_HOLE, "sorry")
    return imports, "\n".join(rest), hole + 1


def _errors(reply: dict) -> list[str]:
    return [str(m.get("data", "")) for m in reply.get("messages", []) if m.get("severity") == "error"]


def _tactic_error(reply: dict) -> str | None:
    """A tactic failed if the REPL says so in any of its three ways: a top-level `message`, an error
    among `messages`, or a `proofStatus` that reports an error (e.g. the kernel rejected the term)."""
    if "message" in reply:
        return str(reply["message"]).removeprefix("Lean error:").strip()
    if errors := _errors(reply):
        return "\n".join(errors)
    status = str(reply.get("proofStatus", ""))
    if status.startswith("Error") or "contains sorry" in status:
        return status
    return None


def _failed(reason: Reason, feedback: str) -> Verdict:
    return Verdict(passed=False, reason=reason, feedback=feedback)
