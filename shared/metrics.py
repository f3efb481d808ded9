"""Evaluation metrics shared by the API (held-out trajectories) and the trainer.

A held-out eval of one task samples `n` episodes; `passed_by_turn[t]` counts how many of them had
passed by turn t+1 (cumulative, so the list never decreases). Everything below derives from
these two numbers per task:

- pass rate (multi-turn): episodes solved within all turns / episodes
- turn-1 rate: episodes solved at the first answer / episodes
- pass@k: the unbiased estimator 1 - C(n-c, k) / C(n, k), averaged over tasks (Chen et al. 2021)
- solved_by_n_turns[t]: fraction of episodes solved within t+1 turns
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n (c correct)
    is correct. Requires 0 <= c <= n and 1 <= k <= n."""
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass(frozen=True)
class TaskEval:
    """One task's held-out result: n episodes, cumulative passes per turn."""

    task_id: str
    family: str
    n: int
    passed_by_turn: Sequence[int]

    @property
    def correct(self) -> int:
        return self.passed_by_turn[-1] if self.passed_by_turn else 0


def solved_by_n_turns(evals: Iterable[TaskEval]) -> list[float]:
    """Fraction of all episodes solved within 1, 2, … turns. A task with fewer recorded turns
    counts as solved no further after its last one."""
    evals = list(evals)
    episodes = sum(e.n for e in evals)
    turns = max((len(e.passed_by_turn) for e in evals), default=0)
    if not episodes:
        return []
    return [
        sum(e.passed_by_turn[min(t, len(e.passed_by_turn) - 1)] for e in evals if e.passed_by_turn) / episodes
        for t in range(turns)
    ]


def summarize(evals: Iterable[TaskEval], ks: Sequence[int] = (1,)) -> dict:
    """Pass rate, turn-1 rate, pass@k (tasks with n >= k only) and solved_by_n_turns."""
    evals = list(evals)
    episodes = sum(e.n for e in evals)
    by_turn = solved_by_n_turns(evals)
    pass_k: dict[str, float | None] = {}
    for k in ks:
        eligible = [e for e in evals if e.n >= k]
        pass_k[str(k)] = (sum(pass_at_k(e.n, e.correct, k) for e in eligible) / len(eligible)) if eligible else None
    return {
        "tasks": len(evals),
        "episodes": episodes,
        "pass_rate": by_turn[-1] if by_turn else None,
        "turn1_rate": by_turn[0] if by_turn else None,
        "pass_at_k": pass_k,
        "solved_by_n_turns": by_turn,
    }


def rollup(evals: Iterable[TaskEval], ks: Sequence[int] = (1,)) -> dict:
    """`summarize` over all tasks, plus the same per family."""
    evals = list(evals)
    families: dict[str, list[TaskEval]] = defaultdict(list)
    for e in evals:
        families[e.family].append(e)
    return {
        **summarize(evals, ks),
        "families": {name: summarize(group, ks) for name, group in sorted(families.items())},
    }
