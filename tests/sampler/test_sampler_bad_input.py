"""Bad requests get vLLM's error JSON with a 4xx, and a client that walks away does not wedge the
batching loop."""
from __future__ import annotations

import time

import httpx
import openai
import pytest

from tests.sampler.conftest import CONTEXT, SERVED_NAME
from tests.sampler.helpers import PROMPT, metric


def error_of(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == status and body["error"]["message"]
    return body["error"]


def test_unknown_model_is_404(server, client):
    error = error_of(httpx.post(f"{server}/v1/completions", json={"model": "nope", "prompt": "x"}), 404)
    assert error == {"message": "The model `nope` does not exist.", "type": "NotFoundError", "param": "model",
                     "code": 404}
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])


def test_max_tokens_beyond_the_context_is_400(server, client):
    error = error_of(httpx.post(f"{server}/v1/completions",
                                json={"model": SERVED_NAME, "prompt": PROMPT, "max_tokens": CONTEXT}), 400)
    assert error["param"] == "max_tokens" and "maximum context length is 256" in error["message"]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=SERVED_NAME, messages=[{"role": "user", "content": "x"}],
                                       max_tokens=10_000)


def test_a_prompt_that_fills_the_context_is_400(server):
    error = error_of(httpx.post(f"{server}/v1/completions",
                                json={"model": SERVED_NAME, "prompt": [5] * CONTEXT, "max_tokens": 1}), 400)
    assert error["param"] == "input_tokens"


@pytest.mark.parametrize("content, param", [
    (b"{not json", None),
    (b'{"model": "tiny"}', "prompt"),
    (b'{"model": "tiny", "prompt": "x", "n": "many"}', "n"),
    (b'{"model": "tiny", "prompt": "x", "temperature": -1}', "temperature"),
    (b'{"model": "tiny", "prompt": "x", "max_tokens": 0}', "max_tokens"),
    (b'{"model": "tiny", "prompt": [1, -4]}', None),
])
def test_malformed_completion_body_is_400(server, content, param):
    response = httpx.post(f"{server}/v1/completions", content=content, headers={"content-type": "application/json"})
    error = error_of(response, 400)
    assert error["type"] == "Bad Request"
    if param:
        assert error["param"] == param


@pytest.mark.parametrize("body, param", [
    ({"prompt": [1, 10_000]}, "prompt"),
    ({"prompt": "x", "logprobs": 21}, "logprobs"),
    ({"prompt": "x", "stream": True}, "stream"),
    ({"prompt": "x", "top_k": 5}, "top_k"),
])
def test_refused_completion_options_are_400(server, body, param):
    error = error_of(httpx.post(f"{server}/v1/completions", json={"model": SERVED_NAME, **body}), 400)
    assert error["type"] == "BadRequestError" and error["param"] == param


def test_chat_top_logprobs_without_logprobs_is_400(server):
    body = {"model": SERVED_NAME, "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}
    error = error_of(httpx.post(f"{server}/v1/chat/completions", json=body), 400)
    assert error["param"] == "top_logprobs"


def test_unknown_route_is_404_in_the_same_shape(server):
    error_of(httpx.get(f"{server}/v1/nothing-here"), 404)


def test_a_client_that_disconnects_has_its_sequences_cancelled(server, client):
    aborted = metric(server, "requests_aborted_total")
    long_request = {"model": SERVED_NAME, "prompt": PROMPT, "n": 16, "max_tokens": CONTEXT - 40,
                    "ignore_eos": True}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server}/v1/completions", json=long_request, timeout=httpx.Timeout(5, read=0.15))
    deadline = time.monotonic() + 30
    while metric(server, "requests_aborted_total") == aborted or metric(server, "running_sequences"):
        assert time.monotonic() < deadline, "the abandoned request kept running"
        time.sleep(0.05)
    out = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=5)
    assert out.choices[0].finish_reason in ("stop", "length")


def test_health(server):
    assert httpx.get(f"{server}/health").status_code == 200
