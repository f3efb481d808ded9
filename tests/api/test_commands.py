"""`verirl db …`, `verirl worker`, `verirl serve api` (in process): bad usage is one line and exit
status 2."""
from __future__ import annotations

import pytest
from sqlalchemy import create_engine, inspect

from services.cli import main
from shared.settings import get_settings


@pytest.fixture
def env(monkeypatch):
    """Set VERIRL_* variables for one `main()` call (settings are cached per process)."""
    def set_env(**values: str) -> None:
        for key, value in values.items():
            monkeypatch.setenv(f"VERIRL_{key}", value)
        get_settings.cache_clear()

    monkeypatch.delenv("VERIRL_BROKER_URL", raising=False)
    get_settings.cache_clear()
    yield set_env
    get_settings.cache_clear()


def test_db_upgrade_creates_every_table(tmp_path, env):
    url = f"sqlite:///{tmp_path}/fresh.db"
    env(DATABASE_URL=url)
    assert main(["db", "upgrade"]) == 0
    tables = set(inspect(create_engine(url)).get_table_names())
    assert {"runs", "episodes", "turns", "grade_jobs", "heldout_evals", "iteration_metrics", "tasks"} <= tables


def test_import_of_a_broken_dataset_names_the_file_and_line(tmp_path, env, capsys):
    (tmp_path / "data" / "m1" / "rocq").mkdir(parents=True)
    (tmp_path / "data" / "m1" / "rocq" / "tasks.jsonl").write_text('{"id": "ok/1"}\n{"id": 5}\n')
    env(DATABASE_URL=f"sqlite:///{tmp_path}/t.db")
    assert main(["db", "import-tasks", "--data-dir", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err
    assert "tasks.jsonl:2: not a task" in err and len(err.strip().splitlines()) == 1


def test_worker_without_a_broker_says_so(env, capsys):
    env()
    assert main(["worker", "--queues", "rocq"]) == 2
    assert "VERIRL_BROKER_URL" in capsys.readouterr().err


def test_worker_with_an_unknown_queue_lists_the_known_ones(env, capsys):
    env(BROKER_URL="redis://127.0.0.1:6379/0")
    assert main(["worker", "--queues", "rocq,cobol"]) == 2
    err = capsys.readouterr().err
    assert "unknown queue(s) cobol" in err and "lean" in err


def test_serve_api_refuses_a_bad_port(env, capsys):
    env()
    assert main(["serve", "api", "--port", "70000"]) == 2
    assert "--port must be between 1 and 65535" in capsys.readouterr().err
