"""The task factory: parametric generators per rung (`m0` … `m5`), renderers per language, and
the build that certifies every gold and freezes the split.

`candidates(rung, lang, seed, per_family)` is the pure part: deterministic given its arguments,
fresh names in every task, no two tasks with the same statement."""
from __future__ import annotations

import importlib

from shared.factory.core import RUNGS, Draft, Family, draft
from shared.schemas import Task

RUNG_NAMES = ("m0", "m1", "m2", "m3", "m4", "m5")
LANGS = ("rocq", "lean")
BRIDGE = "concrete"
MAX_ATTEMPTS = 50


def families(rung: str) -> list[Family]:
    """The rung's families in order (the bridge family last)."""
    if rung not in RUNG_NAMES:
        raise KeyError(f"unknown rung {rung!r}; known: {', '.join(RUNG_NAMES)}")
    importlib.import_module(f"shared.factory.{rung}")
    return RUNGS[rung]


def renderer(lang: str):
    if lang not in LANGS:
        raise KeyError(f"unknown language {lang!r}; known: {', '.join(LANGS)}")
    return importlib.import_module(f"shared.factory.render_{lang}")


def to_task(rung: str, index: int, fam: Family, d: Draft, lang: str) -> Task:
    r = renderer(lang)
    return Task(
        id=f"{rung}/{fam.name}/{index:04d}", rung=rung, family=fam.name, tier=fam.tier,
        split="train", kind="proof", lang=lang, prompt=r.prompt(d), theorem=d.theorem,
        statement=r.statement(d), gold=d.proofs[lang].gold, certified=None,
        meta={"induct": d.induct, "stripped": d.proofs[lang].stripped},
    )


def candidates(rung: str, lang: str, seed: int, per_family: int) -> list[Task]:
    """`per_family` tasks of every family, in family order, split not yet assigned."""
    tasks: list[Task] = []
    for fam in families(rung):
        seen: set[str] = set()
        for index in range(per_family):
            for attempt in range(MAX_ATTEMPTS):
                d = draft(rung, fam, seed, index, attempt)
                if lang not in d.proofs:
                    raise KeyError(f"family {rung}/{fam.name} has no {lang} rendering")
                task = to_task(rung, index, fam, d, lang)
                if task.statement not in seen:
                    seen.add(task.statement)
                    tasks.append(task)
                    break
            else:
                raise RuntimeError(f"{rung}/{fam.name}: no fresh task after {MAX_ATTEMPTS} draws")
    return tasks
