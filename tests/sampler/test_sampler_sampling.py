"""The sampler through the official `openai` client: completions, chat, n, stop, seeds, and the
logprobs the trainer's importance weights depend on."""
from __future__ import annotations

import concurrent.futures
import time

import httpx

from tests.sampler.conftest import SERVED_NAME
from tests.sampler.helpers import PROMPT, assert_logprobs_match, extra, metric, token_ids_of

def test_models_lists_the_base_model(client):
    models = client.models.list()
    assert [m.id for m in models.data] == [SERVED_NAME]
    assert extra(models.data[0], "max_model_len") == 256


def test_completion_returns_n_samples_with_token_ids(client, tokenizer):
    out = client.completions.create(
        model=SERVED_NAME, prompt=PROMPT, n=4, max_tokens=12, seed=3, logprobs=0,
        extra_body={"return_token_ids": True, "return_tokens_as_token_ids": True},
    )
    assert len(out.choices) == 4
    assert [c.index for c in out.choices] == [0, 1, 2, 3]
    for choice in out.choices:
        ids = extra(choice, "token_ids")
        assert token_ids_of(choice) == ids
        assert len(choice.logprobs.token_logprobs) == len(ids)
        assert extra(choice, "prompt_token_ids") == tokenizer(PROMPT).input_ids
        assert choice.text == tokenizer.decode(ids, skip_special_tokens=True)
    assert len({tuple(extra(c, "token_ids")) for c in out.choices}) > 1, "n samples should differ"
    assert out.usage.completion_tokens == sum(len(extra(c, "token_ids")) for c in out.choices)


def test_completion_logprobs_equal_a_direct_forward_pass(client, tokenizer, reference):
    prompt_ids = tokenizer(PROMPT).input_ids
    # vLLM's default logprobs are those of the raw distribution, whatever temperature and top-p.
    for temperature, top_p in [(1.0, 1.0), (0.7, 0.9)]:
        out = client.completions.create(
            model=SERVED_NAME, prompt=prompt_ids, n=3, max_tokens=20, temperature=temperature, top_p=top_p,
            seed=11, logprobs=0, extra_body={"return_tokens_as_token_ids": True},
        )
        for choice in out.choices:
            assert_logprobs_match(reference, prompt_ids, token_ids_of(choice), choice.logprobs.token_logprobs)


def test_completion_top_logprobs_hold_the_sampled_token_and_k_best(client, reference, tokenizer):
    prompt_ids = tokenizer(PROMPT).input_ids
    out = client.completions.create(model=SERVED_NAME, prompt=prompt_ids, max_tokens=5, seed=2, logprobs=3,
                                    extra_body={"return_tokens_as_token_ids": True})
    choice = out.choices[0]
    rows = reference(prompt_ids + token_ids_of(choice))
    for step, top in enumerate(choice.logprobs.top_logprobs):
        best = rows[len(prompt_ids) - 1 + step].topk(3)
        expected = {f"token_id:{i}" for i in best.indices.tolist()}
        assert expected <= set(top) and choice.logprobs.tokens[step] in top
        assert len(top) in (3, 4)


def test_chat_completion_returns_logprobs_and_prompt_ids(client, tokenizer, reference):
    messages = [{"role": "user", "content": "Prove that n + 0 = n."}]
    out = client.chat.completions.create(
        model=SERVED_NAME, messages=messages, n=2, max_tokens=15, seed=5, logprobs=True, top_logprobs=2,
        extra_body={"return_token_ids": True, "return_tokens_as_token_ids": True},
    )
    prompt_ids = extra(out, "prompt_token_ids")
    expected_prompt = tokenizer(
        tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
        add_special_tokens=False,
    ).input_ids
    assert prompt_ids == expected_prompt
    assert len(out.choices) == 2
    for choice in out.choices:
        ids = extra(choice, "token_ids")
        content = choice.logprobs.content
        assert [int(c.token.removeprefix("token_id:")) for c in content] == ids
        assert all(len(c.top_logprobs) == 2 for c in content)
        assert choice.message.role == "assistant"
        assert choice.message.content == tokenizer.decode(ids, skip_special_tokens=True)
        assert_logprobs_match(reference, prompt_ids, ids, [c.logprob for c in content])


def test_chat_without_max_tokens_may_fill_the_context(client, tokenizer):
    content = PROMPT
    while len(tokenizer(content).input_ids) < 230:  # leave only a few tokens of room
        content += " n"
    out = client.chat.completions.create(
        model=SERVED_NAME, messages=[{"role": "user", "content": content}], seed=1,
        extra_body={"ignore_eos": True},
    )
    prompt_len, completion_len = out.usage.prompt_tokens, out.usage.completion_tokens
    assert prompt_len + completion_len == 256 and completion_len > 0
    assert out.choices[0].finish_reason == "length"


