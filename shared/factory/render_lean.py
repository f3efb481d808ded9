"""Lean 4 rendering of a `Draft` (core Lean, no Mathlib): the fixed file with the proof hole
under `theorem … := by`, and the prompt.

Gold blocks are written one top-level tactic per line at column 0 (nested blocks stay on their
line), so the harness only has to indent every line of a block to the hole's column."""
from __future__ import annotations

from shared.factory.core import Draft, closure
from shared.protocol import FENCE_TAGS, expected_format
from shared.schemas import PROOF_HOLE

CHECKER = "lean"

DEFS = {
    "list": "inductive {L} where\n  | {nil} : {L}\n  | {cons} (x : Nat) (t : {L}) : {L}\nopen {L}",
    "app": "def {app} : {L} → {L} → {L}\n  | {nil}, b => b\n  | {cons} x t, b => {cons} x ({app} t b)",
    "rev": "def {rev} : {L} → {L}\n  | {nil} => {nil}\n  | {cons} x t => {app} ({rev} t) ({cons} x {nil})",
    "len": "def {len} : {L} → Nat\n  | {nil} => 0\n  | {cons} _ t => {len} t + 1",
    "sum": "def {sum} : {L} → Nat\n  | {nil} => 0\n  | {cons} x t => x + {sum} t",
    "count": "def {count} (k : Nat) : {L} → Nat\n  | {nil} => 0\n"
             "  | {cons} x t => if x = k then {count} k t + 1 else {count} k t",
    "map": "def {map} (f : Nat → Nat) : {L} → {L}\n  | {nil} => {nil}\n  | {cons} x t => {cons} (f x) ({map} f t)",
    "revacc": "def {revacc} : {L} → {L} → {L}\n  | {nil}, acc => acc\n  | {cons} x t, acc => {revacc} t ({cons} x acc)",
}

HOLE_SHOWN = "  sorry"


def statement(d: Draft) -> str:
    proof = d.proofs["lean"]
    missing = [kind for kind in closure(d.uses) if kind not in DEFS]
    if missing:
        raise KeyError(f"no Lean rendering of {', '.join(missing)}")
    defs = [DEFS[kind].format_map(d.names) for kind in closure(d.uses)]
    if proof.defs:
        defs.append(proof.defs)
    body = "\n\n".join(defs)
    return f"{body}\n\ntheorem {d.theorem} {proof.claim} := by\n  {PROOF_HOLE}\n"


def prompt(d: Draft) -> str:
    shown = statement(d).replace(f"  {PROOF_HOLE}", HOLE_SHOWN)
    return f"{shown}\n{expected_format(FENCE_TAGS['lean'])}\n"


def fence(block: str) -> str:
    return f"```lean\n{block}\n```"
