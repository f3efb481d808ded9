"""What the Lean backend knows about Lean text, as pure functions: the lexical screen, splicing
the block into the fixed statement, splitting it into steps, and reading `lean --json` output
(messages and the nonce-framed `#print axioms` report; see lean.py for why it cannot be forged)."""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

from shared.schemas import PROOF_HOLE, Reason

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
