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
anything runs by the lexical screen below, which refuses every command keyword and every
metaprogramming entry point, wherever it occurs in the block (code, strings or comments).

Steps mode (`mode="steps"`) runs the block one top-level tactic at a time through the
leanprover-community REPL (see lean_repl.py) to report the goals after each step, then grades the
whole file exactly as above: per-step success alone never passes an answer.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from services.grader.backends.base import Backend, trim_feedback
from services.grader.lean_repl import LeanRepl, ReplError
from services.grader.sandbox import Limits, RunResult, get_sandbox, workdir
from shared.schemas import PROOF_HOLE, GradeMode, Reason, StepVerdict, Task, Verdict
from shared.settings import Settings, get_settings

ALLOWED_AXIOMS = frozenset({"propext", "Quot.sound", "Classical.choice"})

# ---------------------------------------------------------------------------------------------
# The lexical screen. Every identifier-like word of the block is checked, including words inside
# strings and comments: a legitimate tactic block never needs these words, and being strict there
# costs nothing while making every lexer trick (a string or comment that ends early) harmless.

_PROOF_ESCAPE = "ends the proof without proving it"
_TRUST = "adds or trusts something the kernel does not check"
_OPTIONS = "changes the checker's options"
_META = "runs metaprogramming code or extends the parser"
_LEAVES = "leaves the proof to change the file around it"
_OUTPUT = "prints or evaluates outside the proof"

FORBIDDEN_WORDS: dict[str, str] = {
    **dict.fromkeys("sorry admit stop sorryAx lcProof lcUnreachable".split(), _PROOF_ESCAPE),
    **dict.fromkeys("""axiom axioms native_decide native ofReduceBool ofReduceNat reduceBool
        reduceNat trustCompiler implemented_by extern opaque partial noncomputable nonrec
        skipKernelTC bv_decide""".split(), _TRUST),
    **dict.fromkeys(["set_option"], _OPTIONS),
    **dict.fromkeys("""run_tac run_cmd run_elab run_meta by_elab elab elab_rules macro macro_rules
        syntax notation infix infixl infixr prefix postfix unif_hint simproc dsimproc grind_pattern
        Lean Elab Meta Macro IO import prelude initialize""".split(), _META),
    **dict.fromkeys("""theorem lemma def example instance abbrev structure class inductive
        coinductive mutual namespace section end open export universe variable omit include
        attribute deriving where termination_by decreasing_by private protected local scoped alias
        irreducible_def suppress_compilation seal unseal add_decl_doc""".split(), _LEAVES),
    **dict.fromkeys("dbg_trace dbgTrace panic".split(), _OUTPUT),
}
_FORBIDDEN_PREFIXES = ("declare_", "register_", "builtin_", "initialize_")
# Term elaborators written `word%` that evaluate or inspect code at elaboration time.
_PERCENT_ELABORATORS = frozenset({"eval", "reduce", "decl_name", "type_of", "ensure_type_of"})
_WORD = re.compile(r"[^\W\d][\w']*")
_HASH_COMMAND = re.compile(r"#[^\W\d][\w']*")
_LINE_SEPARATORS = {"Zl", "Zp"}


@dataclass(frozen=True)
class Refusal:
    reason: Reason
    feedback: str


