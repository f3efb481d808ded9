"""The evaluation metrics against brute force and hand-computed values."""
from itertools import combinations

import pytest

from shared.metrics import TaskEval, pass_at_k, rollup, solved_by_n_turns


@pytest.mark.parametrize("n,c", [(1, 0), (1, 1), (4, 1), (5, 2), (6, 3), (8, 0), (8, 8)])
def test_pass_at_k_equals_the_fraction_of_k_subsets_holding_a_correct_sample(n, c):
    samples = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(combinations(samples, k))
        assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_1_is_the_plain_success_rate():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)


@pytest.mark.parametrize("n,c,k", [(3, 4, 1), (3, 1, 4), (3, 1, 0), (3, -1, 1)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_solved_by_n_turns_pools_episodes_and_extends_short_tasks_flat():
    evals = [TaskEval("a", "f", 4, [1, 3]), TaskEval("b", "f", 4, [0, 0, 2])]
    assert solved_by_n_turns(evals) == pytest.approx([1 / 8, 3 / 8, 5 / 8])


def test_rollup_reports_each_family_and_skips_pass_at_k_where_n_is_too_small():
    evals = [TaskEval("a", "sq", 4, [2, 4]), TaskEval("b", "sq", 4, [0, 0]), TaskEval("c", "rev", 2, [1, 1])]
    summary = rollup(evals, ks=(1, 4))
    assert summary["episodes"] == 10
    assert summary["turn1_rate"] == pytest.approx(3 / 10)
    assert summary["pass_rate"] == pytest.approx(5 / 10)
    assert summary["pass_at_k"]["1"] == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert summary["pass_at_k"]["4"] == pytest.approx((1.0 + 0.0) / 2)  # task c has n=2 < 4
    assert set(summary["families"]) == {"rev", "sq"}
    assert summary["families"]["rev"]["pass_at_k"]["4"] is None
    assert summary["families"]["sq"]["solved_by_n_turns"] == pytest.approx([2 / 8, 4 / 8])
