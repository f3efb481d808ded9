"""The loss: group-centred advantages, provenance masks across turns, truncated importance ratios,
and zero gradient from a group with no reward variance."""
from __future__ import annotations

import math

import pytest
import torch

from services.trainer.losses import Datum, group_advantages, pad_batch, policy_gradient_loss, token_logprobs
from services.trainer.rollouts import Episode, Turn
from shared.schemas import Reason, Task, Verdict

TASK = Task(id="t/0", family="f", lang="rocq", prompt="p")


@pytest.fixture(scope="module")
def model(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)


def two_turn_episode(reward: bool) -> Episode:
    """prompt [1,5,6] → sampled [7,8,9] (failed) → feedback [10,11] → sampled [12,13]."""
    fail = Verdict(passed=False, reason=Reason.compile_error, feedback="no")
    last = Verdict(passed=reward, reason=Reason.ok if reward else Reason.compile_error)
    return Episode(TASK, 0, [
        Turn([1, 5, 6], [7, 8, 9], [-1.0, -2.0, -3.0], 0, "a", verdict=fail),
        Turn([10, 11], [12, 13], [-4.0, -5.0], 0, "b", verdict=last),
    ])


def grads(model) -> list[torch.Tensor]:
    return [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]


def zero_grads(model) -> None:
    model.zero_grad(set_to_none=True)


def true_logprobs(model, datum: Datum) -> list[float]:
    """The model's own logprob of every token after the first (0.0 for the first)."""
    tokens, _, _, attention, _ = pad_batch([datum])
    with torch.no_grad():
        return [0.0] + token_logprobs(model, tokens, attention)[0].tolist()


# ------------------------------------------------------------------------------------ advantages


def test_advantages_are_reward_minus_group_mean():
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == [0.5, -0.5, -0.5, 0.5]
    assert group_advantages([1.0, 0.0, 0.0, 0.0]) == [0.75, -0.25, -0.25, -0.25]


def test_std_normalised_advantages_have_unit_spread():
    adv = group_advantages([1.0, 0.0, 0.0, 1.0], std_normalize=True)
    assert adv == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)


@pytest.mark.parametrize("std_normalize", [False, True])
@pytest.mark.parametrize("reward", [0.0, 1.0])
def test_zero_variance_group_has_exactly_zero_advantages(reward, std_normalize):
    assert group_advantages([reward] * 8, std_normalize=std_normalize) == [0.0] * 8


def test_episode_reward_is_one_if_any_turn_passed():
    assert two_turn_episode(True).reward == 1.0
    assert two_turn_episode(True).turns[0].passed is False
    assert two_turn_episode(False).reward == 0.0
    assert two_turn_episode(True).passed_by_turn(3) == [0, 1, 1]


# ------------------------------------------------------------------------------------ provenance masks