def screen(block: str) -> Refusal | None:
    """Why the block must not run, or None. Checked before anything is spliced or started."""
    if not block.strip():
        return Refusal(Reason.bad_format, "the ```lean block is empty; put your tactics inside it")
    if "\t" in block:
        return Refusal(Reason.bad_format, "tabs are not allowed in Lean; indent with spaces")
    for ch in block:
        category = unicodedata.category(ch)
        if ch != "\n" and (category.startswith("C") or category in _LINE_SEPARATORS):
            return Refusal(Reason.forbidden, f"invisible or control character U+{ord(ch):04X} is not allowed")
    if "/-" in block or "-/" in block:
        return Refusal(Reason.forbidden, "block comments `/- … -/` are not allowed; use `--` comments")
    if "«" in block or "»" in block:
        return Refusal(Reason.forbidden, "escaped identifiers `«…»` are not allowed")
    if "@[" in block:
        return Refusal(Reason.forbidden, "attributes `@[…]` are not allowed: answer with tactics only")
    if m := _HASH_COMMAND.search(block):
        return Refusal(Reason.forbidden, f"forbidden command `{m.group()}`: answer with tactics only")
    for m in _WORD.finditer(block):
        word = m.group()
        why = FORBIDDEN_WORDS.get(word)
        if why is None and "unsafe" in word.lower():
            why = _TRUST
        if why is None and word.startswith(_FORBIDDEN_PREFIXES):
            why = _META
        if why is None and word in _PERCENT_ELABORATORS and block.startswith("%", m.end()):
            word, why = word + "%", _META
        if why is not None:
            return Refusal(Reason.forbidden, f"forbidden token `{word}` (it {why}); answer with tactics only")
    lines = _block_lines(block)
    base = _common_indent(lines)
    for number, line in enumerate(lines, 1):
        if line[base:].startswith(":="):
            return Refusal(Reason.forbidden, f"line {number} starts with `:=` at the block's own column, "
                                             "which would end the tactic block")
    return None


# ---------------------------------------------------------------------------------------------
# Splicing. The block is dedented by its common indentation and re-indented to the hole's column,
# so relative indentation (nested tactics, `case` alternatives) survives and every line of it lies
# inside the `by` block.


class TaskError(ValueError):
    """The task itself is malformed (not the answer's fault)."""


@dataclass(frozen=True)
class Spliced:
    """The checked file and the map from its lines back to what the model wrote."""

    source: str
    theorem_line: int  # 1-based line of `theorem <name>` in the file
    block_start: int  # 1-based line where the block's first line lands
    block_lines: int
    column_shift: int  # file column = block column + shift

    def locate(self, line: int, column: int) -> str:
        """A position as the model can act on it: `block:L:C` in its own block, `statement:L:C` in
        the task's file (the hole line counts as one line)."""
        if self.block_start <= line < self.block_start + self.block_lines:
            return f"block:{line - self.block_start + 1}:{max(column - self.column_shift, 0)}"
        if line >= self.block_start + self.block_lines:
            line -= self.block_lines - 1
        return f"statement:{line}:{column}"