def test_seed_reproduces_alone_and_inside_a_busy_batch(client):
    def sample(seed):
        out = client.completions.create(model=SERVED_NAME, prompt=PROMPT, n=2, max_tokens=24, seed=seed,
                                        extra_body={"return_token_ids": True})
        return [extra(c, "token_ids") for c in out.choices]

    def noise(i):
        return client.completions.create(model=SERVED_NAME, prompt=PROMPT[: 10 + i], n=3, max_tokens=40,
                                         extra_body={"ignore_eos": True})

    alone = sample(42)
    assert sample(42) == alone
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        busy = [pool.submit(noise, i) for i in range(6)]
        batched = pool.submit(sample, 42)
        assert batched.result() == alone
        for job in busy:
            job.result()
    assert sample(43) != alone


def test_stop_string_cuts_text_and_is_reported(client):
    params = dict(model=SERVED_NAME, prompt=PROMPT, max_tokens=40, seed=9)
    full = client.completions.create(**params, extra_body={"ignore_eos": True}).choices[0].text
    stop = full[len(full) // 2: len(full) // 2 + 2]
    assert stop.strip(), "the sampled text should give a usable stop string"
    cut = client.completions.create(**params, stop=[stop], extra_body={"ignore_eos": True}).choices[0]
    assert cut.text == full[: full.index(stop)]
    assert cut.finish_reason == "stop"
    assert extra(cut, "stop_reason") == stop
    kept = client.completions.create(**params, stop=stop, extra_body={"ignore_eos": True,
                                                                      "include_stop_str_in_output": True})
    assert kept.choices[0].text == full[: full.index(stop) + len(stop)]


def test_max_tokens_ends_with_length(client):
    out = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=7, seed=1, logprobs=0,
                                    extra_body={"ignore_eos": True})
    assert out.choices[0].finish_reason == "length"
    assert len(out.choices[0].logprobs.tokens) == 7


def test_greedy_sampling_is_deterministic_without_a_seed(client, tokenizer, reference):
    prompt_ids = tokenizer(PROMPT).input_ids
    texts = set()
    for _ in range(2):
        out = client.completions.create(model=SERVED_NAME, prompt=prompt_ids, max_tokens=10, temperature=0,
                                        logprobs=0, extra_body={"return_token_ids": True})
        ids = extra(out.choices[0], "token_ids")
        texts.add(tuple(ids))
    (ids,) = texts
    rows = reference(prompt_ids + list(ids))
    assert list(ids) == [int(rows[len(prompt_ids) - 1 + i].argmax()) for i in range(len(ids))]


def test_a_batch_of_prompts_gives_n_choices_per_prompt(client, tokenizer):
    prompts = [PROMPT, "Lemma x : True.", "Proof."]
    out = client.completions.create(model=SERVED_NAME, prompt=prompts, n=2, max_tokens=4, seed=0,
                                    extra_body={"return_token_ids": True})
    assert [c.index for c in out.choices] == list(range(6))
    assert [extra(c, "prompt_token_ids") for c in out.choices[::2]] == [tokenizer(p).input_ids for p in prompts]
    assert out.usage.prompt_tokens == sum(len(tokenizer(p).input_ids) for p in prompts)


def test_a_request_joins_a_running_batch_and_finishes_first(client, server, tokenizer, reference):
    long_body = {"model": SERVED_NAME, "prompt": PROMPT, "max_tokens": 200, "ignore_eos": True}
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        long_job = pool.submit(httpx.post, f"{server}/v1/completions", json=long_body, timeout=120)
        while not metric(server, "running_sequences"):
            assert not long_job.done(), long_job.result().text
            time.sleep(0.01)
        short_prompt = tokenizer("Lemma joined : True.").input_ids  # another length than the running one
        short = client.completions.create(model=SERVED_NAME, prompt=short_prompt, max_tokens=3, seed=4,
                                          logprobs=0, extra_body={"ignore_eos": True,
                                                                  "return_tokens_as_token_ids": True})
        assert not long_job.done(), "the short request should not wait for the running batch to finish"
        assert long_job.result().status_code == 200
    assert_logprobs_match(reference, short_prompt, token_ids_of(short.choices[0]),
                          short.choices[0].logprobs.token_logprobs)
