"""A tiny model built from scratch (the sampler's `init_model`) for the trainer's unit tests."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from services.sampler.model_init import init_model

    return init_model(tmp_path_factory.mktemp("trainer") / "model", [], hidden=32, layers=2, heads=2,
                      context=512, seed=0)


# Two M0 families: the `concrete` bridge (`reflexivity.`) and `affine` (induction and lia).
M0 = Path(__file__).resolve().parents[2] / "data" / "m0" / "rocq" / "tasks.jsonl"
FAMILIES = ["concrete", "affine"]
# The output layer too: a small model's token choices then move ~3x faster per step (docs/trainer.md).
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]


@pytest.fixture(scope="session")
def warm_model_dir(tmp_path_factory) -> Path:
    """A small model built on the M0 corpus and fine-tuned briefly on the two families' golds (loss
    6.2 -> 0.05; about 1 in 5 first answers passes, measured with coqc), so that some answers pass
    and most fail: groups with reward variance from the start, and room to improve."""
    from services.sampler.model_init import init_model
    from services.trainer.sft import supervised_finetune
    from shared.tasks import load_tasks

    root = tmp_path_factory.mktemp("warm")
    base = init_model(root / "base", [M0], hidden=64, layers=2, heads=2, context=512, seed=0)
    tasks = load_tasks(M0, split="train", family=FAMILIES)
    supervised_finetune(base, tasks, root / "sft", steps=45, batch=16, lr=5e-3, seed=0, threads=1)
    return root / "sft"


@pytest.fixture(scope="session")
def stack(tmp_path_factory, warm_model_dir):
    """The real API (SQLite, local grading pool of coqc) and sampler (hf engine) as processes."""
    from services.trainer.stack import Stack

    with Stack(tmp_path_factory.mktemp("stack")) as running:
        running.start_api(grade_workers=2)
        running.start_sampler(warm_model_dir, threads=1)
        yield running


def small_config(stack, model: Path, run_dir: Path, name: str, **overrides):
    from services.trainer.config import TrainConfig

    api, sampler = stack.services[0], stack.services[1]
    fields = dict(
        name=name, run_dir=run_dir, model=model, api_url=api.url, api_token=stack.token, sampler_url=sampler.url,
        seed=0, torch_threads=1, lora_rank=8, lora_alpha=16.0, lr=4e-3, micro_batch=16, lora_targets=LORA_TARGETS,
        group_size=4, problems_per_iter=2, max_turns=2, temperature=1.0, max_tokens=32,
        phases=[{"tasks": str(M0), "iterations": 2, "families": FAMILIES}],
        eval_families=FAMILIES, eval_limit=4, eval_every=100, eval_k=2, eval_max_turns=2,
    )
    return TrainConfig(**{**fields, **overrides})
