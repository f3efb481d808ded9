"""Resumable training state: `save_state` writes everything a run needs to continue exactly where
it stopped — the LoRA adapter, the optimiser's state, the RNG states of python, numpy and torch, and
the loop's own counters (iteration, phase, data cursor, policy version, API run id).

Layout: `<run_dir>/checkpoints/it<NNNNNN>/{adapter/, optimizer.pt, rng.pt, state.json}`. A
checkpoint is written to a temporary directory and renamed into place, so a crash mid-write never
leaves a half checkpoint that `latest` would pick.
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import torch

STATE_FILE = "state.json"


def checkpoint_dir(run_dir: Path, iteration: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"it{iteration:06d}"


def save_state(path: Path, model, optimizer, state: dict) -> Path:
    """Write a checkpoint to `path` (replacing one that is there); returns `path`."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp / "adapter")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
               tmp / "rng.pt")
    (tmp / STATE_FILE).write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    return path


def latest(run_or_checkpoint: Path) -> Path:
    """The checkpoint `--resume` means: the directory itself if it is a checkpoint, else the newest
    under its `checkpoints/`. Raises ValueError if there is none."""
    path = Path(run_or_checkpoint)
    if (path / STATE_FILE).is_file():
        return path
    found = sorted(p for p in (path / "checkpoints").glob("it*") if (p / STATE_FILE).is_file())
    if not found:
        raise ValueError(f"no checkpoint in {path}")
    return found[-1]


def read_state(path: Path) -> dict:
    return json.loads((Path(path) / STATE_FILE).read_text(encoding="utf-8"))


def load_state(path: Path, optimizer) -> dict:
    """Restore the optimiser and RNG states from checkpoint `path`; returns the loop's counters.
    The adapter is loaded by the caller (`PeftModel.from_pretrained(base, path / "adapter")`)
    before building the optimiser."""
    path = Path(path)
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=False))
    rng = torch.load(path / "rng.pt", weights_only=False)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    return read_state(path)
