"""Multi-turn GRPO with LoRA, one iteration at a time.

Each iteration takes P problems from the current curriculum phase's pool and plays G episodes of
each through the sampler; an episode is answer → grade (the API's /grade/batch) → on failure the
grader's feedback as a user message → retry, up to `max_turns` answers; reward 1 if any passed.
Advantages are group-centred (reward minus the group mean, optionally over the group std) and
land on every sampled token of every turn and nothing else. One AdamW step on the LoRA
parameters per iteration, gradients accumulated over micro-batches; then the adapter is saved and
loaded into the sampler under a new versioned name, which the next episodes record.

What I deliberately leave out: no KL penalty to a reference model and no PPO-style clipped
surrogate. We take one gradient step per batch of fresh samples, so the only off-policyness is the
sampler's numerics (and, on a GPU sampler, its kernels); a truncated importance ratio
exp(logp_trainer − logp_sampler) ≤ C corrects for that (see `losses.py`). A group whose G episodes
all got the same reward gives no gradient; an iteration where every group is like that is
"dead": no optimiser step, no new policy version.

Held-out evals run at iteration 0, every `eval_every` iterations and at the end: k episodes per
held-out task, up to `eval_max_turns` answers, always with the same seeds (so two evals differ
only by the policy). Everything is reported to the API and appended to `<run_dir>/rollouts.jsonl`.
"""
from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from services.trainer import checkpoints
from services.trainer.config import TrainConfig
from services.trainer.losses import Datum, LossStats, group_advantages, policy_gradient_loss
from services.trainer.pools import TaskPool
from services.trainer.rollouts import ChatRenderer, Episode, Grader, Sampler, Timings, play
from shared.metrics import TaskEval, rollup
from shared.tasks import load_tasks

log = logging.getLogger(__name__)


class Recorder(Protocol):
    """Where a run's records go (the API). Every write is idempotent by its natural key."""

    def start_run(self, name: str, config: dict) -> int: ...
    def log_iteration(self, run_id: int, iteration: int, metrics: dict) -> None: ...
    def log_evals(self, run_id: int, iteration: int, evals: Sequence[TaskEval]) -> None: ...
    def log_episodes(self, run_id: int, records: Sequence[dict]) -> None: ...
    def finish_run(self, run_id: int, status: str) -> None: ...


class Adapters(Protocol):
    """The sampler's adapter registry (vLLM's load/unload LoRA endpoints)."""

    def load_adapter(self, name: str, path: str) -> None: ...
    def unload_adapter(self, name: str) -> None: ...


