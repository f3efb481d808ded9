"""M5, the target rung: insertion sort (it permutes by counts, keeps the length, and sorts),
flatten of a mirrored tree through a three-helper chain, and a closed form with real division.
Rendered in Rocq and Lean."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family, list_term
from shared.factory.m1 import LEAN_APP_ASSOC, LEAN_APP_NIL, ROCQ_APP_ASSOC, ROCQ_APP_NIL
from shared.factory.m2 import LEAN_REV_APP, ROCQ_REV_APP
from shared.factory.m4 import INS_SPLIT, LEAN_INS_COUNT, LEAN_SPLIT, ROCQ_INS_COUNT

RUNG = "m5"


@family(RUNG, "isort_count", tier=8)
def isort_count(rng: random.Random) -> Draft:
    nm = Namer(rng, ("isort", "count"))
    main = ("induction l as [|x t IH]; simpl; [reflexivity|].\n"
            "rewrite {h}IH. destruct (Nat.eqb x j); reflexivity.")
    helper = ("assert (H: forall k l, {count} j ({ins} k l) = (if Nat.eqb k j then 1 else 0) + {count} j l).\n"
              "{{ intros k l. " + ROCQ_INS_COUNT.format(split=INS_SPLIT).replace("\n", " ") + " }}\n")
    lean_helper = ("have h : ∀ k l, {count} j ({ins} k l) = (if k = j then 1 else 0) + {count} j l := by\n"
                   "  intro k l\n  induction l with\n  " + LEAN_INS_COUNT.replace("\n", "\n  ") + "\n")
    lean_main = ("induction l with\n| {nil} => rfl\n"
                 "| {cons} x t ih => simp only [{isort}, {count}, {h}ih] <;> (repeat' split) <;> omega")
    return Draft("isort_count", nm.names["thm"], ("isort", "count"), nm.names, "l", {
        "rocq": Proof(
            "", nm.fmt("forall j l, {count} j ({isort} l) = {count} j l"),
            "intros j.\n" + nm.fmt(helper) + main.format(h="H, "),
            "intros j.\n" + main.format(h="")),
        "lean": Proof(
            "", nm.fmt("(j : Nat) (l : {L}) : {count} j ({isort} l) = {count} j l"),
            nm.fmt(lean_helper + lean_main, split=LEAN_SPLIT, h="h, "), nm.fmt(lean_main, h="")),
    })


@family(RUNG, "isort_len", tier=8)
def isort_len(rng: random.Random) -> Draft:
    nm = Namer(rng, ("isort", "len"))
    main = "induction l as [|x t IH]; simpl; [reflexivity|].\nrewrite {h}IH. reflexivity."
    lean_main = nm.fmt("induction l with\n| {nil} => rfl\n| {cons} x t ih => simp only [{isort}, {len}, {h}ih]",
                       h="{h}")
    return Draft("isort_len", nm.names["thm"], ("isort", "len"), nm.names, "l", {
        "rocq": Proof(
            "", nm.fmt("forall l, {len} ({isort} l) = {len} l"),
            nm.fmt("assert (H: forall k l, {len} ({ins} k l) = S ({len} l)) by (induction l as [|x t IH];"
                   " simpl; [reflexivity| destruct (Nat.leb k x); simpl; congruence]).\n") + main.format(h="H, "),
            main.format(h="")),
        "lean": Proof(
            "", nm.fmt("(l : {L}) : {len} ({isort} l) = {len} l"),
            nm.fmt("have h : ∀ k l, {len} ({ins} k l) = {len} l + 1 := by intro k l; induction l with"
                   " | {nil} => rfl | {cons} x t ih => simp only [{ins}] <;> (repeat' split) <;> simp only [{len}, ih] <;> omega\n")
            + lean_main.format(h="h, "),
            lean_main.format(h="")),
    })


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
    # The Lean helper spans several lines (a structured case analysis), indented under its `have`.
    lean_helper = (
        "have h : ∀ k l, {sorted} l = true → {sorted} ({ins} k l) = true := by\n"
        "  intro k l\n"
        "  induction l with\n"
        "  | {nil} => intro _; simp [{ins}, {sorted}]\n"
        "  | {cons} x t ih =>\n"
        "    intro hs\n"
        "    by_cases hk : k ≤ x\n"
        "    · simp [{ins}, {sorted}, hk, hs]\n"
        "    · cases t with\n"
        "      | {nil} => simp [{ins}, {sorted}, hk] <;> omega\n"
        "      | {cons} y u =>\n"
        "        simp [{sorted}] at hs\n"
        "        by_cases hy : k ≤ y\n"
        "        · simp [{ins}, {sorted}, hk, hy, hs] <;> omega\n"
        "        · have h2 := ih hs.2\n"
        "          simp [{ins}, {sorted}, hk, hy] at h2 ⊢\n"
        "          first | exact ⟨hs.1, h2⟩ | simp_all | omega\n")
    lean_main = "induction l with\n| {nil} => simp [{isort}, {sorted}]\n| {cons} x t ih => {h}"
    return Draft("isort_sorted", nm.names["thm"], ("isort", "sorted"), nm.names, "l", {
        "rocq": Proof(
            "", nm.fmt("forall l, {sorted} ({isort} l) = true"),
            nm.fmt(helper) + main.format(h="apply H. exact IH."),
            main.format(h="destruct ({isort} t); simpl in *; auto.".format_map(nm.names))),
        "lean": Proof(
            "", nm.fmt("(l : {L}) : {sorted} ({isort} l) = true"),
            nm.fmt(lean_helper + lean_main, h=nm.fmt("simp only [{isort}]; exact h x _ ih")),
            nm.fmt(lean_main, h=nm.fmt("simp [{isort}, {sorted}, ih]"))),
    })


@family(RUNG, "mirror_flatten", tier=8)
def mirror_flatten(rng: random.Random) -> Draft:
    nm = Namer(rng, ("flatten", "mirror", "rev"))
    main = ("induction t as [|l IHl x r IHr]; simpl; [reflexivity|].\n"
            "rewrite IHl, IHr{h}. simpl. rewrite Ha. reflexivity.")
    lean_main = nm.fmt("induction t with\n| {leaf} => rfl\n"
                       "| {node} l x r ihl ihr => simp [{mirror}, {flatten}, ihl, ihr, {h}{rev}, ha, {app}]", h="{h}")
    return Draft("mirror_flatten", nm.names["thm"], ("flatten", "mirror", "rev"), nm.names, "t", {
        "rocq": Proof(
            "", nm.fmt("forall t, {flatten} ({mirror} t) = {rev} ({flatten} t)"),
            nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n{ROCQ_REV_APP}\n") + main.format(h=", Hr"),
            nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n") + main.format(h="")),
        "lean": Proof(
            "", nm.fmt("(t : {T}) : {flatten} ({mirror} t) = {rev} ({flatten} t)"),
            nm.fmt(f"{LEAN_APP_NIL}\n{LEAN_APP_ASSOC}\n{LEAN_REV_APP}\n") + lean_main.format(h="hr, "),
            nm.fmt(f"{LEAN_APP_NIL}\n{LEAN_APP_ASSOC}\n") + lean_main.format(h="")),
    })


@family(RUNG, "gauss_div", tier=8)
def gauss_div(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    a = rng.randrange(0, 10)
    defs = nm.fmt("Fixpoint {f} (n : nat) : nat :=\n  match n with 0 => {a} | S k => {f} k + S k end.", a=a)
    claim = nm.fmt("{f} n = n * (n + 1) / 2 + {a}", a=a)
    # omega divides by the literal 2 but cannot multiply n by n: the helper keeps n * (n + 1) as one
    # atom, and its step expands the products on both sides so that k * k is the shared atom.
    lean_helper = nm.fmt("have h : ∀ m, 2 * {f} m = m * (m + 1) + 2 * {a} := by intro m; induction m with"
                         " | zero => simp [{f}] | succ k ih =>"
                         " simp only [{f}, Nat.mul_add, Nat.add_mul, Nat.mul_one, Nat.one_mul] at ih ⊢; omega\n",
                         a=a)
    return Draft("gauss_div", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(
            defs, f"forall n, {claim}",
            nm.fmt("intros n.\nassert (H: forall m, 2 * {f} m = m * (m + 1) + 2 * {a})"
                   " by (induction m; simpl; lia).\n"
                   "rewrite <- Nat.div_add by lia. rewrite <- (Nat.div_mul ({f} n) 2) by lia.\n"
                   "f_equal. specialize (H n). lia.", a=a),
            "intros n. induction n; simpl; lia."),
        "lean": Proof(
            nm.fmt("def {f} : Nat → Nat\n  | 0 => {a}\n  | k + 1 => {f} k + (k + 1)", a=a), f"(n : Nat) : {claim}",
            lean_helper + "have := h n\nomega",
            nm.fmt("induction n with\n| zero => simp [{f}]\n| succ k ih => simp only [{f}] <;> omega")),
    })


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, ("isort",))
    xs = [rng.randrange(0, 10) for _ in range(rng.randrange(3, 6))]
    term = lambda ys: list_term(nm.names["nil"], nm.names["cons"], ys)  # noqa: E731
    claim = nm.fmt("{isort} ({xs}) = {ys}", xs=term(xs), ys=term(sorted(xs)))
    return Draft("concrete", nm.names["thm"], ("isort",), nm.names, "l", {
        "rocq": Proof("", claim, "reflexivity."),
        "lean": Proof("", f": {claim}", "rfl"),
    })
