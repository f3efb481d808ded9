"""M1, the first hard tier: a nonlinear closed form, composing a closed form with itself, and
three list facts that each need a helper lemma (map over append, fold over append, and the
accumulator reverse whose helper must be quantified over the accumulator). Rendered in Rocq and
Lean."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family

RUNG = "m1"
# Helper proofs several families state inline (the block may not declare lemmas).
ROCQ_APP_NIL = "assert (Hn: forall a, {app} a {nil} = a) by (induction a; simpl; congruence)."
ROCQ_APP_ASSOC = ("assert (Ha: forall a b c, {app} ({app} a b) c = {app} a ({app} b c))"
                  " by (induction a; intros; simpl; congruence).")
LEAN_APP_NIL = ("have hn : ∀ a, {app} a {nil} = a := by intro a; induction a with"
                " | {nil} => rfl | {cons} x t ih => simp [{app}, ih]")
LEAN_APP_ASSOC = ("have ha : ∀ a b c, {app} ({app} a b) c = {app} a ({app} b c) := by intro a b c;"
                  " induction a with | {nil} => rfl | {cons} x t ih => simp [{app}, ih]")


def quadratic(nm: Namer, rng: random.Random) -> tuple[str, str, int, int]:
    """f 0 = b, f (k+1) = f k + 2k + (a+1), so that f n = n*n + a*n + b. Rocq and Lean defs."""
    a, b = rng.randrange(1, 6), rng.randrange(0, 10)
    rocq = nm.fmt("Fixpoint {f} (n : nat) : nat :=\n  match n with 0 => {b} | S k => {f} k + 2 * k + {c} end.",
                  b=b, c=a + 1)
    lean = nm.fmt("def {f} : Nat → Nat\n  | 0 => {b}\n  | k + 1 => {f} k + 2 * k + {c}", b=b, c=a + 1)
    return rocq, lean, a, b


@family(RUNG, "poly_square", tier=4)
def poly_square(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    rocq_def, lean_def, a, b = quadratic(nm, rng)
    claim = nm.fmt("{f} n = n * n + {a} * n + {b}", a=a, b=b)
    return Draft("poly_square", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(rocq_def, f"forall n, {claim}",
                      "intros n. induction n as [|k IH]; simpl; lia."),
        "lean": Proof(lean_def, f"(n : Nat) : {claim}", nm.fmt(
            "induction n with\n| zero => simp [{f}]\n"
            "| succ k ih => simp only [{f}, ih, Nat.add_mul, Nat.mul_add, Nat.mul_one, Nat.one_mul]; omega")),
    })


@family(RUNG, "compose_affine", tier=4)
def compose_affine(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("g",))
    a, c = rng.randrange(1, 10), rng.randrange(2, 8)
    consts = dict(a=a, c=c, cc=c * c, ca=c * a + a)
    claim = nm.fmt("{g} ({g} n) = {cc} * n + {ca}", **consts)
    return Draft("compose_affine", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(
            nm.fmt("Fixpoint {g} (n : nat) : nat :=\n  match n with 0 => {a} | S k => {g} k + {c} end.", **consts),
            f"forall n, {claim}",
            nm.fmt("intros n.\nassert (H: forall m, {g} m = {c} * m + {a}) by (induction m; simpl; lia).\n"
                   "rewrite !H. lia.", **consts),
            "intros n. induction n; simpl; lia."),
        "lean": Proof(
            nm.fmt("def {g} : Nat → Nat\n  | 0 => {a}\n  | k + 1 => {g} k + {c}", **consts),
            f"(n : Nat) : {claim}",
            nm.fmt("have h : ∀ m, {g} m = {c} * m + {a} := by intro m; induction m with"
                   " | zero => simp [{g}] | succ k ih => simp only [{g}, ih]; omega\n"
                   "rw [h, h]; omega", **consts),
            nm.fmt("induction n with\n| zero => simp [{g}]\n| succ k ih => simp only [{g}] <;> omega")),
    })


@family(RUNG, "map_rev", tier=4)
def map_rev(rng: random.Random) -> Draft:
    nm = Namer(rng, ("map", "rev"))
    claim = nm.fmt("{map} f ({rev} l) = {rev} ({map} f l)")
    helper = ("assert (H: forall a b, {map} f ({app} a b) = {app} ({map} f a) ({map} f b))"
              " by (induction a; intros; simpl; congruence).\n")
    main = "induction l as [|x t IH]; simpl; [reflexivity|].\nrewrite {h}IH. reflexivity."
    return Draft("map_rev", nm.names["thm"], ("map", "rev"), nm.names, "l", {
        "rocq": Proof("", f"forall f l, {claim}",
                      nm.fmt("intros f l.\n" + helper + main, h="H, "),
                      nm.fmt("intros f l.\n" + main, h="")),
        "lean": Proof("", nm.fmt("(f : Nat → Nat) (l : {L}) : ") + claim, nm.fmt(
            "have h : ∀ a b, {map} f ({app} a b) = {app} ({map} f a) ({map} f b) := by intro a b;"
            " induction a with | {nil} => rfl | {cons} x t ih => simp [{app}, {map}, ih]\n"
            "induction l with\n| {nil} => rfl\n| {cons} x t ih => simp [{rev}, {map}, h, ih]"),
            nm.fmt("induction l with\n| {nil} => rfl\n| {cons} x t ih => simp [{rev}, {map}, ih]")),
    })


@family(RUNG, "fold_rev", tier=4)
def fold_rev(rng: random.Random) -> Draft:
    by_count = rng.random() < 0.5
    fold = "count" if by_count else "sum"
    nm = Namer(rng, (fold, "rev"))
    k = "k " if by_count else ""
    claim = nm.fmt("{fold} {k}({rev} l) = {fold} {k}l", fold=nm.names[fold], k=k)
    close = "destruct (Nat.eqb x k); lia" if by_count else "lia"
    helper = nm.fmt("assert (H: forall a b, {fold} {k}({app} a b) = {fold} {k}a + {fold} {k}b)"
                    " by (induction a as [|x t IH]; intros; simpl; [reflexivity| rewrite IH; {close}]).\n",
                    fold=nm.names[fold], k=k, close=close)
    main = f"induction l as [|x t IH]; simpl; [reflexivity|].\n{{h}}simpl. {close}."
    lean_close = "by_cases hx : x = k <;> simp [hx] <;> omega" if by_count else "omega"
    return Draft("fold_rev", nm.names["thm"], (fold, "rev"), nm.names, "l", {
        "rocq": Proof("", f"forall {k}l, {claim}",
                      f"intros {k}l.\n" + helper + main.format(h="rewrite H. "),
                      f"intros {k}l.\n" + main.format(h="")),
        "lean": Proof("", nm.fmt("{k}(l : {L}) : ", k="(k : Nat) " if by_count else "") + claim, nm.fmt(
            "have h : ∀ a b, {fold} {k}({app} a b) = {fold} {k}a + {fold} {k}b := by intro a b;"
            " induction a with | {nil} => simp [{app}, {fold}] | {cons} x t ih =>"
            " simp only [{app}, {fold}, ih]; {close}\n"
            "induction l with\n| {nil} => rfl\n| {cons} x t ih => simp only [{rev}, {fold}, h, ih]; {close}",
            fold=nm.names[fold], k=k, close=lean_close), nm.fmt(
            "induction l with\n| {nil} => rfl\n| {cons} x t ih => simp only [{rev}, {fold}, ih]; {close}",
            fold=nm.names[fold], close=lean_close)),
    })


@family(RUNG, "revacc", tier=5)
def revacc(rng: random.Random) -> Draft:
    nm = Namer(rng, ("revacc", "rev"))
    claim = nm.fmt("{revacc} l {nil} = {rev} l")
    helper = ("assert (H: forall l acc, {revacc} l acc = {app} ({rev} l) acc)"
              " by (induction l as [|x t IH]; intros acc; simpl; [reflexivity| rewrite IH, Ha; reflexivity]).\n")
    return Draft("revacc", nm.names["thm"], ("revacc", "rev"), nm.names, "l", {
        "rocq": Proof("", f"forall l, {claim}", nm.fmt(
            f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n{helper}intros l. rewrite H. apply Hn."), nm.fmt(
            f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n"
            "induction l as [|x t IH]; simpl; [reflexivity|]. rewrite <- IH, Ha. reflexivity.")),
        "lean": Proof("", nm.fmt("(l : {L}) : ") + claim, nm.fmt(
            f"{LEAN_APP_NIL}\n{LEAN_APP_ASSOC}\n"
            "have h : ∀ l acc, {revacc} l acc = {app} ({rev} l) acc := by intro l; induction l with"
            " | {nil} => intro acc; rfl | {cons} x t ih => intro acc; simp [{revacc}, {rev}, ih, ha, {app}]\n"
            "rw [h, hn]"), nm.fmt(
            f"{LEAN_APP_NIL}\n{LEAN_APP_ASSOC}\n"
            "induction l with\n| {nil} => rfl\n| {cons} x t ih => simp [{revacc}, {rev}, ha, {app}]")),
    })


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f",))
    rocq_def, lean_def, a, b = quadratic(nm, rng)
    x = rng.randrange(3, 10)
    claim = nm.fmt("{f} {x} = {v}", x=x, v=x * x + a * x + b)
    return Draft("concrete", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(rocq_def, claim, "reflexivity."),
        "lean": Proof(lean_def, f": {claim}", "rfl"),
    })
