"""Config files, curriculum phases, the task pool's cursor, checkpoints, and bad CLI input."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from services.cli import main
from services.trainer import checkpoints
from services.trainer.config import load_config
from services.trainer.pools import TaskPool
from shared.schemas import Task

CONFIG = """
name = "t"
model = "m"
[[phases]]
tasks = "a.jsonl"
iterations = 2
[[phases]]
tasks = "b.jsonl"
iterations = 3
"""


def test_config_reads_phases_and_defaults_eval_tasks_to_the_last_phase(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    cfg = load_config(path)
    assert cfg.total_iterations == 5
    assert [cfg.phase_at(i) for i in range(5)] == [0, 0, 1, 1, 1]
    assert cfg.eval_tasks == "b.jsonl"
    with pytest.raises(ValueError):
        cfg.phase_at(5)


def test_config_with_an_unknown_knob_is_one_line_error(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.replace('name = "t"', 'name = "t"\ngroup_sise = 8'))
    with pytest.raises(ValueError, match="group_sise"):
        load_config(path)


def test_pool_order_depends_only_on_cursor_and_covers_the_pool_each_pass():
    tasks = [Task(id=f"t/{i}") for i in range(5)]
    pool = TaskPool(tasks, seed=0, phase=0)
    first = [t.id for t in pool.draw(0, 10)]
    assert first == [t.id for t in pool.draw(0, 4) + pool.draw(4, 6)]  # resumable from the cursor alone
    assert sorted(first[:5]) == sorted(first[5:]) == sorted(t.id for t in tasks)
    assert first != [t.id for t in TaskPool(tasks, seed=0, phase=1).draw(0, 10)]


def test_checkpoint_restores_optimizer_rng_and_counters(tiny_model_dir, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                           LoraConfig(r=4, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model(input_ids=torch.tensor([[1, 2, 3]])).logits.sum().backward()
    optimizer.step()
    state = {"iteration": 3, "phase": 1, "cursor": 24, "version": 2, "run_id": 7}
    path = checkpoints.save_state(checkpoints.checkpoint_dir(tmp_path, 3), model, optimizer, state)
    expected = (random.random(), np.random.rand(), torch.rand(1).item())

    fresh = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    assert checkpoints.load_state(checkpoints.latest(tmp_path), fresh) == state
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected
    saved, loaded = optimizer.state_dict()["state"], fresh.state_dict()["state"]
    assert saved.keys() == loaded.keys()
    for key in saved:
        torch.testing.assert_close(loaded[key]["exp_avg"], saved[key]["exp_avg"])
    assert (path / "adapter" / "adapter_config.json").is_file()
    assert not list(tmp_path.glob("checkpoints/*.tmp"))


@pytest.mark.parametrize("argv, message", [
    (["train", "/nonexistent/config.toml"], "config file not found"),
    (["sft", "--model", "/nonexistent", "--tasks", "m0", "--out", "/tmp/x"], "no model at"),
])
def test_bad_cli_input_exits_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_resume_from_a_directory_without_checkpoints_is_refused(tmp_path, tiny_model_dir, capsys):
    config = tmp_path / "c.toml"
    config.write_text(f'model = "{tiny_model_dir}"\n[[phases]]\ntasks = "m0"\niterations = 1\n')
    assert main(["train", str(config), "--resume", str(tmp_path)]) == 2
    assert "no checkpoint in" in capsys.readouterr().err


def test_the_api_token_is_never_logged_with_the_config(tmp_path):
    from services.trainer.config import TrainConfig

    cfg = TrainConfig(model=tmp_path, api_token="s3cret-token-value", phases=[{"tasks": "m0", "iterations": 1}])
    assert cfg.api_token == "s3cret-token-value"
    assert "s3cret" not in cfg.model_dump_json() and "s3cret" not in repr(cfg)
