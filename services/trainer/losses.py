"""Advantages and the policy-gradient loss.

GRPO here is the simple kind: no KL term to a reference model and no PPO clip. Each problem's G
episodes form a group; an episode's advantage is its reward minus the group's mean reward
(optionally divided by the group's std). Every sampled token of every turn of the episode carries
that advantage; prompt and feedback tokens carry nothing (their mask is 0 by provenance, see
`rollouts.py`).

The samples come from the sampler, whose weights can lag the trainer's or differ numerically, so
each token's term is weighted by the importance ratio exp(logp_trainer - logp_sampler), detached
and truncated at `is_truncation` (truncated importance sampling). The loss is

    loss = -sum_tokens( min(ratio, C) * A * logp_trainer * mask ) / normalizer

whose gradient is the importance-weighted REINFORCE gradient. A group whose episodes all got the
same reward has A = 0 on every token and contributes exactly zero gradient.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


def group_advantages(rewards_G: Sequence[float], std_normalize: bool = False, eps: float = 1e-6) -> list[float]:
    """Rewards minus the group mean (divided by the group std when `std_normalize`)."""
    mean = sum(rewards_G) / len(rewards_G)
    centred = [r - mean for r in rewards_G]
    if not std_normalize:
        return centred
    std = (sum(c * c for c in centred) / len(centred)) ** 0.5
    return [c / (std + eps) for c in centred]


@dataclass
class Datum:
    """One training sequence: tokens, 1 where sampled, the sampler's logprobs, one advantage."""

    tokens: list[int]
    mask: list[int]
    sampler_logprobs: list[float]
    advantage: float

    @property
    def sampled_tokens(self) -> int:
        return sum(self.mask)


@dataclass
class LossStats:
    """Importance-ratio statistics over the sampled tokens of one batch."""

    tokens: int = 0
    ratio_sum: float = 0.0
    ratio_max: float = 0.0
    clipped: int = 0

    def add(self, other: LossStats) -> None:
        self.tokens += other.tokens
        self.ratio_sum += other.ratio_sum
        self.ratio_max = max(self.ratio_max, other.ratio_max)
        self.clipped += other.clipped

    @property
    def ratio_mean(self) -> float:
        return self.ratio_sum / self.tokens if self.tokens else 0.0

    @property
    def clipped_fraction(self) -> float:
        return self.clipped / self.tokens if self.tokens else 0.0


def pad_batch(batch: Sequence[Datum], pad_id: int = 0):
    """Right-padded tensors: tokens [B, T], mask [B, T], sampler logprobs [B, T], attention [B, T],
    advantages [B]."""
    width = max(len(d.tokens) for d in batch)
    tokens = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width))
    sampler = torch.zeros((len(batch), width))
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    for i, d in enumerate(batch):
        n = len(d.tokens)
        tokens[i, :n] = torch.tensor(d.tokens)
        mask[i, :n] = torch.tensor(d.mask, dtype=torch.float)
        sampler[i, :n] = torch.tensor(d.sampler_logprobs, dtype=torch.float)
        attention[i, :n] = 1
    advantages = torch.tensor([d.advantage for d in batch], dtype=torch.float)
    return tokens, mask, sampler, attention, advantages


def token_logprobs(model, tokens: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    """log p(tokens[:, t+1] | tokens[:, :t+1]) for every position: [B, T-1]."""
    logits = model(input_ids=tokens[:, :-1], attention_mask=attention[:, :-1]).logits.float()
    return torch.log_softmax(logits, dim=-1).gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)


def policy_gradient_loss(
    model, batch: Sequence[Datum], *, normalizer: float, is_truncation: float, pad_id: int = 0
) -> tuple[torch.Tensor, LossStats]:
    """The truncated-importance-sampling policy-gradient loss of `batch` (see the module
    docstring), divided by `normalizer` — the sampled-token count of the whole iteration, so that
    accumulating micro-batches gives the same gradient as one big batch."""
    tokens, mask, sampler, attention, advantages = pad_batch(batch, pad_id)
    logp = token_logprobs(model, tokens, attention)
    mask, sampler = mask[:, 1:], sampler[:, 1:]
    ratio = torch.exp(logp.detach() - sampler) * mask
    weight = ratio.clamp(max=is_truncation)
    loss = -(weight * advantages.unsqueeze(1) * logp * mask).sum() / normalizer
    on = mask.bool()
    stats = LossStats(
        tokens=int(on.sum()),
        ratio_sum=float(ratio[on].sum()),
        ratio_max=float(ratio[on].max()) if on.any() else 0.0,
        clipped=int((ratio[on] > is_truncation).sum()),
    )
    return loss, stats
