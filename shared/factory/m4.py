"""M4, the cliff: a positional insert with a test in its recursion, sum over a flattened tree,
an implication proved by induction on the hypothesis with a positivity helper, a helper chain
through two structures, and a double induction with a case split. Rendered in Rocq and Lean."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family, list_term
from shared.factory.m1 import LEAN_APP_ASSOC, LEAN_APP_NIL, ROCQ_APP_ASSOC, ROCQ_APP_NIL
from shared.factory.m2 import LEAN_REV_APP, ROCQ_REV_APP

RUNG = "m4"
# The insert-count lemma, proved inline (M5's isort_count reuses it as its helper).
ROCQ_INS_COUNT = ("induction l as [|x t IH]; simpl; [destruct (Nat.eqb k j); reflexivity|].\n"
                  "destruct (Nat.leb k x); simpl; [|rewrite IH]; {split}simpl; lia.")
INS_SPLIT = "destruct (Nat.eqb x j), (Nat.eqb k j); "
# The same lemma in Lean, one line per constructor. Every test is split with `split` (which adds
# the case as a hypothesis and rewrites nothing), so `ih` keeps matching and omega sees the cases.
LEAN_INS_COUNT = ("| {nil} => simp only [{ins}, {count}] <;> (repeat' split) <;> omega\n"
                  "| {cons} x t ih => simp only [{ins}] <;> (repeat' split) <;> simp only [{count}, ih]"
                  " <;> {split}omega")
LEAN_SPLIT = "(repeat' split) <;> "


@family(RUNG, "insert_count", tier=7)
def insert_count(rng: random.Random) -> Draft:
    nm = Namer(rng, ("ins", "count"))
    return Draft("insert_count", nm.names["thm"], ("ins", "count"), nm.names, "l", {
        "rocq": Proof(
            "", nm.fmt("forall j k l, {count} j ({ins} k l) = (if Nat.eqb k j then 1 else 0) + {count} j l"),
            "intros j k l.\n" + ROCQ_INS_COUNT.format(split=INS_SPLIT),
            "intros j k l.\n" + ROCQ_INS_COUNT.format(split="")),
        "lean": Proof(
            "", nm.fmt("(j k : Nat) (l : {L}) : {count} j ({ins} k l) = (if k = j then 1 else 0) + {count} j l"),
            "induction l with\n" + nm.fmt(LEAN_INS_COUNT, split=LEAN_SPLIT),
            "induction l with\n" + nm.fmt(LEAN_INS_COUNT, split="")),
    })


@family(RUNG, "flatten_tsum", tier=7)
def flatten_tsum(rng: random.Random) -> Draft:
    nm = Namer(rng, ("flatten", "tsum", "sum"))
    main = "induction t as [|l IHl x r IHr]; simpl; [reflexivity|].\n{h}simpl. lia."
    claim = nm.fmt("{sum} ({flatten} t) = {tsum} t")
    lean_main = nm.fmt("induction t with\n| {leaf} => rfl\n"
                       "| {node} l x r ihl ihr => simp only [{flatten}, {tsum}, {sum}, {h}ihl, ihr] <;> omega", h="{h}")
    return Draft("flatten_tsum", nm.names["thm"], ("flatten", "tsum", "sum"), nm.names, "t", {
        "rocq": Proof(
            "", f"forall t, {claim}",
            nm.fmt("assert (H: forall a b, {sum} ({app} a b) = {sum} a + {sum} b)"
                   " by (induction a as [|x t IH]; intros; simpl; [reflexivity| rewrite IH; lia]).\n")
            + main.format(h="rewrite H. "),
            main.format(h="")),
        "lean": Proof(
            "", nm.fmt("(t : {T}) : ") + claim,
            nm.fmt("have h : ∀ a b, {sum} ({app} a b) = {sum} a + {sum} b := by intro a b; induction a with"
                   " | {nil} => simp [{app}, {sum}] | {cons} x t ih => simp only [{app}, {sum}, ih] <;> omega\n")
            + lean_main.format(h="h, "),
            lean_main.format(h="")),
    })


@family(RUNG, "pow_lt_mono", tier=7)
def pow_lt_mono(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("pow",))
    b = rng.randrange(2, 6)
    defs = nm.fmt("Fixpoint {pow} (n : nat) : nat :=\n  match n with 0 => 1 | S k => {b} * {pow} k end.", b=b)
    main = "intros n m Hlt. induction Hlt as [|m Hle IH]; simpl; {h}lia."
    claim = nm.fmt("n < m → {pow} n < {pow} m")
    # Induction on the hypothesis, restated as the `Nat.le` it unfolds to: cases `refl` and `step`.
    lean_main = nm.fmt("intro hlt\n{h}have hle : n + 1 ≤ m := hlt\nclear hlt\ninduction hle with\n"
                       "| refl => simp only [{pow}, Nat.succ_eq_add_one] <;> omega\n"
                       "| step => simp only [{pow}, Nat.succ_eq_add_one] <;> omega", h="{h}")
    return Draft("pow_lt_mono", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(
            defs, nm.fmt("forall n m, n < m -> {pow} n < {pow} m"),
            nm.fmt("assert (Hp: forall k, 0 < {pow} k) by (induction k; simpl; lia).\n")
            + main.format(h="pose proof (Hp n); "),
            main.format(h="")),
        "lean": Proof(
            nm.fmt("def {pow} : Nat → Nat\n  | 0 => 1\n  | k + 1 => {b} * {pow} k", b=b), f"(n m : Nat) : {claim}",
            nm.fmt("have hp : ∀ k, 0 < {pow} k := by intro k; induction k with"
                   " | zero => simp [{pow}] | succ k ih => simp only [{pow}] <;> omega\n")
            + lean_main.format(h="have h0 := hp n\n"),
            lean_main.format(h="")),
    })


@family(RUNG, "rev_map_rev", tier=7)
def rev_map_rev(rng: random.Random) -> Draft:
    nm = Namer(rng, ("map", "rev"))
    hm = ("assert (Hm: forall a b, {map} f ({app} a b) = {app} ({map} f a) ({map} f b))"
          " by (induction a; intros; simpl; congruence).\n")
    main = "induction l as [|x t IH]; simpl; [reflexivity|].\nrewrite Hm, {h}IH. reflexivity."
    claim = nm.fmt("{rev} ({map} f ({rev} l)) = {map} f l")
    lean_hm = ("have hm : ∀ a b, {map} f ({app} a b) = {app} ({map} f a) ({map} f b) := by intro a b;"
               " induction a with | {nil} => rfl | {cons} x t ih => simp [{app}, {map}, ih]\n")
    lean_main = "induction l with\n| {nil} => rfl\n| {cons} x t ih => simp [{rev}, {map}, hm, {h}ih, {app}]"
    return Draft("rev_map_rev", nm.names["thm"], ("map", "rev"), nm.names, "l", {
        "rocq": Proof(
            "", f"forall f l, {claim}",
            nm.fmt(f"intros f l.\n{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n{ROCQ_REV_APP}\n{hm}") + main.format(h="Hr, "),
            nm.fmt(f"intros f l.\n{hm}") + main.format(h="")),
        "lean": Proof(
            "", nm.fmt("(f : Nat → Nat) (l : {L}) : ") + claim,
            nm.fmt(f"{LEAN_APP_NIL}\n{LEAN_APP_ASSOC}\n{LEAN_REV_APP}\n{lean_hm}{lean_main}", h="hr, "),
            nm.fmt(lean_hm + lean_main, h="")),
    })


@family(RUNG, "count_take_le", tier=7)
def count_take_le(rng: random.Random) -> Draft:
    nm = Namer(rng, ("count", "take"))
    lean = nm.fmt("induction n {gen}with\n| zero => simp [{take}, {count}]\n"
                  "| succ m ih => cases l with | {nil} => simp [{take}, {count}]"
                  " | {cons} x t => {spec}simp only [{take}, {count}] <;> (repeat' split) <;> omega",
                  gen="{gen}", spec="{spec}")
    return Draft("count_take_le", nm.names["thm"], ("count", "take"), nm.names, "n", {
        "rocq": Proof(
            "", nm.fmt("forall k n l, {count} k ({take} n l) <= {count} k l"),
            "intros k n. induction n as [|m IH]; intros l; destruct l as [|x t]; simpl; try lia.\n"
            "specialize (IH t). destruct (Nat.eqb x k); lia.",
            "intros k n l. induction n as [|m IH]; destruct l as [|x t]; simpl; try lia.\n"
            "destruct (Nat.eqb x k); lia."),
        "lean": Proof(
            "", nm.fmt("(k n : Nat) (l : {L}) : {count} k ({take} n l) ≤ {count} k l"),
            lean.format(gen="generalizing l ", spec="have := ih t; "), lean.format(gen="", spec="")),
    })


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, ("ins",))
    xs = sorted(rng.randrange(0, 10) for _ in range(rng.randrange(2, 5)))
    k = rng.randrange(0, 10)
    term = lambda ys: list_term(nm.names["nil"], nm.names["cons"], ys)  # noqa: E731
    claim = nm.fmt("{ins} {k} ({xs}) = {ys}", k=k, xs=term(xs), ys=term(sorted(xs + [k])))
    return Draft("concrete", nm.names["thm"], ("ins",), nm.names, "l", {
        "rocq": Proof("", claim, "reflexivity."),
        "lean": Proof("", f": {claim}", "rfl"),
    })
