"""Supervised warm start: teach a model the answer format and some proof templates from the gold
proofs of the train split, before reinforcement learning.

Each example is the chat-rendered task prompt (not trained on) followed by the fenced gold block
and the end-of-sequence token (trained on) — the same tokens the model would sample in an
episode. Full-model fine-tuning: the small models this is for learn templates in about a minute
on a CPU (see docs/trainer.md), and the result is an ordinary model directory that the sampler
serves as the base model and the trainer puts its LoRA adapter on.
"""
from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from pathlib import Path

import torch

from services.trainer.losses import Datum, pad_batch, token_logprobs
from services.trainer.rollouts import ChatRenderer
from shared.protocol import FENCE_TAGS, fence_block, fence_key
from shared.schemas import Task

log = logging.getLogger(__name__)


def sft_datum(task: Task, renderer: ChatRenderer) -> Datum:
    """The prompt (mask 0) then the fenced gold and end-of-sequence (mask 1)."""
    if not task.gold:
        raise ValueError(f"task {task.id} has no gold answer")
    prompt = renderer.first_prompt(task.prompt)
    tag = FENCE_TAGS[fence_key(task.lang, task.kind)][0]
    answer = renderer.tokenizer.encode(fence_block(task.gold, tag), add_special_tokens=False) + [renderer.eos_id]
    return Datum(prompt + answer, [0] * len(prompt) + [1] * len(answer), [0.0] * (len(prompt) + len(answer)), 1.0)


def supervised_finetune(
    model_dir: Path, tasks: Sequence[Task], out: Path, *, steps: int, batch: int = 32, lr: float = 2e-3,
    seed: int = 0, threads: int | None = None,
) -> list[float]:
    """Fine-tune the whole model at `model_dir` on the golds of `tasks` for `steps` AdamW steps of
    `batch` examples (a seeded shuffle, reshuffled each pass); write model and tokenizer to `out`.
    Returns the loss of every step (mean negative log-likelihood per answer token)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not tasks:
        raise ValueError("no tasks to fine-tune on")
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    renderer = ChatRenderer(tokenizer)
    data = [sft_datum(t, renderer) for t in tasks]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng = random.Random(seed)
    order: list[int] = []
    losses: list[float] = []
    model.train()
    for step in range(steps):
        while len(order) < batch:
            order += rng.sample(range(len(data)), len(data))
        chosen, order = order[:batch], order[batch:]
        tokens, mask, _, attention, _ = pad_batch([data[i] for i in chosen], tokenizer.pad_token_id or 0)
        mask = mask[:, 1:]
        loss = -(token_logprobs(model, tokens, attention) * mask).sum() / mask.sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step % 25 == 0 or step == steps - 1:
            log.info("sft step %d/%d | loss %.4f", step + 1, steps, losses[-1])
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return losses
