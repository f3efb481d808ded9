"""Calibration: are the hard families really hard? Grade a fixed list of cheap strategies on a
sample of each family and report the fraction each one solves. A hard family should resist all
of them; the bridge family should fall to `reflexivity.`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from shared.factory import BRIDGE, renderer
from shared.schemas import Task

Strategy = tuple[str, Callable[[Task], str | None]]

STRATEGIES: dict[str, list[Strategy]] = {
    "rocq": [
        ("reflexivity", lambda t: "reflexivity."),
        ("auto", lambda t: "auto."),
        ("lia", lambda t: "lia."),
        ("simpl;auto", lambda t: "simpl; auto."),
        ("ind;simpl;auto", lambda t: f"induction {t.meta['induct']}; simpl; auto."),
        ("gold-helper", lambda t: t.meta.get("stripped")),
    ],
    "lean": [
        ("rfl", lambda t: "rfl"),
        ("simp", lambda t: "simp"),
        ("omega", lambda t: "omega"),
        ("simp_all", lambda t: "simp_all"),
        ("ind;simp_all", lambda t: f"induction {t.meta['induct']} <;> simp_all"),
        ("gold-helper", lambda t: t.meta.get("stripped")),
    ],
}


@dataclass
class Row:
    family: str
    tier: int
    n: int
    solved: dict[str, int | None]  # per strategy: tasks solved (None: strategy not applicable)
    any_solved: int


def sample(tasks: list[Task], per_family: int | None) -> list[Task]:
    """The first `per_family` tasks of every family (all with None), in file order."""
    out, count = [], {}
    for t in tasks:
        if per_family is None or count.get(t.family, 0) < per_family:
            out.append(t)
            count[t.family] = count.get(t.family, 0) + 1
    return out


def calibrate(tasks: list[Task], jobs: int = 2) -> list[Row]:
    from shared.factory.build import grade_all

    if not tasks:
        raise ValueError("nothing to calibrate: no tasks given")
    lang = tasks[0].lang
    strategies = STRATEGIES[lang]
    fence = renderer(lang).fence
    jobs_list = [(t, name, block) for t in tasks for name, make in strategies
                 if (block := make(t)) is not None]
    verdicts = grade_all([(t, fence(block)) for t, _, block in jobs_list], jobs)
    passed = {(t.id, name): v.passed for (t, name, _), v in zip(jobs_list, verdicts)}
    rows = []
    for fam in dict.fromkeys(t.family for t in tasks):
        members = [t for t in tasks if t.family == fam]
        solved = {}
        for name, _ in strategies:
            hits = [passed[(t.id, name)] for t in members if (t.id, name) in passed]
            solved[name] = sum(hits) if hits else None
        any_solved = sum(any(passed.get((t.id, name), False) for name, _ in strategies) for t in members)
        rows.append(Row(fam, members[0].tier, len(members), solved, any_solved))
    return rows


def table(rows: list[Row], lang: str) -> str:
    names = [name for name, _ in STRATEGIES[lang]]
    widths = [max(14, max(len(r.family) for r in rows))] + [max(len(n), 7) for n in names] + [7]
    head = ["family"] + names + ["any"]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    for r in rows:
        cells = [f"{r.family}{'*' if r.family == BRIDGE else ''}"]
        cells += ["-" if r.solved[n] is None else f"{r.solved[n]}/{r.n}" for n in names]
        cells.append(f"{r.any_solved}/{r.n}")
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)))
    lines.append("(* bridge family: should fall to the first strategy; '-': no stripped gold)")
    return "\n".join(lines)
