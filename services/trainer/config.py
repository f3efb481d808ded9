"""Every knob of a training run, in one pydantic model, read from a TOML file.

The whole config is logged with the run (to the API and to `<run_dir>/config.json`), so a run can
always be told apart from another by its config alone.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.schemas import Task
from shared.settings import get_settings
from shared.tasks import load_tasks


class Phase(BaseModel):
    """One stage of the curriculum: train on the train split of `tasks` for `iterations`."""

    model_config = ConfigDict(extra="forbid")

    tasks: str = Field(description="a tasks.jsonl file or a rung name (data/<rung>/rocq/tasks.jsonl); its train split is the pool")
    iterations: int = Field(ge=1, description="iterations spent in this phase")
    families: list[str] | None = Field(None, description="keep only these families (None: all)")

    def load(self, split: str = "train") -> list[Task]:
        return load_tasks(self.tasks, split=split, family=self.families)


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # --- run and services
    name: str = Field("run", description="run name; unique in the API")
    run_dir: Path = Field(Path("var/runs/run"), description="adapters, checkpoints, rollouts.jsonl")
    model: Path = Field(description="base model directory (Hugging Face format), also served by the sampler")
    api_url: str = Field(default_factory=lambda: get_settings().api_url, description="the API (grading, run records); default VERIRL_API_URL")
    # A secret: never written into the logged config, the run's config.json or a repr.
    api_token: str = Field(default_factory=lambda: get_settings().api_token, exclude=True, repr=False,
                           description="bearer token for API writes; default VERIRL_API_TOKEN")
    sampler_url: str = Field(default_factory=lambda: get_settings().sampler_url, description="an OpenAI-compatible sampler with LoRA loading; default VERIRL_SAMPLER_URL")
    seed: int = Field(0, description="seeds task order, sampling and initialisation")
    torch_threads: int | None = Field(None, description="torch CPU threads (None: torch's default)")

    # --- LoRA and optimiser
    lora_rank: int = Field(32, ge=1, description="LoRA rank")
    lora_alpha: float = Field(32.0, gt=0, description="LoRA alpha (scale = alpha / rank)")
    lora_targets: list[str] = Field(
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="module names that get LoRA adapters",
    )
    lr: float = Field(4e-5, gt=0, description="AdamW learning rate")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    micro_batch: int = Field(16, ge=1, description="sequences per forward/backward; gradients accumulate over the iteration")

    # --- GRPO
    group_size: int = Field(8, ge=1, description="G: episodes per problem")
    problems_per_iter: int = Field(12, ge=1, description="P: problems per iteration")
    max_turns: int = Field(2, ge=1, description="answers per training episode (retries = max_turns - 1)")
    temperature: float = Field(1.0, gt=0, description="sampling temperature (training and evals)")
    max_tokens: int = Field(8192, ge=1, description="max sampled tokens per turn")
    std_normalize: bool = Field(False, description="divide group-centred advantages by the group std")
    is_truncation: float = Field(2.0, gt=0, description="importance ratios above this are clipped to it")
    phases: list[Phase] = Field(min_length=1, description="the curriculum, in order")

    # --- held-out evals
    eval_tasks: str | None = Field(None, description="tasks file or rung whose heldout split is evaluated (default: last phase's)")
    eval_families: list[str] | None = Field(None, description="keep only these held-out families (None: all)")
    eval_limit: int | None = Field(None, ge=1, description="evaluate at most this many held-out tasks")
    eval_every: int = Field(10, ge=1, description="evaluate at iteration 0 and every N iterations, and at the end")
    eval_k: int = Field(4, ge=1, description="episodes per held-out task")
    eval_max_turns: int = Field(3, ge=1, description="answers per held-out episode")

    # --- checkpoints
    save_every: int = Field(1, ge=1, description="write a resumable checkpoint every N iterations")

    @model_validator(mode="after")
    def _fill_eval_tasks(self) -> TrainConfig:
        if self.eval_tasks is None:
            self.eval_tasks = self.phases[-1].tasks
        return self

    @property
    def total_iterations(self) -> int:
        return sum(p.iterations for p in self.phases)

    def phase_at(self, iteration: int) -> int:
        """Index of the phase that iteration `iteration` (0-based) belongs to."""
        end = 0
        for index, phase in enumerate(self.phases):
            end += phase.iterations
            if iteration < end:
                return index
        raise ValueError(f"iteration {iteration} is past the last phase (total {self.total_iterations})")


def load_config(path: Path, **overrides) -> TrainConfig:
    """Read a TOML config (relative paths in it are relative to the working directory), with
    `overrides` (None values ignored) on top. Raises ValueError with a one-line message on a
    missing file or a bad field."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return TrainConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{path}: {where}: {first['msg']}") from None
