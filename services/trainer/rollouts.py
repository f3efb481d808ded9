"""Multi-turn episodes, with the provenance of every token.

An episode is: the task's prompt → the model answers → the grader judges the answer → on failure
the grader's feedback goes back as a user message asking for a corrected block → the model answers
again, up to `max_turns` answers. Reward 1 if any answer passed.

Provenance is the point of this module. For every turn we keep the token ids that were fed to the
sampler but not sampled (`prompt_ids`: the whole rendered prompt on turn 1, the feedback message on
later turns) apart from the token ids the sampler drew (`sampled_ids`), with the sampler's own
logprob of each drawn token and the policy version that drew it. The prompt of turn t+1 is exactly
the concatenation of everything before it, so the training sequence — and its loss mask — is that
same concatenation. Nothing is ever re-rendered to find out which tokens were sampled.

Requests are seeded from (run seed, a tag, task slot, episode, turn), so the same policy plays the
same episodes again — which is what makes resumed runs continue exactly.
"""
from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from shared.protocol import FENCE_TAGS, fence_key, retry_message
from shared.schemas import Task, Verdict

# ---------------------------------------------------------------------------------------- records


@dataclass
class Turn:
    """One answer. `prompt_ids` are the tokens added before it that the policy did not sample."""

    prompt_ids: list[int]
    sampled_ids: list[int]
    sampler_logprobs: list[float]
    policy_version: int
    text: str
    finish_reason: str | None = None
    verdict: Verdict | None = None

    @property
    def passed(self) -> bool:
        return self.verdict is not None and self.verdict.passed


@dataclass
class Episode:
    """One task played to the end (a pass or `max_turns` answers). Discard after training on it."""

    task: Task
    index: int  # position within its group
    turns: list[Turn] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return any(t.passed for t in self.turns)

    @property
    def reward(self) -> float:
        return 1.0 if self.passed else 0.0

    @property
    def done(self) -> bool:
        return self.passed

    def context_ids(self) -> list[int]:
        """Every token so far, in the order the sampler saw them."""
        return [tok for t in self.turns for tok in (*t.prompt_ids, *t.sampled_ids)]

    def training_sequence(self) -> tuple[list[int], list[int], list[float]]:
        """(tokens, mask, sampler_logprobs), all of one length: mask 1 and the sampler's logprob on
        sampled tokens, mask 0 and 0.0 on prompt and feedback tokens."""
        tokens: list[int] = []
        mask: list[int] = []
        logprobs: list[float] = []
        for t in self.turns:
            tokens += t.prompt_ids + t.sampled_ids
            mask += [0] * len(t.prompt_ids) + [1] * len(t.sampled_ids)
            logprobs += [0.0] * len(t.prompt_ids) + list(t.sampler_logprobs)
        return tokens, mask, logprobs

    def passed_by_turn(self, turns: int) -> list[int]:
        """[0/1 solved within 1 answer, within 2, …] over `turns` answers (cumulative)."""
        first = next((i for i, t in enumerate(self.turns) if t.passed), None)
        return [int(first is not None and first <= i) for i in range(turns)]

    def record(self, iteration: int, split: str) -> dict:
        """The episode as one line of rollouts.jsonl / one episode posted to the API."""
        return {
            "iteration": iteration,
            "split": split,
            "task_id": self.task.id,
            "family": self.task.family,
            "index": self.index,
            "prompt": self.task.prompt,
            "reward": self.reward,
            "passed": self.passed,
            "n_turns": len(self.turns),
            "policy_version": self.turns[0].policy_version if self.turns else None,
            "turns": [
                {
                    "index": i,
                    "completion": t.text,
                    "sampled_tokens": len(t.sampled_ids),
                    "passed": t.passed,
                    "reason": t.verdict.reason.value if t.verdict else "",
                    "feedback": t.verdict.feedback if t.verdict else "",
                    "policy_version": t.policy_version,
                    "finish_reason": t.finish_reason,
                    "prompt_ids": t.prompt_ids,
                    "sampled_ids": t.sampled_ids,
                    "sampler_logprobs": t.sampler_logprobs,
                }
                for i, t in enumerate(self.turns)
            ],
        }


# ---------------------------------------------------------------------------------------- interfaces


@dataclass
class Sample:
    """One completion as the sampler returned it."""

    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str | None = None


class Sampler(Protocol):
    async def complete(
        self, model: str, prompt_ids: list[int], *, n: int, seed: int, temperature: float, max_tokens: int
    ) -> list[Sample]:
        """`n` completions of `prompt_ids` by `model` (a served model or adapter name)."""


