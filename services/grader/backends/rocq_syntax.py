"""What the Rocq backend knows about Coq text: sentences, the forbidden list, splicing, and turning
checker output into verdict fields. Pure functions, shared by the fresh and the warm path so that
both reach the same verdict for the same answer."""
from __future__ import annotations

import re
from dataclasses import dataclass

from shared.schemas import PROOF_HOLE

# Words that open or close a proof, change the environment, declare something or print/inspect.
# Rejected anywhere in the block (outside comments and strings): no legitimate tactic script
# needs them, and each one either leaves the proof, persists state, or weakens the check.
FORBIDDEN_WORDS = frozenset("""
Qed Defined Admitted Abort Proof Save Restart Undo Reset Back BackTo Drop Quit
Axiom Axioms Parameter Parameters Hypothesis Hypotheses Variable Variables Context Conjecture
Require Import Export Load Declare Extract Extraction Include Module Section End Chapter
Unset Local Global Opaque Transparent Strategy Typeclasses Generalizable Open Close Delimit Bind
Print Check Eval Compute Time Timeout Fail Succeed Redirect Show Search SearchPattern SearchRewrite
About Locate Inspect Debug Optimize Comments Attributes Guarded Register Primitive Derive Collection
Theorem Lemma Definition Fixpoint CoFixpoint Inductive CoInductive Variant Record Structure Class
Instance Existing Notation Infix Reserved Ltac Ltac2 Tactic Hint Create Arguments Implicit Coercion
Canonical Program Obligation Obligations Next Solve Goal Remark Fact Corollary Proposition Example
Let Scheme Combined Functional Add Remove Universe Universes Constraint Polymorphic Monomorphic
Cumulative NonCumulative Unshelve
admit give_up exact_no_check vm_cast_no_check native_cast_no_check change_no_check
""".split())
# `Set` is also the sort of small types (`A : Set`), so it is refused only where a command starts.
FORBIDDEN_AT_SENTENCE_START = frozenset({"Set"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")
_BULLETS = re.compile(r"^[\s\-+*{}]*")


class RocqSyntaxError(ValueError):
    """The block cannot be split into Coq sentences (unterminated comment, string or sentence)."""


@dataclass(frozen=True)
class Sentence:
    text: str  # as written, without leading white space, ending with its '.'
    line: int  # 1-based line of the block where it starts


def scan(block: str) -> tuple[list[Sentence], str]:
    """Split into sentences the way Coq's lexer does (a '.' followed by white space or the end,
    outside comments and strings) and return them with the code stripped of comments and strings.
    A trailing fragment of only bullets and braces (`}`) is kept as a last sentence."""
    sentences: list[Sentence] = []
    code: list[str] = []
    i, n, depth = 0, len(block), 0
    start = 0
    tail = 0  # index into `code` where the current (unfinished) sentence starts
    in_string = False
    while i < n:
        c = block[i]
        two = block[i:i + 2]
        if in_string:
            if c == '"':
                if block[i + 1:i + 2] == '"':  # "" is an escaped quote
                    i += 2
                    continue
                in_string = False
            i += 1
            continue
        if depth:
            if two == "(*":
                depth, i = depth + 1, i + 2
            elif two == "*)":
                depth, i = depth - 1, i + 2
            else:
                i += 1
            continue
        if two == "(*":
            depth, i = 1, i + 2
            code.append(" ")
            continue
        if c == '"':
            in_string = True
            code.append(' "" ')
            i += 1
            continue
        code.append(c)
        if c == "." and (i + 1 == n or block[i + 1].isspace()) and block[i - 1:i] != ".":
            _add_sentence(sentences, block, start, i + 1)
            start, tail = i + 1, len(code)
        i += 1
    if depth:
        raise RocqSyntaxError("unterminated comment: a '(*' in your proof is never closed by '*)'")
    if in_string:
        raise RocqSyntaxError('unterminated string: a \'"\' in your proof is never closed')
    rest = block[start:]
    if "".join(code[tail:]).strip(" \t\r\n{}-+*"):
        raise RocqSyntaxError(f"the last sentence of your proof does not end with '.': {rest.strip()[:80]!r}")
    if rest.strip():
        _add_sentence(sentences, block, start, n)
    return sentences, "".join(code)


def _add_sentence(out: list[Sentence], block: str, start: int, end: int) -> None:
    raw = block[start:end]
    lead = len(raw) - len(raw.lstrip())
    if raw.strip():
        out.append(Sentence(raw.lstrip(), block.count("\n", 0, start + lead) + 1))


def _strip_comments(text: str) -> str:
    return re.sub(r"\(\*.*?\*\)", " ", text, flags=re.DOTALL)


def forbidden_reason(block: str) -> str | None:
    """Why the block must not run, or None. Raises RocqSyntaxError for unsplittable text."""
    sentences, code = scan(block)
    if "#[" in code or "#" in code:
        return "attributes and '#' commands are not allowed in a proof"
    for word in _IDENT.findall(code):
        if word in FORBIDDEN_WORDS:
            return f"'{word}' is not allowed in a proof (only tactics may appear)"
    for sentence in sentences:
        first = _IDENT.match(_BULLETS.sub("", _strip_comments(sentence.text)))
        if first and first.group() in FORBIDDEN_AT_SENTENCE_START:
            return f"'{first.group()}' commands are not allowed in a proof"
    return None


@dataclass(frozen=True)
class SplicedFile:
    """The task's fixed file cut around the hole: `prelude` (Require lines, shared by every task of
    a warm session), `before` (definitions and the theorem up to `Proof.`), `after` (`Qed.` …)."""

    prelude: str
    before: str
    after: str
    hole_line: int  # 1-based line of the file where the block's first line lands

    def with_block(self, block: str) -> str:
        return f"{self.prelude}{self.before}{block}\n{self.after}"


def split_statement(statement: str) -> SplicedFile:
    lines = statement.splitlines(keepends=True)
    hole = next((i for i, line in enumerate(lines) if line.strip() == PROOF_HOLE), None)
    if hole is None:
        raise ValueError(f"task statement has no line {PROOF_HOLE!r}")
    k = 0
    while k < hole and (not lines[k].strip() or lines[k].lstrip().startswith(("Require", "From"))):
        k += 1
    return SplicedFile("".join(lines[:k]), "".join(lines[k:hole]), "".join(lines[hole + 1:]), hole + 1)


# --- checker output -> verdict fields --------------------------------------------------------

_COQC_LOCATION = re.compile(r'^File "[^"]*", line (\d+), characters \d+-\d+:\s*$', re.MULTILINE)
_ERROR = re.compile(r"^Error:", re.MULTILINE)


def error_message(stream: str) -> str | None:
    """The first 'Error: …' message in checker output, without location lines or prompts."""
    match = _ERROR.search(stream)
    if not match:
        return None
    text = stream[match.end():]
    # A message ends at the first blank line (coqtop then prints its prompt; coqc moves on).
    text = re.split(r"\n\s*\n", text, maxsplit=1)[0]
    return text.strip()


def coqc_error_line(stderr: str, hole_line: int, block_lines: int) -> int | None:
    """Line of the block where coqc located its first error; None if outside the block."""
    match = _COQC_LOCATION.search(stderr[: _ERROR.search(stderr).start()] if _ERROR.search(stderr) else stderr)
    if not match:
        return None
    line = int(match.group(1)) - hole_line + 1
    return line if 1 <= line <= block_lines else None


def feedback_for_error(message: str, line: int | None) -> str:
    where = f"line {line} of your proof" if line else "the end of your proof"
    return f"Error at {where}:\n{message}"


def parse_assumptions(output: str) -> list[str] | None:
    """Axiom names from `Print Assumptions`; [] when closed; None when no report is there."""
    if "Closed under the global context" in output:
        return []
    if "Axioms:" not in output:
        return None
    body = output.split("Axioms:", 1)[1]
    return sorted({m.group(1) for m in re.finditer(r"^([A-Za-z_][\w'.]*) :", body, re.MULTILINE)})
