"""Eight SWE episodes graded at once on two slots give the same verdicts as one at a time, and
no slot is ever held by two episodes at once."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from pathlib import Path

import pytest

from services.grader.backends.swe import load_task
from services.grader.pipeline import grade

SWE = Path(__file__).resolve().parents[2] / "tasks" / "swe"
EPISODES = [(name, kind) for name in ("csv-quotes", "lru-recency", "roman-subtractive", "slugify-runs")
            for kind in ("solution", "wrong")]


def run(episode):
    name, kind = episode
    task = load_task(SWE / name)
    verdict = grade(task, f"```diff\n{(SWE / name / f'{kind}.diff').read_text()}```", use_cache=False)
    return verdict.passed, verdict.reason, verdict.feedback.splitlines()[0]


@pytest.mark.slow
def test_eight_episodes_on_two_slots(pool):
    assert pool.size == 2
    one_at_a_time = [run(e) for e in EPISODES]
    assert [passed for passed, _, _ in one_at_a_time] == [True, False] * 4
    start = len(pool.records())
    with ThreadPoolExecutor(max_workers=8) as executor:
        at_once = list(executor.map(run, EPISODES))
    assert at_once == one_at_a_time

    leases = pool.records()[start:]
    assert len(leases) == 8 and len({r.holder for r in leases}) == 8
    assert {r.slot for r in leases} == {0, 1}
    for a, b in combinations(leases, 2):
        overlap = a.acquired < b.released and b.acquired < a.released
        assert not (overlap and a.slot == b.slot), f"slot {a.slot} shared by {a.holder} and {b.holder}"
    # and the episodes really did run side by side
    assert any(a.acquired < b.released and b.acquired < a.released for a, b in combinations(leases, 2))
