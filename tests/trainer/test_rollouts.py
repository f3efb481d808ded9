"""Provenance of episode tokens: the rendered prompt and feedback pieces, concatenated with the
sampled answers, are exactly the conversation the chat template renders; seeds are stable."""
from __future__ import annotations

import pytest

from services.trainer.rollouts import ChatRenderer, derive_seed


@pytest.fixture(scope="module")
def renderer(tiny_model_dir):
    from transformers import AutoTokenizer

    return ChatRenderer(AutoTokenizer.from_pretrained(tiny_model_dir))


def conversation_text(renderer, messages):
    return renderer.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def test_first_prompt_is_the_template_with_generation_prompt(renderer):
    ids = renderer.first_prompt("Prove it.")
    assert renderer.tokenizer.decode(ids) == conversation_text(renderer, [{"role": "user", "content": "Prove it."}])


@pytest.mark.parametrize("ended_with_eos", [True, False])
def test_prompt_answer_feedback_concatenation_is_the_rendered_conversation(renderer, ended_with_eos):
    """Whether the answer stopped at end-of-sequence (the template's own end of an assistant
    message) or ran out of tokens, the tokens fed for turn 2 spell the whole conversation."""
    tok = renderer.tokenizer
    prompt = renderer.first_prompt("Prove it.")
    answer = tok.encode("```coq\nlia.\n```", add_special_tokens=False) + ([tok.eos_token_id] if ended_with_eos else [])
    feedback = renderer.feedback(answer, "Your proof failed: no.")
    text = tok.decode(prompt + answer + feedback)
    expected = conversation_text(renderer, [
        {"role": "user", "content": "Prove it."},
        {"role": "assistant", "content": "```coq\nlia.\n```"},
        {"role": "user", "content": "Your proof failed: no."},
    ])
    assert text == expected
    assert feedback[0] != tok.eos_token_id if ended_with_eos else feedback[0] == tok.eos_token_id


def test_derived_seeds_are_stable_and_distinct():
    assert derive_seed(0, "train", 3, 1) == derive_seed(0, "train", 3, 1)
    assert len({derive_seed(0, "train", i, j) for i in range(20) for j in range(20)}) == 400
    assert 0 <= derive_seed("x") < 2**31
