"""Committed golds re-certify through `grade()`, and cheap strategies do not solve the hard
families (while the bridge family falls to `reflexivity.`). Real coqc, real sandbox."""
from __future__ import annotations

from pathlib import Path

import pytest

from shared.factory import BRIDGE, RUNG_NAMES
from shared.factory.build import grade_all
from shared.factory.calibrate import calibrate, sample
from shared.factory.render_rocq import fence
from shared.tasks import load_tasks

DATA = Path(__file__).resolve().parents[2] / "data"


def one_per_family() -> list:
    return [t for rung in RUNG_NAMES for t in sample(load_tasks(DATA / rung / "rocq" / "tasks.jsonl"), 1)]


@pytest.mark.slow
def test_a_sample_of_every_family_of_every_rung_recertifies():
    tasks = one_per_family()
    assert len(tasks) == 36
    verdicts = grade_all([(t, fence(t.gold)) for t in tasks], workers=2)
    failed = [t.id for t, v in zip(tasks, verdicts) if not v.passed]
    assert failed == []


@pytest.mark.slow
def test_a_gold_cut_short_does_not_pass():
    """The re-certification is not a rubber stamp: drop the last sentence (or, in a one-sentence
    gold, the last tactic of the chain) and every gold fails."""
    tasks = [t for t in one_per_family() if t.family != BRIDGE]
    cut = [t.gold.rsplit(".", 2)[0] + "." if t.gold.count(". ") + t.gold.count(".\n") else
           t.gold.rsplit(";", 1)[0] + "." for t in tasks]
    assert all(c != t.gold for c, t in zip(cut, tasks))
    verdicts = grade_all([(t, fence(block)) for t, block in zip(tasks, cut)], workers=2)
    assert [t.id for t, v in zip(tasks, verdicts) if v.passed] == []


@pytest.mark.slow
def test_cheap_strategies_fail_on_hard_tasks_and_the_bridge_falls_to_reflexivity():
    rows = calibrate(one_per_family(), jobs=2)
    hard = [r for r in rows if r.family != BRIDGE]
    bridge = [r for r in rows if r.family == BRIDGE]
    assert len(hard) == 30 and len(bridge) == 1  # bridge rows of all rungs share the family name
    solved_hard = sum(r.any_solved for r in hard)
    assert solved_hard <= 3, [(r.family, r.solved) for r in hard if r.any_solved]
    assert all(r.solved["reflexivity"] == r.n for r in bridge)
