"""`verirl demo`: the whole platform on this machine, end to end.

1. builds the small model (a tokenizer trained on the M0 tasks and a small Llama) and warms it
   up with a short supervised fine-tune on gold proofs of two M0 families (`sft.py`) — short on
   purpose, so that first answers are often wrong and reinforcement learning has something to
   improve;
2. starts the API (SQLite under the work directory, grading in its local process pool of real
   `coqc`/`coqtop`) and the sampler (hf engine) as separate processes on free local ports;
3. runs the trainer as a third process (`verirl train services/trainer/configs/demo.toml`): multi-turn GRPO with
   held-out evals, while the dashboard URL is on screen;
4. prints the held-out trajectory from the API and stops every process it started — on
   completion, on an error and on Ctrl-C.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from services.cli import UsageError

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "demo.toml"


def run_demo(args) -> int:
    import shutil

    from services.trainer.config import load_config
    from services.trainer.stack import Stack, die_with_parent

    config_path = args.config or DEFAULT_CONFIG
    try:
        cfg = load_config(config_path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not shutil.which("coqc"):
        raise UsageError("coqc not found: install Rocq first (apt-get install coq), or run `make setup`")
    workdir = args.workdir.resolve()
    run_name = f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = workdir / "runs" / run_name
    started = time.monotonic()

    def say(line: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {line}", flush=True)

    # ------------------------------------------------------------------------------------------
    # The model: from scratch, then a short supervised warm start.
    base_dir, sft_dir = workdir / "model", workdir / "model-sft"
    _build_model(cfg, base_dir, sft_dir, args, say)

    # ------------------------------------------------------------------------------------------
    # Services, then the trainer; everything stops when this block exits.
    with Stack(workdir) as stack:
        say("starting the API (SQLite, local grading pool) and the sampler (hf engine)…")
        api = stack.start_api(grade_workers=2)
        sampler = stack.start_sampler(sft_dir, threads=cfg.torch_threads)
        say(f"dashboard: {api.url}/   (API {api.url}, sampler {sampler.url}; logs in {workdir / 'logs'})")
        env = {**os.environ, "VERIRL_API_URL": api.url, "VERIRL_API_TOKEN": stack.token,
               "VERIRL_SAMPLER_URL": sampler.url, "PYTHONUNBUFFERED": "1",
               "PYTHONWARNINGS": "ignore"}  # library deprecation notices would drown the progress lines
        command = [sys.executable, "-m", "services.cli", "train", str(config_path), "--name", run_name,
                   "--run-dir", str(run_dir), "--model", str(sft_dir)]
        say(f"training: {cfg.total_iterations} iterations of {cfg.problems_per_iter} problems x "
            f"{cfg.group_size} episodes, up to {cfg.max_turns} turns; held-out evals every {cfg.eval_every}")
        trainer = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True, preexec_fn=die_with_parent)
        try:
            for line in trainer.stdout:
                say("trainer | " + line.rstrip())
            status = trainer.wait()
        except KeyboardInterrupt:
            say("interrupted: stopping the trainer and the services…")
            _stop_group(trainer)
            return 130
        finally:
            _stop_group(trainer)
        if status != 0:
            say(f"the trainer exited with status {status}")
            return 1
        print(_trajectory_table(api.url, stack.token, run_name))
    say(f"done; everything stopped. Run directory: {run_dir}")
    return 0


def _build_model(cfg, base_dir: Path, sft_dir: Path, args, say) -> None:
    from services.sampler.model_init import init_model
    from services.trainer.sft import supervised_finetune
    from shared.tasks import load_tasks

    say(f"building the small model in {base_dir} (tokenizer trained on {args.corpus})…")
    init_model(base_dir, [args.corpus], hidden=args.hidden, layers=args.layers, heads=args.heads, context=512,
               seed=cfg.seed)
    sources = args.sft_tasks or [p.tasks for p in cfg.phases]
    tasks = load_tasks(sources, split="train", family=args.sft_families)
    say(f"warm start: {args.sft_steps} supervised steps on {len(tasks)} gold proofs…")
    losses = supervised_finetune(base_dir, tasks, sft_dir, steps=args.sft_steps, batch=args.sft_batch, lr=args.sft_lr,
                                 seed=cfg.seed, threads=cfg.torch_threads)
    say(f"warm start done: loss {losses[0]:.3f} -> {losses[-1]:.3f}")


def _stop_group(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass


def _trajectory_table(api_url: str, token: str, run_name: str) -> str:
    """The held-out trajectory as the API aggregates it, one row per eval."""
    from shared.clients import APIClient

    with APIClient(api_url, token) as api:
        run = next(r for r in api.list_runs(limit=1000)["items"] if r["name"] == run_name)
        k = run["config"].get("eval_k", 4)
        points = api.trajectory(run["id"], ks=(1, k))["iterations"]
    families = sorted({f for p in points for f in p["families"]})
    head = f"{'iter':>5} {'pass':>6} {'turn1':>6} {'pass@' + str(k):>7}  solved by turn    " + " ".join(
        f"{f[:12]:>12}" for f in families)
    rows = [f"held-out trajectory of run {run['id']} ({run_name})", head, "-" * len(head)]
    for p in points:
        by_turn = " ".join(f"{x:.2f}" for x in p["solved_by_n_turns"])
        fam = " ".join(f"{p['families'].get(f, {}).get('pass_rate') or 0:>12.2f}" for f in families)
        rows.append(f"{p['iteration']:>5} {p['pass_rate']:>6.2f} {p.get('turn1_rate') or 0:>6.2f} "
                    f"{p['pass_at_k'].get(str(k)) or 0:>7.2f}  {by_turn:<16} {fam}")
    return "\n".join(rows)
