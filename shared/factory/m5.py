"""M5, the target rung: insertion sort (it permutes by counts, keeps the length, and sorts),
flatten of a mirrored tree through a three-helper chain, and a closed form with real division.
Rocq only."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family, list_term
from shared.factory.m1 import ROCQ_APP_ASSOC, ROCQ_APP_NIL
from shared.factory.m2 import ROCQ_REV_APP
from shared.factory.m4 import INS_SPLIT, ROCQ_INS_COUNT

RUNG = "m5"


@family(RUNG, "isort_count", tier=8)
def isort_count(rng: random.Random) -> Draft:
    nm = Namer(rng, ("isort", "count"))
    main = ("induction l as [|x t IH]; simpl; [reflexivity|].\n"
            "rewrite {h}IH. destruct (Nat.eqb x j); reflexivity.")
    helper = ("assert (H: forall k l, {count} j ({ins} k l) = (if Nat.eqb k j then 1 else 0) + {count} j l).\n"
              "{{ intros k l. " + ROCQ_INS_COUNT.format(split=INS_SPLIT).replace("\n", " ") + " }}\n")
    return Draft("isort_count", nm.names["thm"], ("isort", "count"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall j l, {count} j ({isort} l) = {count} j l"),
        "intros j.\n" + nm.fmt(helper) + main.format(h="H, "),
        "intros j.\n" + main.format(h=""))})


@family(RUNG, "isort_len", tier=8)
def isort_len(rng: random.Random) -> Draft:
    nm = Namer(rng, ("isort", "len"))
    main = "induction l as [|x t IH]; simpl; [reflexivity|].\nrewrite {h}IH. reflexivity."
    return Draft("isort_len", nm.names["thm"], ("isort", "len"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall l, {len} ({isort} l) = {len} l"),
        nm.fmt("assert (H: forall k l, {len} ({ins} k l) = S ({len} l)) by (induction l as [|x t IH];"
               " simpl; [reflexivity| destruct (Nat.leb k x); simpl; congruence]).\n") + main.format(h="H, "),
        main.format(h=""))})


@family(RUNG, "isort_sorted", tier=8)
def isort_sorted(rng: random.Random) -> Draft:
    nm = Namer(rng, ("isort", "sorted"))
    main = "induction l as [|x t IH]; simpl; [reflexivity|].\n{h}"
    helper = (
        "assert (H: forall k l, {sorted} l = true -> {sorted} ({ins} k l) = true).\n"
        "{{ intros k l. induction l as [|x t IH]; intros Hs; [reflexivity|].\n"
        "  simpl. destruct (Nat.leb k x) eqn:E; [simpl; rewrite E; exact Hs|].\n"
        "  apply Nat.leb_gt in E. destruct t as [|y u]; simpl in *.\n"
        "  - replace (Nat.leb x k) with true by (symmetry; apply Nat.leb_le; lia). reflexivity.\n"
        "  - apply Bool.andb_true_iff in Hs as [Hxy Hu]. specialize (IH Hu).\n"
        "    destruct (Nat.leb k y) eqn:E2; simpl in *.\n"
        "    + replace (Nat.leb x k) with true by (symmetry; apply Nat.leb_le; lia). rewrite E2. exact Hu.\n"
        "    + rewrite Hxy. exact IH. }}\n")
    return Draft("isort_sorted", nm.names["thm"], ("isort", "sorted"), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("forall l, {sorted} ({isort} l) = true"),
        nm.fmt(helper) + main.format(h="apply H. exact IH."),
        main.format(h="destruct ({isort} t); simpl in *; auto.".format_map(nm.names)))})


@family(RUNG, "mirror_flatten", tier=8)
def mirror_flatten(rng: random.Random) -> Draft:
    nm = Namer(rng, ("flatten", "mirror", "rev"))
    main = ("induction t as [|l IHl x r IHr]; simpl; [reflexivity|].\n"
            "rewrite IHl, IHr{h}. simpl. rewrite Ha. reflexivity.")
    return Draft("mirror_flatten", nm.names["thm"], ("flatten", "mirror", "rev"), nm.names, "t", {"rocq": Proof(
        "", nm.fmt("forall t, {flatten} ({mirror} t) = {rev} ({flatten} t)"),
        nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n{ROCQ_REV_APP}\n") + main.format(h=", Hr"),
        nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n") + main.format(h=""))})


@family(RUNG, "gauss_div", tier=8)
def gauss_div(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    a = rng.randrange(0, 10)
    defs = nm.fmt("Fixpoint {f} (n : nat) : nat :=\n  match n with 0 => {a} | S k => {f} k + S k end.", a=a)
    return Draft("gauss_div", nm.names["thm"], (), nm.names, "n", {"rocq": Proof(
        defs, nm.fmt("forall n, {f} n = n * (n + 1) / 2 + {a}", a=a),
        nm.fmt("intros n.\nassert (H: forall m, 2 * {f} m = m * (m + 1) + 2 * {a})"
               " by (induction m; simpl; lia).\n"
               "rewrite <- Nat.div_add by lia. rewrite <- (Nat.div_mul ({f} n) 2) by lia.\n"
               "f_equal. specialize (H n). lia.", a=a),
        "intros n. induction n; simpl; lia.")})


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, ("isort",))
    xs = [rng.randrange(0, 10) for _ in range(rng.randrange(3, 6))]
    term = lambda ys: list_term(nm.names["nil"], nm.names["cons"], ys)  # noqa: E731
    return Draft("concrete", nm.names["thm"], ("isort",), nm.names, "l", {"rocq": Proof(
        "", nm.fmt("{isort} ({xs}) = {ys}", xs=term(xs), ys=term(sorted(xs))), "reflexivity.")})
