"""All configuration, from the environment with prefix VERIRL_ (pydantic-settings)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_API_TOKEN = "dev-token"  # for local use only: `mode=production` refuses it


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VERIRL_", env_file=".env", extra="ignore")

    # --- grader ---------------------------------------------------------------------------
    sandbox: Literal["bwrap", "docker", "none"] = "bwrap"
    grade_wall_s: float = 20.0
    grade_cpu_s: int = 20
    grade_memory_mb: int = 2048
    grade_max_procs: int = 64
    grade_file_size_mb: int = 64
    grade_output_bytes: int = 1 << 20
    feedback_chars: int = 1500
    answer_max_chars: int = 20_000
    warm_sessions: bool = True
    warm_session_max_uses: int = 50
    cache_dir: Path | None = None  # None: in-memory cache only
    coqc: str = "coqc"
    coqtop: str = "coqtop"
    lean: str = "lean"
    lean_repl: str = "repl"
    lean_project: Path | None = None
    venv_slots: int = 2  # per-slot virtualenvs for pytest runs (swe and terminal tests)
    venv_pool_dir: Path | None = None  # None: <var_dir>/venv-pool

    # --- services -------------------------------------------------------------------------
    database_url: str = "sqlite:///./var/verirl.db"
    broker_url: str | None = None  # None: grade in a local process pool
    api_url: str = "http://127.0.0.1:8000"
    api_token: str = DEFAULT_API_TOKEN
    mode: Literal["local", "production"] = "local"  # production refuses the default API token
    sampler_url: str = "http://127.0.0.1:8001"
    data_dir: Path = Path("data")
    var_dir: Path = Path("var")

    # --- api and grading queue ------------------------------------------------------------
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    db_upgrade_on_start: bool = True  # compose runs `verirl db upgrade` once and sets this false
    grade_wait_s: float = 10.0  # how long POST /grade waits for a verdict before answering 202
    grade_wait_max_s: float = 120.0
    grade_batch_max: int = 1000  # items per POST /grade/batch
    episodes_batch_max: int = 5000  # episodes per POST /runs/{id}/episodes
    grade_pool_workers: int = 2  # local process pool size when no broker is configured
    grade_max_attempts: int = 3  # deliveries of one grade job before it is answered sandbox_error
    broker_namespace: str = ""  # prefix on every broker key: isolates stacks sharing one Redis
    broker_visibility_timeout_s: int = 600  # an unacked job is redelivered after this long
    worker_soft_time_limit_s: int = 120  # both limits stay below the visibility timeout
    worker_hard_time_limit_s: int = 150
    worker_max_tasks_per_child: int = 500

    @model_validator(mode="after")
    def _no_default_secrets_in_production(self) -> "Settings":
        # A deployment must never run on a secret that is published in this repository.
        if self.mode == "production" and (self.api_token == DEFAULT_API_TOKEN or len(self.api_token) < 16):
            raise ValueError("VERIRL_MODE=production needs VERIRL_API_TOKEN set to a secret of at least 16 "
                             "characters (e.g. `openssl rand -hex 32`), not the default")
        return self


class SettingsError(ValueError):
    """The VERIRL_* environment is invalid; the message names each bad variable and why."""


@lru_cache
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise SettingsError("; ".join(_describe(error) for error in exc.errors())) from None


def _describe(error: dict) -> str:
    message = error["msg"].removeprefix("Value error, ")
    return f"VERIRL_{'_'.join(map(str, error['loc'])).upper()}: {message}" if error["loc"] else message
