"""Lean 4 rendering of a `Draft` (core Lean, no Mathlib): the fixed file with the proof hole
under `theorem … := by`, and the prompt.

Gold blocks are written one top-level tactic per line at column 0 (nested blocks stay on their
line, or on deeper-indented lines under it), so the harness only has to indent every line of a
block to the hole's column.

The definitions mirror `render_rocq.DEFS` one for one; where Rocq tests with `Nat.eqb`/`Nat.leb`
the Lean file uses the decidable propositions `x = k`/`k ≤ x` (`decide` where a `Bool` is built),
and Rocq's `S n` is `n + 1`."""
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
    "filter": "def {filter} (p : Nat → Bool) : {L} → {L}\n  | {nil} => {nil}\n"
              "  | {cons} x t => if p x then {cons} x ({filter} p t) else {filter} p t",
    "rep": "def {rep} (x : Nat) : Nat → {L}\n  | 0 => {nil}\n  | k + 1 => {cons} x ({rep} x k)",
    "take": "def {take} : Nat → {L} → {L}\n  | 0, _ => {nil}\n  | _ + 1, {nil} => {nil}\n"
            "  | m + 1, {cons} x t => {cons} x ({take} m t)",
    "drop": "def {drop} : Nat → {L} → {L}\n  | 0, l => l\n  | _ + 1, {nil} => {nil}\n  | m + 1, {cons} _ t => {drop} m t",
    "sumacc": "def {sumacc} : {L} → Nat → Nat\n  | {nil}, acc => acc\n  | {cons} x t, acc => {sumacc} t (acc + x)",
    "ins": "def {ins} (k : Nat) : {L} → {L}\n  | {nil} => {cons} k {nil}\n"
           "  | {cons} x t => if k ≤ x then {cons} k ({cons} x t) else {cons} x ({ins} k t)",
    "isort": "def {isort} : {L} → {L}\n  | {nil} => {nil}\n  | {cons} x t => {ins} x ({isort} t)",
    "sorted": "def {sorted} : {L} → Bool\n  | {nil} => true\n  | {cons} _ {nil} => true\n"
              "  | {cons} x ({cons} y t) => decide (x ≤ y) && {sorted} ({cons} y t)",
    "tree": "inductive {T} where\n  | {leaf} : {T}\n  | {node} (l : {T}) (x : Nat) (r : {T}) : {T}\nopen {T}",
    "mirror": "def {mirror} : {T} → {T}\n  | {leaf} => {leaf}\n  | {node} l x r => {node} ({mirror} r) x ({mirror} l)",
    "size": "def {size} : {T} → Nat\n  | {leaf} => 0\n  | {node} l _ r => {size} l + ({size} r + 1)",
    "tsum": "def {tsum} : {T} → Nat\n  | {leaf} => 0\n  | {node} l x r => {tsum} l + x + {tsum} r",
    "height": "def {height} : {T} → Nat\n  | {leaf} => 0\n  | {node} l _ r => max ({height} l) ({height} r) + 1",
    "flatten": "def {flatten} : {T} → {L}\n  | {leaf} => {nil}\n"
               "  | {node} l x r => {app} ({flatten} l) ({cons} x ({flatten} r))",
    "tsumacc": "def {tsumacc} : {T} → Nat → Nat\n  | {leaf}, acc => acc\n"
               "  | {node} l x r, acc => {tsumacc} l (x + {tsumacc} r acc)",
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
