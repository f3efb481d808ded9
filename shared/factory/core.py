"""What every family generator shares: fresh names, the language-neutral task description
(`Draft`), and the registry of families per rung.

A family is a function `gen(rng) -> Draft`. It picks fresh names and constants with the seeded
RNG it is given and writes, for each language it supports, the claim, the gold proof and the
"stripped" gold (the gold with its key helper removed, used by calibration). Definitions the
family needs are named by kind (`"rev"`, `"isort"`, ...) and rendered per language by the
renderers, so Rocq and Lean files of one task always define the same things under the same
names.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

# Name keys each library definition introduces, and the definitions it needs first.
# Kinds missing here introduce one name, equal to the kind.
DEF_NAMES = {"list": ("L", "nil", "cons"), "tree": ("T", "leaf", "node")}
DEF_NEEDS = {
    "app": ("list",), "rev": ("app",), "len": ("list",), "sum": ("list",), "count": ("list",),
    "map": ("list",), "filter": ("list",), "rep": ("list",), "take": ("list",), "drop": ("list",),
    "revacc": ("list",), "sumacc": ("list",), "ins": ("list",), "isort": ("ins",),
    "sorted": ("list",), "mirror": ("tree",), "size": ("tree",), "tsum": ("tree",),
    "height": ("tree",), "flatten": ("tree", "app"), "tsumacc": ("tree",),
}

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def fresh_name(rng: random.Random) -> str:
    """A pronounceable name no library uses: two syllables, a letter, two digits (`zetaq42`)."""
    syl = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(2))
    return f"{syl}{rng.choice(_CONSONANTS)}{rng.randrange(10, 100)}"


def closure(uses: tuple[str, ...]) -> list[str]:
    """The definitions `uses` needs, dependencies first, each once."""
    out: list[str] = []

    def visit(kind: str) -> None:
        if kind in out:
            return
        for dep in DEF_NEEDS.get(kind, ()):
            visit(dep)
        out.append(kind)

    for kind in uses:
        visit(kind)
    return out


@dataclass(frozen=True)
class Proof:
    """One language's rendering of a task: the family's own definitions (after the library
    ones), the claim (Rocq: the theorem's type; Lean: binders and type), the gold tactic block,
    and the gold with its key helper removed (None where the family has no helper)."""

    defs: str
    claim: str
    gold: str
    stripped: str | None = None


@dataclass(frozen=True)
class Draft:
    family: str
    theorem: str
    uses: tuple[str, ...]
    names: dict[str, str]
    induct: str  # the variable the cheap "induction; simpl; auto" strategy inducts on
    proofs: dict[str, Proof] = field(default_factory=dict)  # by language


class Namer:
    """Fresh names for one task, drawn in a fixed order so that a seed fixes them all."""

    def __init__(self, rng: random.Random, uses: tuple[str, ...], own: tuple[str, ...] = ()):
        self.rng = rng
        self.names: dict[str, str] = {}
        keys = [k for kind in closure(uses) for k in DEF_NAMES.get(kind, (kind,))]
        for key in [*keys, *own, "thm"]:
            self.names[key] = self._draw()

    def _draw(self) -> str:
        taken = set(self.names.values())
        while (name := fresh_name(self.rng)) in taken:
            pass
        return name

    def fmt(self, template: str, **consts) -> str:
        """Fill `{key}` with the task's names and the given constants."""
        return template.format_map({**self.names, **consts})


Generator = Callable[[random.Random], Draft]


@dataclass(frozen=True)
class Family:
    name: str
    tier: int
    gen: Generator


RUNGS: dict[str, list[Family]] = {}


def family(rung: str, name: str, tier: int) -> Callable[[Generator], Generator]:
    """Register `gen` as family `name` of `rung` (registration order is the rung's order)."""

    def register(gen: Generator) -> Generator:
        RUNGS.setdefault(rung, []).append(Family(name, tier, gen))
        return gen

    return register


def draft(rung: str, fam: Family, seed: int, index: int, attempt: int = 0) -> Draft:
    """The task at (rung, family, seed, index); `attempt` > 0 redraws after a duplicate."""
    return fam.gen(random.Random(f"{rung}/{fam.name}/{seed}/{index}/{attempt}"))


def list_term(nil: str, cons: str, xs: list[int]) -> str:
    """A concrete list term in application syntax (same in Rocq and Lean): `cs 3 (cs 1 nl)`."""
    term = nil
    for x in reversed(xs):
        term = f"{cons} {x} {term}" if term == nil else f"{cons} {x} ({term})"
    return term
