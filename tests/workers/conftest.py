"""Fixtures for the terminal and SWE worker tests. Temp dirs here are made searchable by others:
the sandbox's throw-away uid must reach them (pytest's own tmp_path is private to its owner)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

import services.grader.venv_pool as venv_pool
from services.grader.venv_pool import VenvPool

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def _searchable_tempdir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="session")
def pool():
    """One warmed pool of two slots for the session, installed as the process's pool so that
    `grade()` and the backends use it."""
    root = _searchable_tempdir("verirl-test-pool-")
    pool = VenvPool(root, 2)
    pool.warm_up()
    previous, venv_pool._pool = venv_pool._pool, pool
    yield pool
    venv_pool._pool = previous
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def searchable_dir():
    root = _searchable_tempdir("verirl-test-")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def terminal_task_copy(searchable_dir):
    """copy(name, **task_yaml_overrides) -> a copy of a shipped terminal task's directory."""

    def copy(name: str, **overrides) -> Path:
        dest = searchable_dir / name
        shutil.copytree(TASKS / "terminal" / name, dest)
        meta = yaml.safe_load((dest / "task.yaml").read_text())
        meta.update(overrides)
        (dest / "task.yaml").write_text(yaml.safe_dump(meta))
        return dest

    return copy
