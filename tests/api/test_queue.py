"""Grading through the Celery queue: the API (uvicorn) and two workers as real processes, on real
Redis (a namespace of its own) and a real Postgres database, grading with real coqc."""
from __future__ import annotations

import os
import signal
import time

import pytest
from sqlalchemy import text

from services.api.db import transaction
from services.api.jobs import job_key
from services.api.models import GradeJob
from services.grader.worker import process_job
from shared.clients import APIClient, grade_item
from tests.api.conftest import TOKEN, Stack, count, fenced, rocq_task

# Short limits so that a lost worker's job comes back within seconds (soft < hard < visibility).
LIMITS = {"worker_soft_time_limit_s": "10", "worker_hard_time_limit_s": "12", "broker_visibility_timeout_s": "15"}
# Slow enough (a second or more) to be killed mid-check, well inside the soft time limit.
SLOW_PROOF = "do 8 (assert (Nat.mul 100 100 = 10000) by reflexivity; clear).\nreflexivity."


@pytest.fixture(scope="module")
def stack(database_url, tmp_path_factory):
    stack = Stack(database_url, tmp_path_factory.mktemp("queue"), **LIMITS)
    try:
        stack.start_worker("w1")
        stack.start_worker("w2")
        stack.start_api()
        stack.wait_ready()
        yield stack
    finally:
        stack.close()


@pytest.fixture
def api(stack):
    with APIClient(stack.url, TOKEN) as client:
        yield client


def test_health_reports_the_database_and_the_broker(api):
    health = api.health()
    assert health["database"]["ok"] and health["queue"] == {**health["queue"], "ok": True, "kind": "celery"}


@pytest.mark.slow
def test_a_batch_of_200_grades_completes_with_every_verdict_stored_once(api, engine):
    task = rocq_task("test/batch200/0001")
    items = ([grade_item(task, f"I believe it holds ({i}).") for i in range(150)]
             + [grade_item(task, fenced(f"(* {i} *) Admitted.")) for i in range(30)]
             + [grade_item(task, fenced(f"(* {i} *) reflexivity.")) for i in range(10)]
             + [grade_item(task, fenced(f"(* {i} *) exact I.")) for i in range(10)])
    before = count(engine, "grade_jobs")
    verdicts = api.grade_batch(items, wait_s=20, deadline_s=150)
    expected = ["bad_format"] * 150 + ["forbidden"] * 30 + ["ok"] * 10 + ["compile_error"] * 10
    assert [v.reason for v in verdicts] == expected
    ids = [job_key(task, item["answer"], "whole")["id"] for item in items]
    with transaction(engine) as session:
        rows = session.execute(text("SELECT status, attempts, worker FROM grade_jobs WHERE id = ANY(:ids)"),
                               {"ids": ids}).all()
    assert count(engine, "grade_jobs") == before + 200
    assert len(rows) == 200 and {(status, attempts) for status, attempts, _ in rows} == {("done", 1)}
    assert {worker.split("@")[0] for _, _, worker in rows} == {"w1", "w2"}  # both workers took part


def test_the_same_request_twice_stores_one_verdict(api, engine):
    task = rocq_task("test/twice/0001")
    first = api.grade(task, fenced("reflexivity."), timeout_s=60)
    again = api.grade(task, fenced("reflexivity."), timeout_s=60)
    assert first.id == again.id and first.verdict == again.verdict and first.verdict.passed
    assert count(engine, "grade_jobs", f"id = '{first.id}'") == 1
    assert count(engine, "grade_jobs", f"id = '{first.id}' AND attempts = 1") == 1


@pytest.mark.slow
def test_a_job_whose_worker_is_killed_completes_on_the_other_worker(stack, api, engine):
    job = api.grade(rocq_task("test/kill/0001"), fenced(SLOW_PROOF), timeout_s=0)
    deadline = time.monotonic() + 60
    while (worker := _worker_of(engine, job.id)) is None:
        assert time.monotonic() < deadline, "no worker picked the job up"
        time.sleep(0.05)
    victim = next(s for s in stack.services if s.name == worker.split("@")[0])
    assert _status(engine, job.id) == "running"
    victim.kill9()

    done = api.get_grade(job.id, wait_s=90)
    assert done.status == "done" and done.verdict.passed
    with transaction(engine) as session:
        row = session.get(GradeJob, job.id)
        assert row.attempts == 2
        assert row.worker.split("@")[0] != victim.name


@pytest.mark.slow
def test_a_job_whose_grading_process_is_killed_is_requeued_at_once(api, engine):
    job = api.grade(rocq_task("test/kill_child/0001"), fenced(SLOW_PROOF.replace("do 8", "do 7")), timeout_s=0)
    deadline = time.monotonic() + 60
    while (worker := _worker_of(engine, job.id)) is None:
        assert time.monotonic() < deadline, "no worker picked the job up"
        time.sleep(0.05)
    child_pid = int(worker.rsplit(":", 1)[1])  # the prefork child running the task
    os.kill(child_pid, signal.SIGKILL)

    done = api.get_grade(job.id, wait_s=60)  # well before the visibility timeout
    assert done.status == "done" and done.verdict.passed
    with engine.connect() as connection:
        attempts, last = connection.execute(text("SELECT attempts, worker FROM grade_jobs WHERE id = :id"),
                                            {"id": job.id}).one()
    assert attempts == 2 and int(last.rsplit(":", 1)[1]) != child_pid


