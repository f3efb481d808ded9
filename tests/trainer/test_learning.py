"""Learning, measured by coqc: after ten GRPO iterations from a weak warm start, the held-out
multi-turn pass rate is clearly above the pass rate at iteration 0 (measured: 0.40 -> 0.55, pass@4
0.8 -> 1.0; everything is seeded, so the run repeats). `bench/trainer.py` runs the same check
with other settings."""
from __future__ import annotations

import pytest

from tests.trainer.conftest import FAMILIES, M0, small_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ITERATIONS = 10


def test_heldout_pass_rate_rises_with_training(stack, warm_model_dir, tmp_path):
    from services.trainer.commands import run_training

    cfg = small_config(
        stack, warm_model_dir, tmp_path / "run", "learning", group_size=8, problems_per_iter=8, lr=4e-3,
        phases=[{"tasks": str(M0), "iterations": ITERATIONS, "families": FAMILIES}],
        eval_every=ITERATIONS, eval_limit=None, eval_k=4, eval_max_turns=2,
    )
    result = run_training(cfg, echo=print)
    before, after = result.evals[0], result.evals[ITERATIONS]
    assert before["episodes"] == after["episodes"] == 10 * 4  # 5 held-out tasks per family, k = 4
    assert after["pass_rate"] >= before["pass_rate"] + 0.1, (before, after)
