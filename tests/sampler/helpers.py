"""Helpers the sampler tests share."""
from __future__ import annotations

import re

import httpx
import pytest

PROMPT = "Theorem add_0_r : forall n : nat, n + 0 = n.\nProof.\n"
TOLERANCE = 1e-4


def extra(obj, name):
    """A vLLM field the openai client keeps as an extra attribute."""
    return (obj.model_extra or {}).get(name)


def token_ids_of(choice) -> list[int]:
    """Token ids from `return_tokens_as_token_ids` strings (`token_id:<id>`)."""
    return [int(token.removeprefix("token_id:")) for token in choice.logprobs.tokens]


def assert_logprobs_match(reference, prompt_ids, token_ids, logprobs, adapter=False):
    rows = reference(prompt_ids + token_ids, adapter=adapter)
    assert len(logprobs) == len(token_ids) > 0
    for step, (token, logprob) in enumerate(zip(token_ids, logprobs)):
        expected = float(rows[len(prompt_ids) - 1 + step, token])
        assert logprob == pytest.approx(expected, abs=TOLERANCE), f"step {step}"


def metric(server: str, name: str) -> float:
    """The current value of the sampler's Prometheus metric `verirl_sampler_<name>`."""
    text = httpx.get(f"{server}/metrics").text
    return float(re.search(rf"^verirl_sampler_{name} (\S+)$", text, re.M).group(1))
