"""SWE and terminal tasks graded end to end through the Celery queues: the API and a
`verirl worker --queues swe,terminal` as real processes, on real Redis (a namespace of its own) and
a real Postgres database, grading shipped tasks in the sandbox with the worker's venv slot pool."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

import services.grader.venv_pool as venv_pool
from services.grader.backends import swe, terminal
from services.grader.pipeline import grade
from shared.clients import APIClient, grade_item
from shared.schemas import Reason
from tests.api.conftest import TOKEN, Stack, database_url  # noqa: F401  (database_url is a fixture)

TASKS = Path(__file__).resolve().parents[2] / "tasks"
SWE_TASK = TASKS / "swe" / "median-even"
TERMINAL_TASK = TASKS / "terminal" / "count-errors"
SLOTS = 2


def fenced(body: str, tag: str) -> str:
    return f"```{tag}\n{body.rstrip()}\n```"


@pytest.fixture(scope="module")
def var_dir():
    """The worker's var dir (its venv pool lives in it), searchable by the sandbox's throw-away uid."""
    path = Path(tempfile.mkdtemp(prefix="verirl-test-queue-var-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(database_url, var_dir, tmp_path_factory):  # noqa: F811
    stack = Stack(database_url, tmp_path_factory.mktemp("queue-swe-terminal"), var_dir=str(var_dir),
                  venv_pool_dir=str(var_dir / "venv-pool"), venv_slots=str(SLOTS))
    try:
        stack.start_worker("w-swe-terminal", queues="swe,terminal")
        stack.start_api()
        stack.wait_ready(timeout_s=180)
        # Taken before any job is sent: only the worker's start-up warm-up can have built these.
        stack.verified_at_ready = [verified(var_dir / "venv-pool" / f"slot-{i}") for i in range(SLOTS)]
        yield stack
    finally:
        stack.close()


@pytest.fixture(scope="module")
def worker_pool(stack, var_dir):
    """An in-process pool over the worker's slot directory, installed as this process's pool so
    that `grade()` here leases the same verified slots (slot locks are shared between processes)."""
    pool = venv_pool.VenvPool(var_dir / "venv-pool", SLOTS)
    previous, venv_pool._pool = venv_pool._pool, pool
    yield pool
    venv_pool._pool = previous


def verified(slot: Path) -> bool:
    """Whether `slot` holds a built venv whose manifest (written only after verification) matches."""
    marker = slot / venv_pool.MANIFEST
    return marker.is_file() and marker.read_text() == venv_pool._manifest(slot)


def comparable(verdict) -> dict:
    """A verdict without what differs from one run of the same check to the next: its timing.
    The feedback must match exactly (pytest's own duration is not part of it)."""
    return verdict.model_dump(mode="json", exclude={"elapsed_s", "cached"})


@pytest.mark.slow
def test_the_worker_verifies_its_venv_slots_before_taking_jobs(stack):
    assert stack.verified_at_ready == [True] * SLOTS


@pytest.mark.slow
def test_swe_and_terminal_answers_are_graded_through_the_queues_as_grade_does_in_process(stack, worker_pool):
    swe_task = swe.load_task(SWE_TASK)
    terminal_task = terminal.load_task(TERMINAL_TASK)
    cases = [
        (swe_task, fenced(swe_task.gold, "diff"), Reason.ok),
        (swe_task, fenced((SWE_TASK / "wrong.diff").read_text(), "diff"), Reason.tests_failed),
        (terminal_task, fenced((TERMINAL_TASK / "solution.sh").read_text(), "bash"), Reason.ok),
        (terminal_task, fenced((TERMINAL_TASK / "wrong.sh").read_text(), "bash"), Reason.tests_failed),
    ]
    with APIClient(stack.url, TOKEN) as api:
        verdicts = api.grade_batch([grade_item(task, answer) for task, answer, _ in cases], wait_s=20, deadline_s=120)

    assert [(v.backend, v.passed, v.reason) for v in verdicts] == [
        (task.kind, reason == Reason.ok, reason) for task, _, reason in cases]
    assert "FAIL_TO_PASS" in verdicts[1].feedback and "failing:" in verdicts[3].feedback
    for (task, answer, _), queued in zip(cases, verdicts):
        direct = grade(task, answer, use_cache=False)
        assert comparable(queued) == comparable(direct), task.id
    worker_log = stack.services[0].output()
    assert worker_log.count("succeeded") >= len(cases)  # the worker, not the API, did the grading