def test_training_sequence_masks_only_sampled_tokens_of_every_turn():
    tokens, mask, logprobs = two_turn_episode(True).training_sequence()
    assert tokens == [1, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    assert mask == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    assert logprobs == [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, 0.0, 0.0, -4.0, -5.0]


def test_feedback_and_prompt_positions_get_no_gradient(model):
    """The gradient reaching the logits is zero at every position that predicts a prompt or a
    feedback token, and non-zero at every position that predicts a sampled token."""
    tokens, mask, _ = two_turn_episode(True).training_sequence()
    datum = Datum(tokens, mask, true_logprobs(model, Datum(tokens, mask, [0.0] * len(tokens), 1.0)), 1.0)
    captured = {}

    def keep(module, inputs, output):
        output.retain_grad()
        captured["logits"] = output

    hook = model.lm_head.register_forward_hook(keep)
    try:
        zero_grads(model)
        loss, _ = policy_gradient_loss(model, [datum], normalizer=5, is_truncation=2.0)
        loss.backward()
    finally:
        hook.remove()
    per_position = captured["logits"].grad[0].abs().sum(dim=-1)  # position t predicts token t+1
    for t, predicted_is_sampled in enumerate(mask[1:]):
        if predicted_is_sampled:
            assert per_position[t] > 0, f"sampled token {t + 1} got no gradient"
        else:
            assert per_position[t] == 0, f"non-sampled token {t + 1} got gradient"


# ------------------------------------------------------------------------------------ importance ratios


def datum_with_ratio(model, ratio: float, advantage: float = 1.0) -> Datum:
    """A datum whose sampler logprobs are the model's own minus log(ratio), so every sampled
    token's importance ratio is exactly `ratio`."""
    tokens, mask, _ = two_turn_episode(True).training_sequence()
    own = true_logprobs(model, Datum(tokens, mask, [0.0] * len(tokens), advantage))
    sampler = [lp - math.log(ratio) if m else 0.0 for lp, m in zip(own, mask)]
    return Datum(tokens, mask, sampler, advantage)


def gradient_at(model, data, truncation=2.0) -> tuple[list[torch.Tensor], object]:
    zero_grads(model)
    loss, stats = policy_gradient_loss(model, data, normalizer=5, is_truncation=truncation)
    loss.backward()
    return grads(model), stats


def test_importance_ratio_statistics(model):
    _, stats = gradient_at(model, [datum_with_ratio(model, 1.5)])
    assert stats.tokens == 5
    assert stats.ratio_mean == pytest.approx(1.5, rel=1e-4)
    assert stats.ratio_max == pytest.approx(1.5, rel=1e-4)
    assert stats.clipped_fraction == 0.0


def test_importance_ratio_scales_the_gradient(model):
    base, _ = gradient_at(model, [datum_with_ratio(model, 1.0)])
    scaled, _ = gradient_at(model, [datum_with_ratio(model, 1.5)])
    for g0, g1 in zip(base, scaled):
        torch.testing.assert_close(g1, 1.5 * g0, rtol=1e-3, atol=1e-7)
    assert any(g.abs().sum() > 0 for g in base)


def test_importance_ratio_is_truncated(model):
    base, _ = gradient_at(model, [datum_with_ratio(model, 1.0)])
    clipped, stats = gradient_at(model, [datum_with_ratio(model, 5.0)], truncation=2.0)
    assert stats.clipped_fraction == 1.0
    assert stats.ratio_max == pytest.approx(5.0, rel=1e-4)
    for g0, g1 in zip(base, clipped):
        torch.testing.assert_close(g1, 2.0 * g0, rtol=1e-3, atol=1e-7)


def test_negative_advantage_reverses_the_gradient(model):
    up, _ = gradient_at(model, [datum_with_ratio(model, 1.0, advantage=1.0)])
    down, _ = gradient_at(model, [datum_with_ratio(model, 1.0, advantage=-1.0)])
    for g0, g1 in zip(up, down):
        torch.testing.assert_close(g1, -g0)


# ------------------------------------------------------------------------------------ zero variance, accumulation


def test_zero_variance_group_gives_exactly_zero_gradient(model):
    group = [two_turn_episode(True) for _ in range(4)]
    data = [Datum(*e.training_sequence(), a) for e, a in zip(group, group_advantages([e.reward for e in group]))]
    zero_grads(model)
    loss, _ = policy_gradient_loss(model, data, normalizer=20, is_truncation=2.0)
    loss.backward()
    assert loss.item() == 0.0
    assert all(torch.count_nonzero(g) == 0 for g in grads(model))


def test_micro_batches_accumulate_to_the_full_batch_gradient(model):
    data = [datum_with_ratio(model, 1.0, 1.0), datum_with_ratio(model, 1.2, -0.5), datum_with_ratio(model, 0.8, 0.25)]
    whole, _ = gradient_at(model, data)
    zero_grads(model)
    for part in (data[:1], data[1:]):
        loss, _ = policy_gradient_loss(model, part, normalizer=5, is_truncation=2.0)
        loss.backward()
    for g0, g1 in zip(whole, grads(model)):
        torch.testing.assert_close(g1, g0, rtol=1e-4, atol=1e-7)
