"""Rocq rendering of a `Draft`: the fixed file with the proof hole, and the prompt.

Every task file starts with the same import line, so warm checker sessions (keyed by the import
prelude) serve every task of every rung."""
from __future__ import annotations

from shared.factory.core import Draft, closure
from shared.protocol import FENCE_TAGS, expected_format
from shared.schemas import PROOF_HOLE

PRELUDE = "Require Import Arith Lia.\n"
CHECKER = "coqc"

# The definition library, by kind; `{key}` is the task's fresh name for that key.
DEFS = {
    "list": "Inductive {L} : Type := {nil} | {cons} (x : nat) (t : {L}).",
    "tree": "Inductive {T} : Type := {leaf} | {node} (l : {T}) (x : nat) (r : {T}).",
    "app": "Fixpoint {app} (a b : {L}) : {L} :=\n"
           "  match a with {nil} => b | {cons} x t => {cons} x ({app} t b) end.",
    "rev": "Fixpoint {rev} (l : {L}) : {L} :=\n"
           "  match l with {nil} => {nil} | {cons} x t => {app} ({rev} t) ({cons} x {nil}) end.",
    "len": "Fixpoint {len} (l : {L}) : nat :=\n"
           "  match l with {nil} => 0 | {cons} _ t => S ({len} t) end.",
    "sum": "Fixpoint {sum} (l : {L}) : nat :=\n"
           "  match l with {nil} => 0 | {cons} x t => x + {sum} t end.",
    "count": "Fixpoint {count} (k : nat) (l : {L}) : nat :=\n"
             "  match l with {nil} => 0\n"
             "  | {cons} x t => if Nat.eqb x k then S ({count} k t) else {count} k t end.",
    "map": "Fixpoint {map} (f : nat -> nat) (l : {L}) : {L} :=\n"
           "  match l with {nil} => {nil} | {cons} x t => {cons} (f x) ({map} f t) end.",
    "filter": "Fixpoint {filter} (p : nat -> bool) (l : {L}) : {L} :=\n"
              "  match l with {nil} => {nil}\n"
              "  | {cons} x t => if p x then {cons} x ({filter} p t) else {filter} p t end.",
    "rep": "Fixpoint {rep} (x n : nat) : {L} :=\n"
           "  match n with 0 => {nil} | S k => {cons} x ({rep} x k) end.",
    "take": "Fixpoint {take} (n : nat) (l : {L}) : {L} :=\n"
            "  match n, l with 0, _ => {nil} | S _, {nil} => {nil}\n"
            "  | S m, {cons} x t => {cons} x ({take} m t) end.",
    "drop": "Fixpoint {drop} (n : nat) (l : {L}) : {L} :=\n"
            "  match n, l with 0, _ => l | S _, {nil} => {nil} | S m, {cons} _ t => {drop} m t end.",
    "revacc": "Fixpoint {revacc} (l acc : {L}) : {L} :=\n"
              "  match l with {nil} => acc | {cons} x t => {revacc} t ({cons} x acc) end.",
    "sumacc": "Fixpoint {sumacc} (l : {L}) (acc : nat) : nat :=\n"
              "  match l with {nil} => acc | {cons} x t => {sumacc} t (acc + x) end.",
    "ins": "Fixpoint {ins} (k : nat) (l : {L}) : {L} :=\n"
           "  match l with {nil} => {cons} k {nil}\n"
           "  | {cons} x t => if Nat.leb k x then {cons} k l else {cons} x ({ins} k t) end.",
    "isort": "Fixpoint {isort} (l : {L}) : {L} :=\n"
             "  match l with {nil} => {nil} | {cons} x t => {ins} x ({isort} t) end.",
    "sorted": "Fixpoint {sorted} (l : {L}) : bool :=\n"
              "  match l with {cons} x (({cons} y _) as t) => Nat.leb x y && {sorted} t | _ => true end.",
    "mirror": "Fixpoint {mirror} (t : {T}) : {T} :=\n"
              "  match t with {leaf} => {leaf} | {node} l x r => {node} ({mirror} r) x ({mirror} l) end.",
    "size": "Fixpoint {size} (t : {T}) : nat :=\n"
            "  match t with {leaf} => 0 | {node} l _ r => {size} l + S ({size} r) end.",
    "tsum": "Fixpoint {tsum} (t : {T}) : nat :=\n"
            "  match t with {leaf} => 0 | {node} l x r => {tsum} l + x + {tsum} r end.",
    "height": "Fixpoint {height} (t : {T}) : nat :=\n"
              "  match t with {leaf} => 0 | {node} l _ r => S (Nat.max ({height} l) ({height} r)) end.",
    "flatten": "Fixpoint {flatten} (t : {T}) : {L} :=\n"
               "  match t with {leaf} => {nil}\n"
               "  | {node} l x r => {app} ({flatten} l) ({cons} x ({flatten} r)) end.",
    "tsumacc": "Fixpoint {tsumacc} (t : {T}) (acc : nat) : nat :=\n"
               "  match t with {leaf} => acc | {node} l x r => {tsumacc} l (x + {tsumacc} r acc) end.",
}

HOLE_SHOWN = "  (* your proof *)"


def statement(d: Draft) -> str:
    """The whole fixed file, with the line `{{PROOF}}` where the answer's block goes."""
    proof = d.proofs["rocq"]
    defs = [DEFS[kind].format_map(d.names) for kind in closure(d.uses)]
    if proof.defs:
        defs.append(proof.defs)
    body = "\n".join(defs)
    return (f"{PRELUDE}\n{body}\n\nTheorem {d.theorem} : {proof.claim}.\n"
            f"Proof.\n{PROOF_HOLE}\nQed.\n")


def prompt(d: Draft) -> str:
    shown = statement(d).replace(PROOF_HOLE, HOLE_SHOWN)
    return f"{shown}\n{expected_format(FENCE_TAGS['rocq'])}\n"


def fence(block: str) -> str:
    return f"```coq\n{block}\n```"
