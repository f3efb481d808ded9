"""`verirl train`, `verirl sft`, `verirl demo`, `verirl serve trainer`."""
from __future__ import annotations

import signal
from pathlib import Path

from services.cli import UsageError, command_group

# Short on purpose: the answer format and templates half learnt, about 1 in 3 first answers right,
# so that reinforcement learning has room to show (docs/trainer.md).
DEMO_SFT_STEPS = 45
DEMO_SFT_FAMILIES = ["concrete", "affine"]


def register(sub) -> None:
    p = sub.add_parser("train", help="multi-turn GRPO with LoRA, as a TOML config describes")
    p.add_argument("config", type=Path, help="TOML file with every knob (see services/trainer/configs/demo.toml)")
    p.add_argument("--resume", type=Path, help="a run directory or checkpoint to continue from")
    p.add_argument("--name", help="override the run name")
    p.add_argument("--run-dir", type=Path, help="override the run directory")
    p.add_argument("--model", type=Path, help="override the base model directory")
    p.set_defaults(handler=train_command)

    p = sub.add_parser("sft", help="supervised warm start: full fine-tuning on gold proofs")
    p.add_argument("--model", type=Path, required=True, help="model directory to start from")
    p.add_argument("--tasks", nargs="+", required=True, help="tasks files or rung names (train split is used)")
    p.add_argument("--families", nargs="+", help="only these families (default: all)")
    p.add_argument("--out", type=Path, required=True, help="directory to write the fine-tuned model to")
    p.add_argument("--steps", type=int, default=200, help="optimiser steps (default 200)")
    p.add_argument("--batch", type=int, default=32, help="examples per step (default 32)")
    p.add_argument("--lr", type=float, default=2e-3, help="AdamW learning rate (default 2e-3)")
    p.add_argument("--seed", type=int, default=0, help="shuffle and init seed (default 0)")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    p.set_defaults(handler=sft_command)

    p = sub.add_parser("demo", help="the whole stack on this machine: api, grader pool, sampler and trainer "
                                     "train a small model on Rocq proofs; prints the dashboard URL and the trajectory")
    p.add_argument("--workdir", type=Path, default=Path("var/demo"), help="where the demo writes (default var/demo)")
    p.add_argument("--config", type=Path, help="training config (default: services/trainer/configs/demo.toml)")
    p.add_argument("--corpus", type=Path, default=Path("data/m0/rocq/tasks.jsonl"),
                   help="tokenizer training corpus (default data/m0/rocq/tasks.jsonl)")
    p.add_argument("--hidden", type=int, default=64, help="model hidden size (default 64)")
    p.add_argument("--layers", type=int, default=2, help="model layers (default 2)")
    p.add_argument("--heads", type=int, default=2, help="attention heads (default 2)")
    p.add_argument("--sft-tasks", nargs="+", help="warm-start tasks files or rungs (default: the config's phases)")
    p.add_argument("--sft-families", nargs="+", default=DEMO_SFT_FAMILIES,
                   help=f"warm-start families (default: {' '.join(DEMO_SFT_FAMILIES)})")
    p.add_argument("--sft-steps", type=int, default=DEMO_SFT_STEPS, help=f"warm-start optimiser steps (default {DEMO_SFT_STEPS})")
    p.add_argument("--sft-batch", type=int, default=16, help="warm-start examples per step (default 16)")
    p.add_argument("--sft-lr", type=float, default=5e-3, help="warm-start learning rate (default 5e-3)")
    p.set_defaults(handler=demo_command)

    p = command_group(sub, "serve", "run a service").add_parser("trainer", help="the trainer service: POST /jobs, GET /jobs/{id}, POST /jobs/{id}/stop")
    p.add_argument("--host", default="127.0.0.1", help="bind address")
    p.add_argument("--port", type=int, default=8002, help="port (default 8002)")
    p.set_defaults(handler=serve_trainer)


def _config(path: Path, **overrides):
    from services.trainer.config import load_config

    try:
        return load_config(path, **overrides)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run_training(cfg, *, resume=None, should_stop=lambda: False, stop_after=None, echo=print):
    """`train` wired to the services `cfg` names."""
    from services.trainer.loop import train
    from services.trainer.remote import ApiGrader, ApiRecorder, OpenAISampler
    from shared.clients import APIClient

    sampler = OpenAISampler(cfg.sampler_url)
    with APIClient(cfg.api_url, cfg.api_token) as api:
        return train(cfg, sampler=sampler, adapters=sampler, grader=ApiGrader(api), recorder=ApiRecorder(api),
                     resume=resume, should_stop=should_stop, stop_after=stop_after, echo=echo)


def train_command(args) -> int:
    from services.trainer import checkpoints

    cfg = _config(args.config, name=args.name, run_dir=args.run_dir, model=args.model)
    if not (cfg.model / "config.json").is_file():
        raise UsageError(f"model: no model at {cfg.model} (expected config.json; see `verirl model init`)")
    try:
        for phase in cfg.phases:
            if not phase.load():
                raise UsageError(f"phase {phase.tasks}: no train tasks (families {phase.families})")
        if args.resume is not None:
            checkpoints.latest(args.resume)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    # The first Ctrl-C finishes the iteration and writes a checkpoint; the second one aborts.
    stop = []

    def on_interrupt(signum, frame):
        if stop:
            raise KeyboardInterrupt
        stop.append(signum)
        print("stopping after this iteration (Ctrl-C again to abort)", flush=True)

    signal.signal(signal.SIGINT, on_interrupt)
    signal.signal(signal.SIGTERM, on_interrupt)
    result = run_training(cfg, resume=args.resume, should_stop=lambda: bool(stop))
    print(f"run {result.run_id} {result.status}; checkpoints in {cfg.run_dir}/checkpoints")
    return 0


def sft_command(args) -> int:
    from services.trainer.sft import supervised_finetune
    from shared.tasks import load_tasks

    if not (args.model / "config.json").is_file():
        raise UsageError(f"--model: no model at {args.model} (expected config.json)")
    if args.steps < 1 or args.batch < 1:
        raise UsageError("--steps and --batch must be at least 1")
    try:
        tasks = load_tasks(args.tasks, split="train", family=args.families)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if not tasks:
        raise UsageError("no train tasks match --tasks/--families")
    losses = supervised_finetune(args.model, tasks, args.out, steps=args.steps, batch=args.batch, lr=args.lr,
                                 seed=args.seed, threads=args.threads)
    print(f"sft: {len(tasks)} tasks, {args.steps} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}; wrote {args.out}")
    return 0


def demo_command(args) -> int:
    from services.trainer.demo import run_demo

    return run_demo(args)


def serve_trainer(args) -> int:
    import uvicorn

    from services.trainer.app import create_app

    if not 0 < args.port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {args.port}")
    uvicorn.run(create_app(), host=args.host, port=args.port, log_level="info")
    return 0
