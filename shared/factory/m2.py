"""M2, multi-helper chains: rev∘rev = id through three chained helpers, distributing a constant
factor through map, a double case-split under filter, two independent closed forms composed, and
a tree induction that needs max to commute. Rocq only."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family, list_term
from shared.factory.m1 import ROCQ_APP_ASSOC, ROCQ_APP_NIL

RUNG = "m2"
ROCQ_REV_APP = ("assert (Hr: forall a b, {rev} ({app} a b) = {app} ({rev} b) ({rev} a)) by (induction a; intros;"
                " simpl; [rewrite Hn; reflexivity | rewrite IHa, Ha; reflexivity]).")


@family(RUNG, "rev_invol", tier=6)
def rev_invol(rng: random.Random) -> Draft:
    nm = Namer(rng, ("rev",))
    main = "induction l as [|x t IH]; simpl; [reflexivity|].\nrewrite {h}IH. reflexivity."
    return Draft("rev_invol", nm.names["thm"], ("rev",), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall l, {rev} ({rev} l) = l"),
        nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n{ROCQ_REV_APP}\n") + main.format(h="Hr, "),
        nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n") + main.format(h=""))})


@family(RUNG, "sum_map_mul", tier=5)
def sum_map_mul(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sum", "map"))
    c = rng.randrange(2, 10)
    return Draft("sum_map_mul", nm.names["thm"], ("sum", "map"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall l, {sum} ({map} (fun x => {c} * x) l) = {c} * {sum} l", c=c),
        nm.fmt("intros l. induction l as [|x t IH]; [reflexivity|].\ncbn [{sum} {map}]. rewrite IH. lia."))})


@family(RUNG, "count_filter", tier=5)
def count_filter(rng: random.Random) -> Draft:
    nm = Namer(rng, ("count", "filter"))
    main = ("intros p k l. induction l as [|x t IH]; simpl; [lia|].\n"
            "destruct (p x); simpl; {split}lia.")
    return Draft("count_filter", nm.names["thm"], ("count", "filter"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall p k l, {count} k ({filter} p l) <= {count} k l"),
        main.format(split="destruct (Nat.eqb x k); "), main.format(split=""))})


def affine(nm: Namer, rng: random.Random, key: str) -> tuple[str, int, int]:
    a, c = rng.randrange(1, 10), rng.randrange(2, 6)
    return nm.fmt("Fixpoint {%s} (n : nat) : nat :=\n  match n with 0 => {a} | S k => {%s} k + {c} end." % (key, key),
                  a=a, c=c), a, c


@family(RUNG, "compose_two", tier=5)
def compose_two(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f", "g"))
    fdef, fa, fc = affine(nm, rng, "f")
    gdef, ga, gc = affine(nm, rng, "g")
    hf = "assert (Hf: forall m, {f} m = {fc} * m + {fa}) by (induction m; simpl; lia).\n"
    hg = "assert (Hg: forall m, {g} m = {gc} * m + {ga}) by (induction m; simpl; lia).\n"
    consts = dict(fa=fa, fc=fc, ga=ga, gc=gc, c=fc * gc, a=fc * ga + fa)
    return Draft("compose_two", nm.names["thm"], (), nm.names, "n", {"rocq": Proof(
        f"{fdef}\n{gdef}", nm.fmt("forall n, {f} ({g} n) = {c} * n + {a}", **consts),
        nm.fmt("intros n.\n" + hf + hg + "rewrite Hf, Hg. lia.", **consts),
        nm.fmt("intros n.\n" + hf + "rewrite Hf. lia.", **consts))})


@family(RUNG, "height_mirror", tier=5)
def height_mirror(rng: random.Random) -> Draft:
    nm = Namer(rng, ("height", "mirror"))
    main = "induction t as [|l IHl x r IHr]; simpl; [reflexivity|].\nrewrite IHl, IHr. {h}reflexivity."
    return Draft("height_mirror", nm.names["thm"], ("height", "mirror"), nm.names, "t", {"rocq": Proof(
        "", nm.fmt("forall t, {height} ({mirror} t) = {height} t"),
        main.format(h="rewrite Nat.max_comm. "), main.format(h=""))})


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sum", "map"))
    c = rng.randrange(2, 10)
    xs = [rng.randrange(0, 10) for _ in range(rng.randrange(2, 5))]
    return Draft("concrete", nm.names["thm"], ("sum", "map"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("{sum} ({map} (fun x => {c} * x) ({xs})) = {v}", c=c, v=c * sum(xs),
                   xs=list_term(nm.names["nil"], nm.names["cons"], xs)), "reflexivity.")})