@dataclass
class RunResult:
    run_id: int
    status: str  # "finished" | "stopped"
    iterations: list[dict] = field(default_factory=list)
    evals: dict[int, dict] = field(default_factory=dict)  # iteration -> rollup


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def train(
    cfg: TrainConfig, *, sampler: Sampler, adapters: Adapters, grader: Grader, recorder: Recorder,
    resume: Path | None = None, stop_after: int | None = None, should_stop: Callable[[], bool] = lambda: False,
    echo: Callable[[str], None] = print,
) -> RunResult:
    """Run (or resume) the training `cfg` describes. Stops early, with a checkpoint, once
    `stop_after` iterations are done or when `should_stop()` turns true between iterations."""
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # ------------------------------------------------------------------------------------------
    # Model, optimiser, state
    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    renderer = ChatRenderer(tokenizer)
    base = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32)
    checkpoint = checkpoints.latest(resume) if resume is not None else None
    if checkpoint is None:
        lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules=cfg.lora_targets,
                          lora_dropout=0.0, task_type="CAUSAL_LM")
        model = get_peft_model(base, lora)
    else:
        model = PeftModel.from_pretrained(base, checkpoint / "adapter", is_trainable=True)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if checkpoint is None:
        state = {"iteration": 0, "phase": 0, "cursor": 0, "version": 0,
                 "run_id": recorder.start_run(cfg.name, cfg.model_dump(mode="json"))}
        (run_dir / "config.json").write_text(cfg.model_dump_json(indent=2), encoding="utf-8")
    else:
        state = checkpoints.load_state(checkpoint, optimizer)
        echo(f"resumed from {checkpoint} at iteration {state['iteration']}")
    run_id = state["run_id"]
    pad_id = tokenizer.pad_token_id or 0

    # ------------------------------------------------------------------------------------------
    # Adapter sync: the sampler serves policy version N as adapter `<run>-policy-vN`.
    def adapter_name(version: int) -> str:
        return f"{cfg.name}-policy-v{version}"

    def sync_adapter(version: int) -> None:
        path = run_dir / "adapters" / f"v{version}"
        model.save_pretrained(path)
        adapters.load_adapter(adapter_name(version), str(path.resolve()))

    sync_adapter(state["version"])

    # ------------------------------------------------------------------------------------------
    # Pools and evals
    eval_tasks = load_tasks(cfg.eval_tasks, split="heldout", family=cfg.eval_families)[: cfg.eval_limit]
    rollouts_file = run_dir / "rollouts.jsonl"
    result = RunResult(run_id, "finished")

    def record(episodes: Sequence[Episode], iteration: int, split: str) -> None:
        records = [e.record(iteration, split) for e in episodes]
        with rollouts_file.open("a", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        recorder.log_episodes(run_id, records)

    def evaluate(iteration: int) -> None:
        start = time.perf_counter()
        groups = play(eval_tasks, group_size=cfg.eval_k, max_turns=cfg.eval_max_turns, sampler=sampler,
                      grader=grader, renderer=renderer, model=adapter_name(state["version"]),
                      version=state["version"], seed_tag=(cfg.seed, "eval"), temperature=cfg.temperature,
                      max_tokens=cfg.max_tokens)
        evals = [
            TaskEval(g[0].task.id, g[0].task.family, len(g),
                     [sum(col) for col in zip(*(e.passed_by_turn(cfg.eval_max_turns) for e in g))])
            for g in groups
        ]
        summary = rollup(evals, ks=sorted({1, cfg.eval_k}))
        recorder.log_evals(run_id, iteration, evals)
        record([e for g in groups for e in g], iteration, "heldout")
        result.evals[iteration] = summary
        echo(f"eval @ {iteration:4d} | pass {summary['pass_rate']:.3f} | turn-1 {summary['turn1_rate']:.3f} | "
             f"pass@{cfg.eval_k} {summary['pass_at_k'][str(cfg.eval_k)]:.3f} | "
             f"{time.perf_counter() - start:.1f}s")

    pool = TaskPool(cfg.phases[state["phase"]].load(), cfg.seed, state["phase"])

    # ------------------------------------------------------------------------------------------
    # Training loop
    while state["iteration"] < cfg.total_iterations:
        iteration = state["iteration"]
        if stop_after is not None and iteration >= stop_after or should_stop():
            result.status = "stopped"
            break
        phase = cfg.phase_at(iteration)
        if phase != state["phase"]:  # a new phase starts with a fresh pool and cursor
            state["phase"], state["cursor"] = phase, 0
            pool = TaskPool(cfg.phases[phase].load(), cfg.seed, phase)
        if iteration % cfg.eval_every == 0:
            evaluate(iteration)
        t0 = time.perf_counter()

        # Play P groups of G episodes with the current policy.
        tasks = pool.draw(state["cursor"], cfg.problems_per_iter)
        state["cursor"] += cfg.problems_per_iter
        timings = Timings()
        groups_P = play(tasks, group_size=cfg.group_size, max_turns=cfg.max_turns, sampler=sampler, grader=grader,
                        renderer=renderer, model=adapter_name(state["version"]), version=state["version"],
                        seed_tag=(cfg.seed, "train", iteration), temperature=cfg.temperature,
                        max_tokens=cfg.max_tokens, timings=timings)
        episodes = [e for g in groups_P for e in g]

        # Group-centred advantages on every sampled token; zero-advantage episodes need no forward.
        data: list[Datum] = []
        for group in groups_P:
            for episode, advantage in zip(group, group_advantages([e.reward for e in group], cfg.std_normalize)):
                data.append(Datum(*episode.training_sequence(), advantage))
        trained = [d for d in data if d.advantage != 0.0]
        normalizer = max(1, sum(d.sampled_tokens for d in data))

        # One optimiser step, gradients accumulated over micro-batches.
        t_train = time.perf_counter()
        stats, loss_sum = LossStats(), 0.0
        model.train()
        for start in range(0, len(trained), cfg.micro_batch):
            loss, batch_stats = policy_gradient_loss(model, trained[start:start + cfg.micro_batch],
                                                     normalizer=normalizer, is_truncation=cfg.is_truncation,
                                                     pad_id=pad_id)
            loss.backward()
            loss_sum += loss.item()
            stats.add(batch_stats)
        sampled_version = state["version"]
        if trained:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            state["version"] += 1
        training_s = time.perf_counter() - t_train

        # Adapter sync: the next episodes are sampled by the new policy.
        t_sync = time.perf_counter()
        if trained:
            sync_adapter(state["version"])
            adapters.unload_adapter(adapter_name(sampled_version))
        sync_s = time.perf_counter() - t_sync

        # Metrics, in the open.
        sampled = [lp for d in data for lp, m in zip(d.sampler_logprobs, d.mask) if m]
        metrics = {
            "iteration": iteration,
            "phase": phase,
            "phase_tasks": str(cfg.phases[phase].tasks),
            "policy_version": sampled_version,
            "train_reward": sum(e.reward for e in episodes) / len(episodes),
            "turn1_pass_rate": sum(e.turns[0].passed for e in episodes) / len(episodes),
            "groups_with_signal": sum(any(a != 0.0 for a in group_advantages([e.reward for e in g])) for g in groups_P),
            "groups": len(groups_P),
            "dead": not trained,
            "mean_turns": sum(len(e.turns) for e in episodes) / len(episodes),
            "sampled_tokens": len(sampled),
            "trained_tokens": stats.tokens,
            "entropy": -sum(sampled) / max(1, len(sampled)),  # sampled NLL: a Monte Carlo estimate
            "loss": loss_sum,
            "is_ratio_mean": stats.ratio_mean,
            "is_ratio_max": stats.ratio_max,
            "is_clipped_fraction": stats.clipped_fraction,
            "time_sampling_s": timings.sampling_s,
            "time_grading_s": timings.grading_s,
            "time_training_s": training_s,
            "time_sync_s": sync_s,
            "time_total_s": time.perf_counter() - t0,
        }
        recorder.log_iteration(run_id, iteration, metrics)
        record(episodes, iteration, "train")
        result.iterations.append(metrics)
        echo(f"iter {iteration:4d} | phase {phase} | reward {metrics['train_reward']:.3f} | "
             f"signal {metrics['groups_with_signal']}/{len(groups_P)} | turns {metrics['mean_turns']:.2f} | "
             f"tokens {len(sampled)} | entropy {metrics['entropy']:.3f} | ratio {stats.ratio_mean:.3f} | "
             f"sample {timings.sampling_s:.1f}s grade {timings.grading_s:.1f}s train {training_s:.1f}s")

        state["iteration"] = iteration + 1
        if state["iteration"] % cfg.save_every == 0 or state["iteration"] == cfg.total_iterations:
            checkpoints.save_state(checkpoints.checkpoint_dir(run_dir, state["iteration"]), model, optimizer, state)

    # ------------------------------------------------------------------------------------------
    # The end: a final eval (if the schedule did not just do one) and a checkpoint to resume from.
    if result.status == "finished":
        if cfg.total_iterations not in result.evals:
            evaluate(cfg.total_iterations)
    else:
        checkpoints.save_state(checkpoints.checkpoint_dir(run_dir, state["iteration"]), model, optimizer, state)
    recorder.finish_run(run_id, result.status)
    return result
