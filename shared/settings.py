"""All configuration, from the environment with prefix VERIRL_ (pydantic-settings)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict


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

    # --- services -------------------------------------------------------------------------
    database_url: str = "sqlite:///./var/verirl.db"
    broker_url: str | None = None  # None: grade in a local process pool
    api_url: str = "http://127.0.0.1:8000"
    api_token: str = "dev-token"
    sampler_url: str = "http://127.0.0.1:8001"
    data_dir: Path = Path("data")
    var_dir: Path = Path("var")


@lru_cache
def get_settings() -> Settings:
    return Settings()
