"""LoRA adapters loaded into the running sampler, addressed by name as vLLM does."""
from __future__ import annotations

import httpx
import pytest

from tests.sampler.conftest import SERVED_NAME, make_adapter
from tests.sampler.helpers import PROMPT, assert_logprobs_match, extra, token_ids_of


def sample(client, model, prompt_ids):
    out = client.completions.create(model=model, prompt=prompt_ids, n=2, max_tokens=16, seed=7, logprobs=0,
                                    extra_body={"return_tokens_as_token_ids": True})
    return [(token_ids_of(c), c.logprobs.token_logprobs) for c in out.choices]


def test_loading_an_adapter_changes_outputs_and_unloading_restores_them(
        client, server, tokenizer, reference, adapter_dir):
    prompt_ids = tokenizer(PROMPT).input_ids
    before = sample(client, SERVED_NAME, prompt_ids)

    load = httpx.post(f"{server}/v1/load_lora_adapter", json={"lora_name": "step-1", "lora_path": str(adapter_dir)})
    assert load.status_code == 200, load.text
    assert "step-1" in load.text
    cards = {m.id: m for m in client.models.list().data}
    assert extra(cards["step-1"], "parent") == SERVED_NAME and extra(cards["step-1"], "root") == str(adapter_dir)

    tuned = sample(client, "step-1", prompt_ids)
    assert [lp for _, lp in tuned] != [lp for _, lp in before]
    for token_ids, logprobs in tuned:
        assert_logprobs_match(reference, prompt_ids, token_ids, logprobs, adapter=True)
    # The base model is still served, unchanged, next to the adapter.
    assert sample(client, SERVED_NAME, prompt_ids) == before

    unload = httpx.post(f"{server}/v1/unload_lora_adapter", json={"lora_name": "step-1"})
    assert unload.status_code == 200, unload.text
    assert [m.id for m in client.models.list().data] == [SERVED_NAME]
    assert sample(client, SERVED_NAME, prompt_ids) == before
    missing = httpx.post(f"{server}/v1/completions", json={"model": "step-1", "prompt": PROMPT})
    assert missing.status_code == 404


def test_reloading_in_place_swaps_the_weights(client, server, tokenizer, model_dir, adapter_dir, tmp_path):
    prompt_ids = tokenizer(PROMPT).input_ids
    other_dir = make_adapter(model_dir, tmp_path / "other", seed=2)
    body = {"lora_name": "policy", "lora_path": str(adapter_dir)}
    assert httpx.post(f"{server}/v1/load_lora_adapter", json=body).status_code == 200
    try:
        first = sample(client, "policy", prompt_ids)
        again = httpx.post(f"{server}/v1/load_lora_adapter", json={**body, "lora_path": str(other_dir)})
        assert again.status_code == 400 and again.json()["error"]["type"] == "InvalidUserInput"
        assert sample(client, "policy", prompt_ids) == first
        inplace = {"lora_name": "policy", "lora_path": str(other_dir), "load_inplace": True}
        assert httpx.post(f"{server}/v1/load_lora_adapter", json=inplace).status_code == 200
        assert sample(client, "policy", prompt_ids) != first
    finally:
        httpx.post(f"{server}/v1/unload_lora_adapter", json={"lora_name": "policy"})


def test_requests_for_one_adapter_run_beside_base_requests(client, server, tokenizer, reference, adapter_dir):
    import concurrent.futures

    prompt_ids = tokenizer(PROMPT).input_ids
    assert httpx.post(f"{server}/v1/load_lora_adapter",
                      json={"lora_name": "mixed", "lora_path": str(adapter_dir)}).status_code == 200
    try:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            jobs = [pool.submit(sample, client, name, prompt_ids) for name in ["mixed", SERVED_NAME] * 3]
            results = [job.result() for job in jobs]
        for name, result in zip(["mixed", SERVED_NAME] * 3, results):
            for token_ids, logprobs in result:
                assert_logprobs_match(reference, prompt_ids, token_ids, logprobs, adapter=name == "mixed")
    finally:
        httpx.post(f"{server}/v1/unload_lora_adapter", json={"lora_name": "mixed"})


@pytest.mark.parametrize("body, status, err_type", [
    ({"lora_name": "ghost", "lora_path": "/nonexistent/adapter"}, 404, "NotFoundError"),
    ({"lora_name": "ghost"}, 400, "Bad Request"),
    ({"lora_name": "", "lora_path": "/tmp"}, 400, "InvalidUserInput"),
])
def test_bad_adapter_load_is_refused(server, body, status, err_type):
    response = httpx.post(f"{server}/v1/load_lora_adapter", json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["type"] == err_type and error["code"] == status and error["message"]


def test_unloading_an_unknown_adapter_is_404(server):
    response = httpx.post(f"{server}/v1/unload_lora_adapter", json={"lora_name": "never-loaded"})
    assert response.status_code == 404
    assert response.json()["error"] == {
        "message": "The lora adapter 'never-loaded' cannot be found.", "type": "NotFoundError",
        "param": None, "code": 404,
    }


def test_an_adapter_for_another_model_is_400_and_leaves_the_base_intact(client, server, tokenizer, tmp_path):
    from services.sampler.model_init import init_model

    other_model = init_model(tmp_path / "other-model", [], hidden=32, layers=2, heads=2)
    mismatched = make_adapter(other_model, tmp_path / "mismatched", seed=3)
    prompt_ids = tokenizer(PROMPT).input_ids
    before = sample(client, SERVED_NAME, prompt_ids)
    response = httpx.post(f"{server}/v1/load_lora_adapter", json={"lora_name": "wrong", "lora_path": str(mismatched)})
    assert response.status_code == 400
    assert "size mismatch" in response.json()["error"]["message"]
    assert [m.id for m in client.models.list().data] == [SERVED_NAME]
    assert sample(client, SERVED_NAME, prompt_ids) == before
