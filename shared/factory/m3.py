"""M3, accumulators and double induction: generalising over the accumulator (lists and trees),
take/drop with the induction hypothesis applied at the tail, power of a product, and filter
idempotence where the case hypothesis must be reused. Rendered in Rocq and Lean."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family, list_term

RUNG = "m3"


@family(RUNG, "sumacc", tier=6)
def sumacc(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sumacc", "sum"))
    claim = nm.fmt("{sumacc} l 0 = {sum} l")
    return Draft("sumacc", nm.names["thm"], ("sumacc", "sum"), nm.names, "l", {
        "rocq": Proof(
            "", f"forall l, {claim}",
            nm.fmt("assert (H: forall l acc, {sumacc} l acc = {sum} l + acc)"
                   " by (induction l as [|x t IH]; intros; simpl; [lia| rewrite IH; lia]).\n"
                   "intros l. rewrite H. lia."),
            "intros l. induction l as [|x t IH]; simpl; lia."),
        "lean": Proof(
            "", nm.fmt("(l : {L}) : ") + claim,
            nm.fmt("have h : ∀ l acc, {sumacc} l acc = {sum} l + acc := by intro l; induction l with"
                   " | {nil} => intro acc; simp [{sumacc}, {sum}]"
                   " | {cons} x t ih => intro acc; simp only [{sumacc}, {sum}, ih] <;> omega\n"
                   "rw [h] <;> omega"),
            nm.fmt("induction l with\n| {nil} => rfl\n| {cons} x t ih => simp only [{sumacc}, {sum}] <;> omega")),
    })


@family(RUNG, "tsumacc", tier=7)
def tsumacc(rng: random.Random) -> Draft:
    nm = Namer(rng, ("tsumacc", "tsum"))
    claim = nm.fmt("{tsumacc} t 0 = {tsum} t")
    return Draft("tsumacc", nm.names["thm"], ("tsumacc", "tsum"), nm.names, "t", {
        "rocq": Proof(
            "", f"forall t, {claim}",
            nm.fmt("assert (H: forall t acc, {tsumacc} t acc = {tsum} t + acc)"
                   " by (induction t as [|l IHl x r IHr]; intros; simpl; [lia| rewrite IHl, IHr; lia]).\n"
                   "intros t. rewrite H. lia."),
            "intros t. induction t as [|l IHl x r IHr]; simpl; lia."),
        "lean": Proof(
            "", nm.fmt("(t : {T}) : ") + claim,
            nm.fmt("have h : ∀ t acc, {tsumacc} t acc = {tsum} t + acc := by intro t; induction t with"
                   " | {leaf} => intro acc; simp [{tsumacc}, {tsum}]"
                   " | {node} l x r ihl ihr => intro acc; simp only [{tsumacc}, {tsum}, ihl, ihr] <;> omega\n"
                   "rw [h] <;> omega"),
            nm.fmt("induction t with\n| {leaf} => rfl\n"
                   "| {node} l x r ihl ihr => simp only [{tsumacc}, {tsum}] <;> omega")),
    })


@family(RUNG, "takedrop_len", tier=6)
def takedrop_len(rng: random.Random) -> Draft:
    nm = Namer(rng, ("take", "drop", "len"))
    claim = nm.fmt("{len} ({take} n l) + {len} ({drop} n l) = {len} l")
    lean = nm.fmt("induction n {gen}with\n| zero => simp [{take}, {drop}, {len}]\n"
                  "| succ m ih => cases l with | {nil} => simp [{take}, {drop}, {len}]"
                  " | {cons} x t => {spec}simp only [{take}, {drop}, {len}] <;> omega", gen="{gen}", spec="{spec}")
    return Draft("takedrop_len", nm.names["thm"], ("take", "drop", "len"), nm.names, "n", {
        "rocq": Proof(
            "", f"forall n l, {claim}",
            "intros n. induction n as [|m IH]; intros l; destruct l as [|x t]; simpl; try reflexivity.\n"
            "specialize (IH t). lia.",
            "intros n l. induction n as [|m IH]; destruct l as [|x t]; simpl; try reflexivity.\nlia."),
        "lean": Proof(
            "", nm.fmt("(n : Nat) (l : {L}) : ") + claim,
            lean.format(gen="generalizing l ", spec="have := ih t; "), lean.format(gen="", spec="")),
    })


@family(RUNG, "pow_mul", tier=7)
def pow_mul(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("pow",))
    defs = nm.fmt("Fixpoint {pow} (b n : nat) : nat :=\n  match n with 0 => 1 | S k => b * {pow} b k end.")
    main = ("induction m as [|m IH]; simpl.\n- rewrite Nat.mul_0_r. reflexivity.\n"
            "- rewrite Nat.mul_succ_r, {h}IH. lia.")
    claim = nm.fmt("{pow} b (n * m) = {pow} ({pow} b n) m")
    lean_main = nm.fmt("induction m with\n| zero => simp [{pow}]\n"
                       "| succ m ih => rw [Nat.mul_add, Nat.mul_one, {h}ih]; simp only [{pow}]; exact Nat.mul_comm _ _",
                       h="{h}")
    return Draft("pow_mul", nm.names["thm"], (), nm.names, "m", {
        "rocq": Proof(
            defs, f"forall b n m, {claim}",
            nm.fmt("intros b n m.\nassert (H: forall x y, {pow} b (x + y) = {pow} b x * {pow} b y)"
                   " by (induction x as [|x IHx]; intros; simpl; [lia| rewrite IHx; lia]).\n")
            + main.format(h="H, "),
            "intros b n m.\n" + main.format(h="")),
        "lean": Proof(
            nm.fmt("def {pow} (b : Nat) : Nat → Nat\n  | 0 => 1\n  | k + 1 => b * {pow} b k"),
            f"(b n m : Nat) : {claim}",
            nm.fmt("have h : ∀ x y, {pow} b (x + y) = {pow} b x * {pow} b y := by intro x y; induction x with"
                   " | zero => simp [{pow}] | succ x ih => rw [Nat.add_right_comm x 1 y];"
                   " simp only [{pow}, ih, Nat.mul_assoc]\n") + lean_main.format(h="h, "),
            lean_main.format(h="")),
    })


@family(RUNG, "filter_idem", tier=6)
def filter_idem(rng: random.Random) -> Draft:
    nm = Namer(rng, ("filter",))
    claim = nm.fmt("{filter} p ({filter} p l) = {filter} p l")
    return Draft("filter_idem", nm.names["thm"], ("filter",), nm.names, "l", {
        "rocq": Proof(
            "", f"forall p l, {claim}",
            "intros p l. induction l as [|x t IH]; simpl; [reflexivity|].\n"
            "destruct (p x) eqn:E; simpl; [rewrite E, IH; reflexivity | exact IH].",
            "intros p l. induction l as [|x t IH]; simpl; [reflexivity|].\n"
            "destruct (p x); simpl; congruence."),
        "lean": Proof(
            "", nm.fmt("(p : Nat → Bool) (l : {L}) : ") + claim,
            nm.fmt("induction l with\n| {nil} => rfl\n"
                   "| {cons} x t ih => by_cases hp : p x = true <;> simp [{filter}, hp, ih]"),
            nm.fmt("induction l with\n| {nil} => rfl\n| {cons} x t ih => simp only [{filter}, ih]")),
    })


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sumacc",))
    xs = [rng.randrange(0, 10) for _ in range(rng.randrange(2, 6))]
    acc = rng.randrange(0, 10)
    claim = nm.fmt("{sumacc} ({xs}) {acc} = {v}", acc=acc, v=acc + sum(xs),
                   xs=list_term(nm.names["nil"], nm.names["cons"], xs))
    return Draft("concrete", nm.names["thm"], ("sumacc",), nm.names, "l", {
        "rocq": Proof("", claim, "reflexivity."),
        "lean": Proof("", f": {claim}", "rfl"),
    })
