"""Engine selection, and the hf engine's logprobs mode, without HTTP."""
from __future__ import annotations

import asyncio
import importlib.util

import pytest

from services.cli import main
from services.sampler.engines import SamplingParams, create_engine


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_engine_without_vllm_says_what_is_missing(model_dir, capsys):
    with pytest.raises(ImportError, match="needs the `vllm` package"):
        create_engine("vllm", str(model_dir))
    assert main(["serve", "sampler", "--model", str(model_dir), "--engine", "vllm", "--port", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "vllm" in err


def test_serving_a_directory_without_a_model_is_a_usage_error(tmp_path, capsys):
    assert main(["serve", "sampler", "--model", str(tmp_path)]) == 2
    assert "not a model directory" in capsys.readouterr().err


def test_processed_logprobs_follow_temperature_and_top_p(model_dir, tokenizer):
    import torch
    from transformers import AutoModelForCausalLM

    engine = create_engine("hf", str(model_dir), logprobs_mode="processed_logprobs")
    prompt = tokenizer("Theorem x : True.").input_ids
    params = SamplingParams(n=2, max_tokens=8, temperature=0.5, top_p=0.8, seed=1, ignore_eos=True)

    async def run():
        try:
            return await engine.generate(prompt, params, None)
        finally:
            await engine.shutdown()

    samples = asyncio.run(run())
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    for sample in samples:
        with torch.no_grad():
            logits = model(torch.tensor([prompt + sample.token_ids])).logits[0, len(prompt) - 1:-1] / 0.5
        probs = logits.softmax(-1)
        ordered, order = probs.sort(-1, descending=True)
        outside = (ordered.cumsum(-1) - ordered) >= 0.8
        logits = logits.masked_fill(torch.zeros_like(outside).scatter(1, order, outside), float("-inf"))
        expected = torch.log_softmax(logits, -1)
        for step, (token, logprob) in enumerate(zip(sample.token_ids, sample.logprobs)):
            assert logprob == pytest.approx(float(expected[step, token]), abs=1e-4)
            assert logprob > float("-inf"), "a sampled token lies inside the nucleus"
