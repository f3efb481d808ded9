"""M0, the de-risk rung: affine recursions with closed forms, single inductions over lists and
trees, and repeat/sum/len facts, one of which needs a small helper lemma. Rocq only."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family

RUNG = "m0"


def affine(nm: Namer, rng: random.Random) -> tuple[str, int, int]:
    """f 0 = b, f (k+1) = f k + c, so that f n = c*n + b."""
    b, c = rng.randrange(0, 10), rng.randrange(2, 10)
    return nm.fmt("Fixpoint {f} (n : nat) : nat :=\n  match n with 0 => {b} | S k => {f} k + {c} end.",
                  b=b, c=c), b, c


@family(RUNG, "affine", tier=2)
def affine_closed(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    defs, b, c = affine(nm, rng)
    return Draft("affine", nm.names["thm"], (), nm.names, "n", {"rocq": Proof(
        defs, nm.fmt("forall n, {f} n = {c} * n + {b}", b=b, c=c),
        "intros n. induction n as [|k IH]; simpl; lia.")})


@family(RUNG, "repeat_sum", tier=2)
def repeat_sum(rng: random.Random) -> Draft:
    nm = Namer(rng, ("rep", "sum"))
    c = rng.randrange(2, 10)
    return Draft("repeat_sum", nm.names["thm"], ("rep", "sum"), nm.names, "n", {"rocq": Proof(
        "", nm.fmt("forall n, {sum} ({rep} {c} n) = {c} * n", c=c),
        "intros n. induction n as [|k IH]; simpl; lia.")})


@family(RUNG, "repeat_len", tier=3)
def repeat_len(rng: random.Random) -> Draft:
    nm = Namer(rng, ("rep", "len", "app"))
    c = rng.randrange(0, 10)
    main = "induction l as [|x t IH]; simpl; {h}lia."
    return Draft("repeat_len", nm.names["thm"], ("rep", "len", "app"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall l n, {len} ({app} l ({rep} {c} n)) = {len} l + n", c=c),
        nm.fmt("intros l n.\nassert (H: forall m, {len} ({rep} {c} m) = m) by (induction m; simpl; auto).\n",
               c=c) + main.format(h="rewrite ?H; "),
        "intros l n.\n" + main.format(h=""))})


@family(RUNG, "sum_app", tier=2)
def sum_app(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sum", "app"))
    return Draft("sum_app", nm.names["thm"], ("sum", "app"), nm.names, "a", {"rocq": Proof(
        "", nm.fmt("forall a b, {sum} ({app} a b) = {sum} b + {sum} a"),
        "intros a b. induction a as [|x t IH]; simpl; lia.")})


@family(RUNG, "mirror_size", tier=3)
def mirror_size(rng: random.Random) -> Draft:
    nm = Namer(rng, ("mirror", "size"))
    return Draft("mirror_size", nm.names["thm"], ("mirror", "size"), nm.names, "t", {"rocq": Proof(
        "", nm.fmt("forall t, {size} ({mirror} t) = {size} t"),
        "induction t as [|l IHl x r IHr]; simpl; lia.")})


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    defs, b, c = affine(nm, rng)
    x = rng.randrange(3, 10)
    return Draft("concrete", nm.names["thm"], (), nm.names, "n", {"rocq": Proof(
        defs, nm.fmt("{f} {x} = {v}", x=x, v=c * x + b), "reflexivity.")})
