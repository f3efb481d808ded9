"""M3, accumulators and double induction: generalising over the accumulator (lists and trees),
take/drop with the induction hypothesis applied at the tail, power of a product, and filter
idempotence where the case hypothesis must be reused. Rocq only."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family, list_term

RUNG = "m3"


@family(RUNG, "sumacc", tier=6)
def sumacc(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sumacc", "sum"))
    return Draft("sumacc", nm.names["thm"], ("sumacc", "sum"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall l, {sumacc} l 0 = {sum} l"),
        nm.fmt("assert (H: forall l acc, {sumacc} l acc = {sum} l + acc)"
               " by (induction l as [|x t IH]; intros; simpl; [lia| rewrite IH; lia]).\n"
               "intros l. rewrite H. lia."),
        "intros l. induction l as [|x t IH]; simpl; lia.")})


@family(RUNG, "tsumacc", tier=7)
def tsumacc(rng: random.Random) -> Draft:
    nm = Namer(rng, ("tsumacc", "tsum"))
    return Draft("tsumacc", nm.names["thm"], ("tsumacc", "tsum"), nm.names, "t", {"rocq": Proof(
        "", nm.fmt("forall t, {tsumacc} t 0 = {tsum} t"),
        nm.fmt("assert (H: forall t acc, {tsumacc} t acc = {tsum} t + acc)"
               " by (induction t as [|l IHl x r IHr]; intros; simpl; [lia| rewrite IHl, IHr; lia]).\n"
               "intros t. rewrite H. lia."),
        "intros t. induction t as [|l IHl x r IHr]; simpl; lia.")})


@family(RUNG, "takedrop_len", tier=6)
def takedrop_len(rng: random.Random) -> Draft:
    nm = Namer(rng, ("take", "drop", "len"))
    return Draft("takedrop_len", nm.names["thm"], ("take", "drop", "len"), nm.names, "n", {"rocq": Proof(
        "", nm.fmt("forall n l, {len} ({take} n l) + {len} ({drop} n l) = {len} l"),
        "intros n. induction n as [|m IH]; intros l; destruct l as [|x t]; simpl; try reflexivity.\n"
        "specialize (IH t). lia.",
        "intros n l. induction n as [|m IH]; destruct l as [|x t]; simpl; try reflexivity.\nlia.")})


@family(RUNG, "pow_mul", tier=7)
def pow_mul(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("pow",))
    defs = nm.fmt("Fixpoint {pow} (b n : nat) : nat :=\n  match n with 0 => 1 | S k => b * {pow} b k end.")
    main = ("induction m as [|m IH]; simpl.\n- rewrite Nat.mul_0_r. reflexivity.\n"
            "- rewrite Nat.mul_succ_r, {h}IH. lia.")
    return Draft("pow_mul", nm.names["thm"], (), nm.names, "m", {"rocq": Proof(
        defs, nm.fmt("forall b n m, {pow} b (n * m) = {pow} ({pow} b n) m"),
        nm.fmt("intros b n m.\nassert (H: forall x y, {pow} b (x + y) = {pow} b x * {pow} b y)"
               " by (induction x as [|x IHx]; intros; simpl; [lia| rewrite IHx; lia]).\n")
        + main.format(h="H, "),
        "intros b n m.\n" + main.format(h=""))})


@family(RUNG, "filter_idem", tier=6)
def filter_idem(rng: random.Random) -> Draft:
    nm = Namer(rng, ("filter",))
    return Draft("filter_idem", nm.names["thm"], ("filter",), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall p l, {filter} p ({filter} p l) = {filter} p l"),
        "intros p l. induction l as [|x t IH]; simpl; [reflexivity|].\n"
        "destruct (p x) eqn:E; simpl; [rewrite E, IH; reflexivity | exact IH].",
        "intros p l. induction l as [|x t IH]; simpl; [reflexivity|].\n"
        "destruct (p x); simpl; congruence.")})


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sumacc",))
    xs = [rng.randrange(0, 10) for _ in range(rng.randrange(2, 6))]
    acc = rng.randrange(0, 10)
    return Draft("concrete", nm.names["thm"], ("sumacc",), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("{sumacc} ({xs}) {acc} = {v}", acc=acc, v=acc + sum(xs),
                   xs=list_term(nm.names["nil"], nm.names["cons"], xs)), "reflexivity.")})
