"""Learning, measured by coqc: after a few GRPO iterations from a weak warm start, the held-out
multi-turn pass rate is clearly above the pass rate at iteration 0."""
from __future__ import annotations

import pytest

from tests.trainer.conftest import FAMILIES, M0, small_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ITERATIONS = 12


def test_heldout_pass_rate_rises_with_training(stack, warm_model_dir, tmp_path):
    from services.trainer.commands import run_training

    cfg = small_config(
        stack, warm_model_dir, tmp_path / "run", "learning",
        group_size=8, problems_per_iter=8, lr=4e-3,
        phases=[{"tasks": str(M0), "iterations": ITERATIONS, "families": FAMILIES}],
        eval_every=ITERATIONS, eval_limit=None, eval_k=4, eval_max_turns=2,
    )
    result = run_training(cfg, echo=print)
    before, after = result.evals[0], result.evals[ITERATIONS]
    assert before["episodes"] == after["episodes"] == 10 * 4  # 5 held-out tasks per family, k = 4
    assert after["pass_rate"] >= before["pass_rate"] + 0.15, (before, after)