def test_a_job_redelivered_past_the_cap_is_answered_sandbox_error(api, engine, database_url):
    job = api.grade(rocq_task("test/cap/0001"), "prose", timeout_s=60)
    with transaction(engine) as session:  # pretend it was delivered and lost three times
        session.execute(text("UPDATE grade_jobs SET status = 'running', attempts = 3, verdict = NULL WHERE id = :id"),
                        {"id": job.id})
    assert process_job(database_url, job.id, max_attempts=3, worker="test") is False
    final = api.get_grade(job.id)
    assert final.status == "done" and final.verdict.reason == "sandbox_error"
    assert "interrupted 3 times" in final.verdict.feedback
    assert count(engine, "grade_jobs", f"id = '{job.id}' AND attempts = 4") == 1


def test_a_hard_time_limit_answers_only_the_attempt_it_cut_short(api, engine, database_url):
    from celery.exceptions import TimeLimitExceeded

    from services.grader.worker import TASK_NAME, make_celery
    from shared.settings import Settings

    job = api.grade(rocq_task("test/hard_limit/0001"), "prose", timeout_s=60)
    grade_task = make_celery(Settings(database_url=database_url)).tasks[TASK_NAME]

    def rerun_started(seconds_ago: int) -> None:
        with transaction(engine) as session:
            session.execute(text("UPDATE grade_jobs SET status = 'running', verdict = NULL, "
                                 "started_at = now() - make_interval(secs => :ago) WHERE id = :id"),
                            {"id": job.id, "ago": seconds_ago})

    rerun_started(1)  # a redelivery started a moment ago: the timer was for an earlier, lost run
    grade_task.on_failure(TimeLimitExceeded(150), "celery-id", [job.id], {}, None)
    assert _status(engine, job.id) == "running"
    rerun_started(3600)  # the run that hit the limit is the latest attempt
    grade_task.on_failure(TimeLimitExceeded(150), "celery-id", [job.id], {}, None)
    final = api.get_grade(job.id)
    assert final.status == "done" and final.verdict.reason == "sandbox_error"
    assert "TimeLimitExceeded" in final.verdict.feedback


def test_a_redelivered_job_that_is_already_graded_is_skipped(api, engine, database_url):
    job = api.grade(rocq_task("test/redeliver/0001"), "prose", timeout_s=60)
    assert job.status == "done"
    assert process_job(database_url, job.id, max_attempts=3, worker="test") is False
    assert count(engine, "grade_jobs", f"id = '{job.id}' AND attempts = 1") == 1


def _worker_of(engine, job_id: str) -> str | None:
    with engine.connect() as connection:
        return connection.execute(text("SELECT worker FROM grade_jobs WHERE id = :id"), {"id": job_id}).scalar()


def _status(engine, job_id: str) -> str:
    with engine.connect() as connection:
        return connection.execute(text("SELECT status FROM grade_jobs WHERE id = :id"), {"id": job_id}).scalar_one()


def test_with_the_broker_down_a_grade_is_refused_kept_and_sent_when_repeated(api, engine, database_url, tmp_path):
    from fastapi.testclient import TestClient

    from services.api.app import create_app
    from shared.settings import Settings
    from tests.api.conftest import AUTH, free_port

    down = Settings(database_url=database_url, broker_url=f"redis://127.0.0.1:{free_port()}/0", api_token=TOKEN,
                    data_dir=tmp_path / "none", db_upgrade_on_start=False)
    task = rocq_task("test/broker_down/0001")
    body = {"task": task.model_dump(mode="json"), "answer": fenced("reflexivity."), "timeout_s": 0}
    with TestClient(create_app(down)) as client:
        health = client.get("/health")
        refused = client.post("/grade", json=body, headers=AUTH)
    assert health.status_code == 503 and not health.json()["queue"]["ok"]
    assert refused.status_code == 503 and "grading queue unavailable" in refused.json()["detail"]
    job_id = job_key(task, body["answer"], "whole")["id"]
    assert count(engine, "grade_jobs", f"id = '{job_id}' AND status = 'queued' AND enqueued_at IS NULL") == 1

    with transaction(engine) as session:  # as if the failed request was a while ago
        session.execute(text("UPDATE grade_jobs SET created_at = created_at - interval '1 minute' WHERE id = :id"),
                        {"id": job_id})
    repeated = api.grade(task, body["answer"], timeout_s=60)
    assert repeated.id == job_id and repeated.status == "done" and repeated.verdict.passed
