"""M0, the de-risk rung: affine recursions with closed forms, single inductions over lists and
trees, and repeat/sum/len facts, one of which needs a small helper lemma. Rendered in Rocq and Lean."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family

RUNG = "m0"


def affine(nm: Namer, rng: random.Random) -> tuple[str, str, int, int]:
    """f 0 = b, f (k+1) = f k + c, so that f n = c*n + b. Rocq and Lean defs."""
    b, c = rng.randrange(0, 10), rng.randrange(2, 10)
    return (nm.fmt("Fixpoint {f} (n : nat) : nat :=\n  match n with 0 => {b} | S k => {f} k + {c} end.", b=b, c=c),
            nm.fmt("def {f} : Nat → Nat\n  | 0 => {b}\n  | k + 1 => {f} k + {c}", b=b, c=c), b, c)


@family(RUNG, "affine", tier=2)
def affine_closed(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    defs, lean_defs, b, c = affine(nm, rng)
    claim = nm.fmt("{f} n = {c} * n + {b}", b=b, c=c)
    return Draft("affine", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(defs, f"forall n, {claim}", "intros n. induction n as [|k IH]; simpl; lia."),
        "lean": Proof(lean_defs, f"(n : Nat) : {claim}", nm.fmt(
            "induction n with\n| zero => simp [{f}]\n| succ k ih => simp only [{f}, ih] <;> omega")),
    })


@family(RUNG, "repeat_sum", tier=2)
def repeat_sum(rng: random.Random) -> Draft:
    nm = Namer(rng, ("rep", "sum"))
    c = rng.randrange(2, 10)
    claim = nm.fmt("{sum} ({rep} {c} n) = {c} * n", c=c)
    return Draft("repeat_sum", nm.names["thm"], ("rep", "sum"), nm.names, "n", {
        "rocq": Proof("", f"forall n, {claim}", "intros n. induction n as [|k IH]; simpl; lia."),
        "lean": Proof("", f"(n : Nat) : {claim}", nm.fmt(
            "induction n with\n| zero => simp [{rep}, {sum}]\n| succ k ih => simp only [{rep}, {sum}, ih] <;> omega")),
    })


@family(RUNG, "repeat_len", tier=3)
def repeat_len(rng: random.Random) -> Draft:
    nm = Namer(rng, ("rep", "len", "app"))
    c = rng.randrange(0, 10)
    main = "induction l as [|x t IH]; simpl; {h}lia."
    claim = nm.fmt("{len} ({app} l ({rep} {c} n)) = {len} l + n", c=c)
    lean_main = nm.fmt("induction l with\n| {nil} => simp only [{app}, {len}{h}] <;> omega\n"
                       "| {cons} x t ih => simp only [{app}, {len}, ih] <;> omega", h="{h}")
    return Draft("repeat_len", nm.names["thm"], ("rep", "len", "app"), nm.names, "l", {
        "rocq": Proof(
            "", f"forall l n, {claim}",
            nm.fmt("intros l n.\nassert (H: forall m, {len} ({rep} {c} m) = m) by (induction m; simpl; auto).\n",
                   c=c) + main.format(h="rewrite ?H; "),
            "intros l n.\n" + main.format(h="")),
        "lean": Proof(
            "", nm.fmt("(l : {L}) (n : Nat) : ") + claim,
            nm.fmt("have h : ∀ m, {len} ({rep} {c} m) = m := by intro m; induction m with"
                   " | zero => simp [{rep}, {len}] | succ k ih => simp only [{rep}, {len}, ih]\n", c=c)
            + lean_main.format(h=", h"),
            lean_main.format(h="")),
    })


@family(RUNG, "sum_app", tier=2)
def sum_app(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sum", "app"))
    claim = nm.fmt("{sum} ({app} a b) = {sum} b + {sum} a")
    return Draft("sum_app", nm.names["thm"], ("sum", "app"), nm.names, "a", {
        "rocq": Proof("", f"forall a b, {claim}", "intros a b. induction a as [|x t IH]; simpl; lia."),
        "lean": Proof("", nm.fmt("(a b : {L}) : ") + claim, nm.fmt(
            "induction a with\n| {nil} => simp only [{app}, {sum}] <;> omega\n"
            "| {cons} x t ih => simp only [{app}, {sum}, ih] <;> omega")),
    })


@family(RUNG, "mirror_size", tier=3)
def mirror_size(rng: random.Random) -> Draft:
    nm = Namer(rng, ("mirror", "size"))
    claim = nm.fmt("{size} ({mirror} t) = {size} t")
    return Draft("mirror_size", nm.names["thm"], ("mirror", "size"), nm.names, "t", {
        "rocq": Proof("", f"forall t, {claim}", "induction t as [|l IHl x r IHr]; simpl; lia."),
        "lean": Proof("", nm.fmt("(t : {T}) : ") + claim, nm.fmt(
            "induction t with\n| {leaf} => rfl\n"
            "| {node} l x r ihl ihr => simp only [{mirror}, {size}, ihl, ihr] <;> omega")),
    })


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    defs, lean_defs, b, c = affine(nm, rng)
    x = rng.randrange(3, 10)
    claim = nm.fmt("{f} {x} = {v}", x=x, v=c * x + b)
    return Draft("concrete", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(defs, claim, "reflexivity."),
        "lean": Proof(lean_defs, f": {claim}", "rfl"),
    })
