"""M2, multi-helper chains: rev∘rev = id through three chained helpers, distributing a constant
factor through map, a double case-split under filter, two independent closed forms composed, and
a tree induction that needs max to commute. Rendered in Rocq and Lean."""
from __future__ import annotations

import random

from shared.factory.core import Draft, Namer, Proof, family, list_term
from shared.factory.m1 import LEAN_APP_ASSOC, LEAN_APP_NIL, ROCQ_APP_ASSOC, ROCQ_APP_NIL

RUNG = "m2"
ROCQ_REV_APP = ("assert (Hr: forall a b, {rev} ({app} a b) = {app} ({rev} b) ({rev} a)) by (induction a; intros;"
                " simpl; [rewrite Hn; reflexivity | rewrite IHa, Ha; reflexivity]).")
LEAN_REV_APP = ("have hr : ∀ a b, {rev} ({app} a b) = {app} ({rev} b) ({rev} a) := by intro a b;"
                " induction a with | {nil} => simp [{app}, {rev}, hn] | {cons} x t ih => simp [{app}, {rev}, ih, ha]")


@family(RUNG, "rev_invol", tier=6)
def rev_invol(rng: random.Random) -> Draft:
    nm = Namer(rng, ("rev",))
    main = "induction l as [|x t IH]; simpl; [reflexivity|].\nrewrite {h}IH. reflexivity."
    lean_main = nm.fmt("induction l with\n| {nil} => rfl\n| {cons} x t ih => simp [{rev}, {h}ih, {app}]", h="{h}")
    claim = nm.fmt("{rev} ({rev} l) = l")
    return Draft("rev_invol", nm.names["thm"], ("rev",), nm.names, "l", {
        "rocq": Proof(
            "", f"forall l, {claim}",
            nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n{ROCQ_REV_APP}\n") + main.format(h="Hr, "),
            nm.fmt(f"{ROCQ_APP_NIL}\n{ROCQ_APP_ASSOC}\n") + main.format(h="")),
        "lean": Proof(
            "", nm.fmt("(l : {L}) : ") + claim,
            nm.fmt(f"{LEAN_APP_NIL}\n{LEAN_APP_ASSOC}\n{LEAN_REV_APP}\n") + lean_main.format(h="hr, "),
            nm.fmt(f"{LEAN_APP_NIL}\n{LEAN_APP_ASSOC}\n") + lean_main.format(h="")),
    })