class Grader(Protocol):
    def grade(self, items: Sequence[tuple[Task, str]]) -> list[Verdict]:
        """One verdict per (task, answer), in order."""


# ---------------------------------------------------------------------------------------- rendering


class ChatRenderer:
    """Token ids for the parts of a conversation the policy does not write, from the tokenizer's
    own chat template: the first prompt, and each feedback message after an answer."""

    _ANSWER = "\u0000ANSWER\u0000"

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.eos = tokenizer.eos_token
        self.eos_id = tokenizer.eos_token_id

    def _render(self, messages: list[dict], generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=False)

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def first_prompt(self, prompt: str) -> list[int]:
        return self._encode(self._render([{"role": "user", "content": prompt}], True))

    def feedback(self, sampled_ids: Sequence[int], message: str) -> list[int]:
        """The tokens that follow a sampled answer: what the template puts after an assistant
        message (minus the end-of-sequence token when the answer already sampled it), the user's
        feedback message, and the generation prompt."""
        text = self._render(
            [{"role": "user", "content": "?"}, {"role": "assistant", "content": self._ANSWER},
             {"role": "user", "content": message}],
            True,
        )
        tail = text[text.index(self._ANSWER) + len(self._ANSWER):]
        if sampled_ids and sampled_ids[-1] == self.eos_id and tail.startswith(self.eos):
            tail = tail[len(self.eos):]
        return self._encode(tail)


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from any parts (hash() is salted per process; this is not)."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


# ---------------------------------------------------------------------------------------- playing


@dataclass
class Timings:
    sampling_s: float = 0.0
    grading_s: float = 0.0


async def _sample_turn(
    sampler: Sampler, renderer: ChatRenderer, model: str, version: int, groups: list[list[Episode]],
    seed_tag: tuple, temperature: float, max_tokens: int,
) -> None:
    """Sample the next answer of every unfinished episode. On turn 1 a group is one request with
    n = G; on later turns every episode has its own context, so one request each."""
    requests = []  # (episodes the request serves, new prompt ids per episode, request coroutine)
    for slot, group in enumerate(groups):
        live = [e for e in group if not e.done]
        if not live:
            continue
        turn = len(live[0].turns)
        if turn == 0:
            prompt = renderer.first_prompt(live[0].task.prompt)
            seed = derive_seed(*seed_tag, slot, 0)
            requests.append((live, [prompt] * len(live), sampler.complete(
                model, prompt, n=len(live), seed=seed, temperature=temperature, max_tokens=max_tokens)))
            continue
        for e in live:
            last = e.turns[-1]
            tags = FENCE_TAGS[fence_key(e.task.lang, e.task.kind)]
            added = renderer.feedback(last.sampled_ids, retry_message(last.verdict.feedback, tags))
            seed = derive_seed(*seed_tag, slot, len(e.turns), e.index)
            requests.append(([e], [added], sampler.complete(
                model, e.context_ids() + added, n=1, seed=seed, temperature=temperature, max_tokens=max_tokens)))
    results = await asyncio.gather(*(r[2] for r in requests))
    for (episodes, prompts, _), samples in zip(requests, results):
        for e, prompt, s in zip(episodes, prompts, samples):
            e.turns.append(Turn(prompt, s.token_ids, s.logprobs, version, s.text, s.finish_reason))


def play(
    tasks: Sequence[Task], *, group_size: int, max_turns: int, sampler: Sampler, grader: Grader,
    renderer: ChatRenderer, model: str, version: int, seed_tag: tuple, temperature: float,
    max_tokens: int, timings: Timings | None = None,
) -> list[list[Episode]]:
    """Play `group_size` episodes of every task, all groups turn by turn together: sample the turn
    for every unfinished episode, grade all those answers in one batch, repeat. Returns groups_P
    of episodes_G, in task order."""
    timings = timings or Timings()
    groups = [[Episode(task, i) for i in range(group_size)] for task in tasks]
    for _ in range(max_turns):
        live = [e for g in groups for e in g if not e.done]
        if not live:
            break
        start = time.perf_counter()
        asyncio.run(_sample_turn(sampler, renderer, model, version, groups, seed_tag, temperature, max_tokens))
        timings.sampling_s += time.perf_counter() - start
        start = time.perf_counter()
        verdicts = grader.grade([(e.task, e.turns[-1].text) for e in live])
        timings.grading_s += time.perf_counter() - start
        for e, verdict in zip(live, verdicts):
            e.turns[-1].verdict = verdict
    return groups