def _block_lines(block: str) -> list[str]:
    lines = [line.rstrip() for line in block.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _common_indent(lines: list[str]) -> int:
    return min((len(line) - len(line.lstrip(" ")) for line in lines if line), default=0)


def dedent_block(block: str) -> list[str]:
    """The block's lines with the common indentation removed (trailing blank lines dropped)."""
    lines = _block_lines(block)
    base = _common_indent(lines)
    return [line[base:] for line in lines]


def splice(statement: str, theorem: str, block: str) -> Spliced:
    lines = statement.split("\n")
    holes = [i for i, line in enumerate(lines) if line.strip() == PROOF_HOLE]
    if len(holes) != 1:
        raise TaskError(f"the statement must have exactly one line {PROOF_HOLE!r}; it has {len(holes)}")
    hole = holes[0]
    indent = len(lines[hole]) - len(lines[hole].lstrip(" "))
    if indent == 0:
        raise TaskError(f"the {PROOF_HOLE} line must be indented under `theorem {theorem} … := by`")
    short = re.escape(theorem.rsplit(".", 1)[-1])
    heads = [i for i in range(hole) if re.search(rf"\b(theorem|lemma)\s+(\S+\.)?{short}(?![\w'.])", lines[i])]
    if not heads:
        raise TaskError(f"no `theorem {theorem}` above the {PROOF_HOLE} line")
    body = [" " * indent + line if line else "" for line in dedent_block(block)]
    source = "\n".join(lines[:hole] + body + lines[hole + 1:])
    shift = indent - _common_indent(_block_lines(block))
    return Spliced(source, heads[-1] + 1, hole + 1, len(body), shift)


def split_steps(block: str) -> list[str]:
    """Top-level tactics of the block, one step each: a line at the block's own column starts a
    step; deeper lines, blank lines and `| alternative` / `<;>` lines continue it. Comment-only
    lines are left out (they are still compiled in the whole-file check)."""
    steps: list[list[str]] = []
    for line in dedent_block(block):
        if line.lstrip().startswith("--"):
            continue
        starts = line and not line.startswith(" ") and not line.startswith(("|", "<;>"))
        if starts or not steps:
            if line:
                steps.append([line])
        else:
            steps[-1].append(line)
    return ["\n".join(step).rstrip() for step in steps]


# ---------------------------------------------------------------------------------------------
# Reading `lean --json`.


@dataclass(frozen=True)
class LeanMessage:
    severity: str  # information | warning | error
    line: int  # 1-based
    column: int  # 0-based
    text: str


def parse_messages(stdout: str) -> list[LeanMessage]:
    """Every JSON message object on stdout, in order; other lines are ignored."""
    messages = []
    for raw in stdout.splitlines():
        raw = raw.strip()
        if not raw.startswith("{"):
            continue
        try:
            obj = json.loads(raw)
            pos = obj.get("pos") or {}
            messages.append(LeanMessage(str(obj["severity"]), int(pos["line"]), int(pos["column"]),
                                        str(obj.get("data", ""))))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return messages


_DEPENDS = re.compile(r"'(?P<name>[^']+)' depends on axioms: \[(?P<axioms>[^\]]*)\]", re.S)
_INDEPENDENT = re.compile(r"'(?P<name>[^']+)' does not depend on any axioms")


def parse_axiom_report(text: str, theorem: str) -> list[str] | None:
    """The axioms a `#print axioms` message lists for `theorem`, or None if it is not such a report."""
    text = text.strip()
    if m := _DEPENDS.fullmatch(text):
        axioms = [a.strip() for a in m["axioms"].split(",") if a.strip()]
    elif m := _INDEPENDENT.fullmatch(text):
        axioms = []
    else:
        return None
    name = m["name"].replace("«", "").replace("»", "")
    return axioms if name == theorem or name.endswith("." + theorem) else None


class AuditError(Exception):
    """The framed axiom report is missing (`missing`) or not exactly one genuine report (`ambiguous`)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


def audit_commands(theorem: str, nonce: str) -> str:
    return f'#print "{nonce}-BEGIN"\n#print axioms {theorem}\n#print "{nonce}-END"\n'


def read_audit(messages: list[LeanMessage], first_line: int, nonce: str, theorem: str) -> list[str]:
    """The axioms of the framed report whose frame starts at `first_line` (see module docstring)."""
    framed = [(i, m) for i, m in enumerate(messages) if first_line <= m.line <= first_line + 2]
    if not framed:
        raise AuditError("missing", "the axiom audit printed no report")
    lines = [m.line for _, m in framed]
    indices = [i for i, _ in framed]
    texts = [m.text.strip() for _, m in framed]
    genuine = (
        lines == [first_line, first_line + 1, first_line + 2]
        and indices == list(range(indices[0], indices[0] + 3))
        and texts[0] == f"{nonce}-BEGIN" and texts[2] == f"{nonce}-END"
        and all(m.severity == "information" for _, m in framed)
    )
    if not genuine:
        raise AuditError("ambiguous", "the axiom audit's output was not exactly one framed report")
    axioms = parse_axiom_report(texts[1], theorem)
    if axioms is None:
        raise AuditError("ambiguous", f"the axiom audit printed no report for {theorem}: {texts[1][:200]}")
    return axioms


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
                          "(the grader image does) or set VERIRL_LEAN to the lean executable")
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
_RESOURCE_MARKERS = ("maximum recursion depth", "out of memory", "stack overflow", "std::bad_alloc")


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
        messages = parse_messages(result.stdout)
        errors = [m for m in messages if m.severity == "error"]
        stderr = result.stderr.lower()
        if result.limit_hit == "resource" or any(marker in stderr for marker in _RESOURCE_MARKERS):
            return _failed(Reason.resource, "Lean ran out of resources (memory, stack or file size): "
                                            + result.stderr.strip()[-300:])
        fixed = [m for m in errors if m.line < spliced.theorem_line]
        if fixed:
            return _failed(Reason.sandbox_error, "the task's own definitions do not compile with this toolchain: "
                           + "\n".join(f"{spliced.locate(m.line, m.column)}: {m.text}" for m in fixed))
        if errors:
            text = "\n".join(f"{spliced.locate(m.line, m.column)}: error: {m.text.strip()}" for m in errors)
            lowered = text.lower()
            reason = (Reason.timeout if any(k in lowered for k in _TIMEOUT_MARKERS)
                      else Reason.resource if any(k in lowered for k in _RESOURCE_MARKERS)
                      else Reason.compile_error)
            return _failed(reason, trim_feedback("Lean reported errors (block:L:C is line L, column C of "
                                                 "your block):\n" + text, self.settings.feedback_chars))
        try:
            axioms = read_audit(messages, audit_line, nonce, theorem)
        except AuditError as exc:
            if result.output_truncated:
                return _failed(Reason.resource, f"Lean's output exceeded {self.limits.output_bytes} bytes")
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
        the goals it was applied to). A REPL that crashes is replaced and the answer rerun once."""
        repl_path = shutil.which(self.settings.lean_repl)
        if repl_path is None:
            return _failed(Reason.sandbox_error, f"Lean REPL {self.settings.lean_repl!r} not found: build "
                           "leanprover-community/repl and set VERIRL_LEAN_REPL to its binary")
        for attempt in (1, 2):
            repl = self._lease_repl(chain, repl_path)
            try:
                steps, failed = self._run_steps(repl, task, block)
            except ReplError as exc:
                if exc.kind == "crash" and attempt == 1:
                    continue
                reason = {"timeout": Reason.timeout, "crash": Reason.resource}.get(exc.kind, Reason.sandbox_error)
                return _failed(reason, f"the Lean REPL {exc.kind}: {exc}")
            finally:
                self._return_repl(repl)
            break
        if failed is not None:
            return failed.model_copy(update={"steps": steps})
        return self.check_whole(task, spliced, chain).model_copy(update={"steps": steps})

    def _run_steps(self, repl: LeanRepl, task: Task, block: str) -> tuple[list[StepVerdict], Verdict | None]:
        timeout = self.limits.wall_s
        key = ("proof state at the hole", task.statement)
        if key not in repl.state:
            header, hole_line = _with_sorry(task.statement)
            reply = repl.request({"cmd": header}, timeout)
            errors = [m.get("data", "") for m in reply.get("messages", []) if m.get("severity") == "error"]
            hole = [s for s in reply.get("sorries", []) if (s.get("pos") or {}).get("line") == hole_line]
            if errors or len(hole) != 1 or "proofState" not in hole[0]:
                return [], _failed(Reason.sandbox_error, "the REPL could not open the task's proof: "
                                   + ("; ".join(errors) or "no proof state at the hole")[:500])
            repl.state[key] = (hole[0]["proofState"], [hole[0].get("goal", "")])
        state, goals = repl.state[key]
        steps: list[StepVerdict] = []
        for index, text in enumerate(split_steps(block)):
            reply = repl.request({"tactic": text, "proofState": state}, timeout)
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


def _with_sorry(statement: str) -> tuple[str, int]:
    """The statement with `sorry` in the hole (the harness's own placeholder), and the hole's line."""
    lines = statement.split("\n")
    hole = next(i for i, line in enumerate(lines) if line.strip() == PROOF_HOLE)
    lines[hole] = lines[hole].replace(PROOF_HOLE, "sorry")
    return "\n".join(lines), hole + 1


def _tactic_error(reply: dict) -> str | None:
    """A tactic failed if the REPL says so in any of its three ways: a top-level `message`, an error
    among `messages`, or a `proofStatus` that reports an error (e.g. the kernel rejected the term)."""
    if "message" in reply:
        return str(reply["message"]).removeprefix("Lean error:").strip()
    errors = [str(m.get("data", "")) for m in reply.get("messages", []) if m.get("severity") == "error"]
    if errors:
        return "\n".join(errors)
    status = str(reply.get("proofStatus", ""))
    if status.startswith("Error") or "contains sorry" in status:
        return status
    return None


def _failed(reason: Reason, feedback: str) -> Verdict:
    return Verdict(passed=False, reason=reason, feedback=feedback)