@family(RUNG, "sum_map_mul", tier=5)
def sum_map_mul(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sum", "map"))
    c = rng.randrange(2, 10)
    claim = nm.fmt("{sum} ({map} (fun x => {c} * x) l) = {c} * {sum} l", c=c)
    return Draft("sum_map_mul", nm.names["thm"], ("sum", "map"), nm.names, "l", {
        "rocq": Proof("", f"forall l, {claim}", nm.fmt(
            "intros l. induction l as [|x t IH]; [reflexivity|].\ncbn [{sum} {map}]. rewrite IH. lia.")),
        "lean": Proof("", nm.fmt("(l : {L}) : ") + claim, nm.fmt(
            "induction l with\n| {nil} => simp [{map}, {sum}]\n"
            "| {cons} x t ih => simp only [{map}, {sum}, ih] <;> omega")),
    })


@family(RUNG, "count_filter", tier=5)
def count_filter(rng: random.Random) -> Draft:
    nm = Namer(rng, ("count", "filter"))
    main = ("intros p k l. induction l as [|x t IH]; simpl; [lia|].\n"
            "destruct (p x); simpl; {split}lia.")
    # `split` (not `simp [hx]` with `hx : x = k`) so that no variable is rewritten away from `ih`.
    lean_main = nm.fmt("induction l with\n| {nil} => simp [{filter}, {count}]\n"
                       "| {cons} x t ih => simp only [{filter}] <;> (repeat' split) <;> simp only [{count}]{split} <;> omega",
                       split="{split}")
    return Draft("count_filter", nm.names["thm"], ("count", "filter"), nm.names, "l", {
        "rocq": Proof(
            "", nm.fmt("forall p k l, {count} k ({filter} p l) <= {count} k l"),
            main.format(split="destruct (Nat.eqb x k); "), main.format(split="")),
        "lean": Proof(
            "", nm.fmt("(p : Nat → Bool) (k : Nat) (l : {L}) : {count} k ({filter} p l) ≤ {count} k l"),
            lean_main.format(split=" <;> (repeat' split)"), lean_main.format(split="")),
    })


def affine(nm: Namer, rng: random.Random, key: str) -> tuple[str, str, int, int]:
    """Rocq and Lean defs of `key` 0 = a, `key` (k+1) = `key` k + c."""
    a, c = rng.randrange(1, 10), rng.randrange(2, 6)
    return (nm.fmt("Fixpoint {%s} (n : nat) : nat :=\n  match n with 0 => {a} | S k => {%s} k + {c} end." % (key, key),
                   a=a, c=c),
            nm.fmt("def {%s} : Nat → Nat\n  | 0 => {a}\n  | k + 1 => {%s} k + {c}" % (key, key), a=a, c=c), a, c)


def lean_closed_form(nm: Namer, name: str, key: str, c: int, a: int) -> str:
    """`have name : ∀ m, key m = c * m + a`, proved by induction, on one line."""
    return nm.fmt("have %s : ∀ m, {%s} m = {c} * m + {a} := by intro m; induction m with"
                  " | zero => simp [{%s}] | succ k ih => simp only [{%s}, ih] <;> omega\n" % (name, key, key, key),
                  c=c, a=a)


@family(RUNG, "compose_two", tier=5)
def compose_two(rng: random.Random) -> Draft:
    nm = Namer(rng, (), own=("f", "g"))
    fdef, lean_fdef, fa, fc = affine(nm, rng, "f")
    gdef, lean_gdef, ga, gc = affine(nm, rng, "g")
    hf = "assert (Hf: forall m, {f} m = {fc} * m + {fa}) by (induction m; simpl; lia).\n"
    hg = "assert (Hg: forall m, {g} m = {gc} * m + {ga}) by (induction m; simpl; lia).\n"
    consts = dict(fa=fa, fc=fc, ga=ga, gc=gc, c=fc * gc, a=fc * ga + fa)
    claim = nm.fmt("{f} ({g} n) = {c} * n + {a}", **consts)
    lean_hf = lean_closed_form(nm, "hf", "f", fc, fa)
    return Draft("compose_two", nm.names["thm"], (), nm.names, "n", {
        "rocq": Proof(
            f"{fdef}\n{gdef}", f"forall n, {claim}",
            nm.fmt("intros n.\n" + hf + hg + "rewrite Hf, Hg. lia.", **consts),
            nm.fmt("intros n.\n" + hf + "rewrite Hf. lia.", **consts)),
        "lean": Proof(
            f"{lean_fdef}\n\n{lean_gdef}", f"(n : Nat) : {claim}",
            lean_hf + lean_closed_form(nm, "hg", "g", gc, ga) + "rw [hf, hg] <;> omega",
            lean_hf + "rw [hf] <;> omega"),
    })


@family(RUNG, "height_mirror", tier=5)
def height_mirror(rng: random.Random) -> Draft:
    nm = Namer(rng, ("height", "mirror"))
    main = "induction t as [|l IHl x r IHr]; simpl; [reflexivity|].\nrewrite IHl, IHr. {h}reflexivity."
    lean_main = nm.fmt("induction t with\n| {leaf} => rfl\n"
                       "| {node} l x r ihl ihr => simp only [{mirror}, {height}, ihl, ihr]{h}", h="{h}")
    claim = nm.fmt("{height} ({mirror} t) = {height} t")
    return Draft("height_mirror", nm.names["thm"], ("height", "mirror"), nm.names, "t", {
        "rocq": Proof("", f"forall t, {claim}", main.format(h="rewrite Nat.max_comm. "), main.format(h="")),
        "lean": Proof("", nm.fmt("(t : {T}) : ") + claim,
                      lean_main.format(h=" <;> first | omega | rw [Nat.max_comm]"), lean_main.format(h="")),
    })


@family(RUNG, "concrete", tier=1)
def concrete(rng: random.Random) -> Draft:
    nm = Namer(rng, ("sum", "map"))
    c = rng.randrange(2, 10)
    xs = [rng.randrange(0, 10) for _ in range(rng.randrange(2, 5))]
    claim = nm.fmt("{sum} ({map} (fun x => {c} * x) ({xs})) = {v}", c=c, v=c * sum(xs),
                   xs=list_term(nm.names["nil"], nm.names["cons"], xs))
    return Draft("concrete", nm.names["thm"], ("sum", "map"), nm.names, "l", {
        "rocq": Proof("", claim, "reflexivity."),
        "lean": Proof("", f": {claim}", "rfl"),
    })
