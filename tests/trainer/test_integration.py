"""Training through the real services: the API (grading with coqc in its local pool, run records
in SQLite) and the sampler (hf engine), each its own process, talking HTTP."""
from __future__ import annotations

import json

import pytest

from shared.clients import APIClient
from tests.trainer.conftest import M0, small_config

# Generous: these train for real on a shared 2-core machine (the setup builds and warms a model).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def run(cfg, **kwargs):
    from services.trainer.commands import run_training

    return run_training(cfg, echo=lambda line: None, **kwargs)


def test_two_iterations_through_api_grader_and_sampler(stack, warm_model_dir, tmp_path):
    cfg = small_config(stack, warm_model_dir, tmp_path / "run", "integration")
    result = run(cfg)

    assert result.status == "finished"
    assert [m["iteration"] for m in result.iterations] == [0, 1]
    for m in result.iterations:
        assert m["groups"] == 2 and 1.0 <= m["mean_turns"] <= 2.0 and m["sampled_tokens"] > 0
        assert m["dead"] == (m["groups_with_signal"] == 0)
    # The policy version goes up once per live iteration; episodes say which version drew them.
    live = sum(not m["dead"] for m in result.iterations)
    assert [m["policy_version"] for m in result.iterations] == [0, int(not result.iterations[0]["dead"])]
    assert sorted(p.name for p in (tmp_path / "run" / "adapters").iterdir()) == [f"v{i}" for i in range(live + 1)]

    with APIClient(cfg.api_url, cfg.api_token) as api:
        assert [it["iteration"] for it in api.iterations(result.run_id)] == [0, 1]
        train = api.episodes(result.run_id, split="train", limit=100)["items"]
        assert len(train) == 2 * 2 * 4
        heldout = api.episodes(result.run_id, split="heldout", limit=100)["items"]
        assert len(heldout) == 2 * 4 * 2  # evals at iteration 0 and at the end, 4 tasks x k=2
        trajectory = api.trajectory(result.run_id, ks=(1, 2))["iterations"]
        assert [p["iteration"] for p in trajectory] == [0, 2]
        assert api.get_run(result.run_id)["status"] == "finished"
        # Verdicts in the API are the verdicts the reward came from.
        one = api.episode(train[0]["id"])
        assert one["reward"] == float(any(t["passed"] for t in one["turns"]))

    lines = [json.loads(x) for x in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    assert len(lines) == 16 + 16
    for r in lines:
        for t in r["turns"]:
            assert len(t["sampled_ids"]) == len(t["sampler_logprobs"]) == t["sampled_tokens"] > 0
            assert t["reason"]
    assert (tmp_path / "run" / "checkpoints" / "it000002" / "state.json").is_file()


VOLATILE = ("time_",)


def comparable(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not k.startswith(VOLATILE)}


def test_resume_continues_exactly(stack, warm_model_dir, tmp_path):
    """Stop after iteration 2, resume: iteration 3's metrics equal an uninterrupted run's."""
    # Two phases, so that the resumed iteration is also the first of a new phase (fresh pool).
    phases = [{"tasks": str(M0), "iterations": 2, "families": ["concrete", "affine"]},
              {"tasks": str(M0), "iterations": 1, "families": ["affine"]}]
    whole = run(small_config(stack, warm_model_dir, tmp_path / "a", "resume-a", phases=phases))
    cfg_b = small_config(stack, warm_model_dir, tmp_path / "b", "resume-b", phases=phases)
    first = run(cfg_b, stop_after=2)
    assert first.status == "stopped" and len(first.iterations) == 2
    rest = run(cfg_b, resume=tmp_path / "b")
    assert [m["iteration"] for m in rest.iterations] == [2]
    assert rest.run_id == first.run_id

    assert any(not m["dead"] for m in whole.iterations[:2]), "no update happened before the stop; the test shows nothing"
    expected, got = comparable(whole.iterations[2]), comparable(rest.iterations[0])
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == (pytest.approx(value, rel=1e-5, abs=1e-7) if isinstance(value, float) else value), key
