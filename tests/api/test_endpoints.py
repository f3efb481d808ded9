"""The API over real HTTP (uvicorn subprocess) on a real Postgres database, in the embedded mode
(no broker: grading in the API's local pool with real coqc)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime

import httpx
import pytest

from shared.clients import APIClient, grade_item
from shared.metrics import pass_at_k
from tests.api.conftest import AUTH, TOKEN, Stack, count, fenced, rocq_task

SLOW_PROOF = "do 15 (assert (Nat.mul 100 100 = 10000) by reflexivity; clear).\nreflexivity."


@pytest.fixture(scope="module")
def stack(database_url, tmp_path_factory):
    stack = Stack(database_url, tmp_path_factory.mktemp("embedded"), broker=False, grade_batch_max="50",
                  episodes_batch_max="100", answer_max_chars="2000")
    stack.start_api()
    stack.wait_ready()
    yield stack
    stack.close()


@pytest.fixture
def http(stack):
    with httpx.Client(base_url=stack.url, timeout=60) as client:
        yield client


@pytest.fixture
def api(stack):
    with APIClient(stack.url, TOKEN) as client:
        yield client


def unique(prefix: str) -> str:
    return f"{prefix}-{time.monotonic_ns()}"


# --- runs and iterations -----------------------------------------------------------------------

def test_creating_a_run_twice_returns_the_same_run(http, engine):
    name = unique("run")
    first = http.post("/runs", json={"name": name, "config": {"lr": 1e-3}}, headers=AUTH)
    again = http.post("/runs", json={"name": name, "config": {"lr": 1e-3}}, headers=AUTH)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert count(engine, "runs", f"name = '{name}'") == 1


def test_a_run_name_with_another_config_is_a_conflict(http):
    name = unique("run")
    http.post("/runs", json={"name": name, "config": {"lr": 1}}, headers=AUTH)
    response = http.post("/runs", json={"name": name, "config": {"lr": 2}}, headers=AUTH)
    assert response.status_code == 409
    assert "different config" in response.json()["detail"]


def test_patch_bumps_the_version_and_updated_after_returns_only_changed_runs(api):
    a, b = api.create_run(unique("a")), api.create_run(unique("b"))
    cursor = api.list_runs(updated_after=None, limit=1000)["cursor"]
    patched = api.update_run(a["id"], status="running", phase="warmup")
    assert (patched["status"], patched["phase"], patched["version"]) == ("running", "warmup", a["version"] + 1)
    changed = api.list_runs(updated_after=datetime.fromisoformat(cursor))["items"]
    assert [run["id"] for run in changed] == [a["id"]]
    assert b["id"] not in [run["id"] for run in changed]


def test_posting_an_iteration_again_stores_it_once(api, engine):
    run = api.create_run(unique("it"))
    first = api.post_iteration(run["id"], 0, {"loss": 0.5})
    again = api.post_iteration(run["id"], 0, {"loss": 0.5})
    api.post_iteration(run["id"], 1, {"loss": 0.25})
    assert (first["inserted"], again["inserted"], again["skipped"]) == (1, 0, 1)
    assert count(engine, "iteration_metrics", f"run_id = {run['id']}") == 2
    assert [it["metrics"]["loss"] for it in api.iterations(run["id"], after_iteration=0)] == [0.25]


# --- held-out evals and trajectory -------------------------------------------------------------

def test_trajectory_reports_pass_rates_unbiased_pass_at_k_and_families(api):
    run = api.create_run(unique("traj"))
    api.post_evals(run["id"], 0, [
        {"task_id": "m1/sq/0001", "n": 4, "passed_by_turn": [1, 2]},
        {"task_id": "m1/rev/0002", "n": 4, "passed_by_turn": [0, 0]},
    ])
    api.post_evals(run["id"], 1, [
        {"task_id": "m1/sq/0001", "n": 4, "passed_by_turn": [3, 4]},
        {"task_id": "m1/rev/0002", "family": "reverse", "n": 4, "passed_by_turn": [1, 3]},
    ])
    body = api.trajectory(run["id"], ks=(1, 2))
    first, second = body["iterations"]
    assert (first["iteration"], first["episodes"], first["tasks"]) == (0, 8, 2)
    assert first["turn1_rate"] == pytest.approx(1 / 8)
    assert first["pass_rate"] == pytest.approx(2 / 8)
    assert first["pass_at_k"]["2"] == pytest.approx((pass_at_k(4, 2, 2) + 0) / 2)
    assert set(first["families"]) == {"sq", "rev"}  # from the ids: m1/<family>/<n>
    assert set(second["families"]) == {"sq", "reverse"}
    assert second["solved_by_n_turns"] == pytest.approx([4 / 8, 7 / 8])
    newer = api.trajectory(run["id"], after_iteration=0)
    assert [p["iteration"] for p in newer["iterations"]] == [1]
    assert newer["last_iteration"] == 1


def test_evals_with_decreasing_passes_are_refused(http, engine):
    run = http.post("/runs", json={"name": unique("bad-eval")}, headers=AUTH).json()
    response = http.post(f"/runs/{run['id']}/evals", headers=AUTH,
                         json={"iteration": 0, "items": [{"task_id": "x/y/1", "n": 4, "passed_by_turn": [3, 1]}]})
    assert response.status_code == 422
    assert "non-decreasing" in response.json()["detail"]
    assert count(engine, "heldout_evals", f"run_id = {run['id']}") == 0


# --- episodes ----------------------------------------------------------------------------------

def episode(iteration: int, task: str, index: int, passed_at: int | None, family: str = "sq") -> dict:
    turns = [{"completion": f"try {t}", "sampled_tokens": 10 + t, "passed": t == passed_at,
              "reason": "ok" if t == passed_at else "compile_error", "feedback": "" if t == passed_at else "Error"}
             for t in range(2 if passed_at != 0 else 1)]
    return {"iteration": iteration, "task_id": task, "index": index, "family": family, "reward": float(passed_at is not None),
            "policy_version": iteration, "turns": turns, "prompt": f"prove {task}"}


def test_bulk_episodes_retry_stores_nothing_twice_and_keeps_the_transcript(api, engine):
    run = api.create_run(unique("eps"))
    batch = [episode(0, f"m1/sq/{i:04d}", j, passed_at=(i + j) % 3 if (i + j) % 3 < 2 else None)
             for i in range(10) for j in range(4)]
    assert api.post_episodes(run["id"], batch) == 40
    turns_before = count(engine, "turns")
    assert api.post_episodes(run["id"], batch) == 0
    assert count(engine, "episodes", f"run_id = {run['id']}") == 40
    assert count(engine, "turns") == turns_before
    first = api.episodes(run["id"], limit=1)["items"][0]
    transcript = api.episode(first["id"])
    assert transcript["prompt"] == "prove m1/sq/0000"
    assert [t["index"] for t in transcript["turns"]] == list(range(len(transcript["turns"])))
    assert transcript["passed"] == any(t["passed"] for t in transcript["turns"])


def test_episode_pages_visit_every_match_once_and_filters_apply(api):
    run = api.create_run(unique("pages"))
    api.post_episodes(run["id"], [episode(it, f"m1/{fam}/{i}", 0, passed_at=0 if i % 2 else None, family=fam)
                                  for it in range(3) for fam in ("sq", "rev") for i in range(7)])
    seen, after = [], 0
    while True:
        page = api.episodes(run["id"], after=after, limit=5, iteration=1, family="rev")
        seen += page["items"]
        after = page["next_after"]
        if not page["has_more"]:
            break
    assert len(seen) == 7 == len({e["id"] for e in seen})
    assert {(e["iteration"], e["family"]) for e in seen} == {(1, "rev")}
    passed = api.episodes(run["id"], limit=1000, passed=True)["items"]
    assert len(passed) == 3 * 2 * 3 and all(e["passed"] for e in passed)
    assert api.episodes(run["id"], after=after, iteration=1, family="rev")["items"] == []


def test_get_responses_carry_an_etag_and_answer_304_when_unchanged(http):
    run = http.post("/runs", json={"name": unique("etag")}, headers=AUTH).json()
    first = http.get(f"/runs/{run['id']}")
    tag = first.headers["etag"]
    assert http.get(f"/runs/{run['id']}", headers={"If-None-Match": tag}).status_code == 304
    http.patch(f"/runs/{run['id']}", json={"phase": "later"}, headers=AUTH)
    changed = http.get(f"/runs/{run['id']}", headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag


# --- bad input ---------------------------------------------------------------------------------

INLINE = rocq_task().model_dump(mode="json")
BAD_REQUESTS = {
    "malformed_json": ("POST", "/runs", {"content": b'{"name": "x",', "headers": AUTH | {"content-type": "application/json"}},
                       400, "malformed JSON"),
    "missing_token": ("POST", "/runs", {"json": {"name": "x"}}, 401, "missing bearer token"),
    "wrong_token": ("POST", "/runs", {"json": {"name": "x"}, "headers": {"Authorization": "Bearer nope"}}, 401, "invalid bearer token"),
    "wrong_type": ("POST", "/runs", {"json": {"name": 7, "config": []}, "headers": AUTH}, 422, "body.name"),
    "unknown_field": ("POST", "/runs", {"json": {"name": "x", "colour": "red"}, "headers": AUTH}, 422, "body.colour"),
    "unknown_task": ("POST", "/grade", {"json": {"task_id": "no/such/task", "answer": "x"}, "headers": AUTH}, 422,
                     "unknown task_id 'no/such/task'"),
    "task_and_task_id": ("POST", "/grade", {"json": {"task_id": "a", "task": INLINE, "answer": "x"}, "headers": AUTH},
                         422, "exactly one of task_id or task"),
    "oversized_answer": ("POST", "/grade", {"json": {"task": INLINE, "answer": "x" * 2001}, "headers": AUTH}, 413,
                         "the limit is 2000"),
    "oversized_batch": ("POST", "/grade/batch", {"json": {"items": [{"task": INLINE, "answer": f"{i}"} for i in range(51)]},
                                                 "headers": AUTH}, 413, "the limit is 50"),
    "batch_with_one_oversized": ("POST", "/grade/batch", {"json": {"items": [{"task": INLINE, "answer": "ok"},
                                                                             {"task": INLINE, "answer": "y" * 2001}]},
                                                          "headers": AUTH}, 413, "item 1"),
    "batch_with_one_unknown_task": ("POST", "/grade/batch", {"json": {"items": [{"task": INLINE, "answer": "fine"},
                                                                                {"task_id": "nope", "answer": "x"}]},
                                                             "headers": AUTH}, 422, "item 1: unknown task_id"),
    "ungradable_kind": ("POST", "/grade", {"json": {"task": {**INLINE, "kind": "poetry"}, "answer": "x"}, "headers": AUTH},
                        422, "body.task.kind"),
    "unknown_run": ("POST", "/runs/999999/episodes", {"json": {"episodes": [episode(0, "a/b/c", 0, 0)]}, "headers": AUTH},
                    404, "no run with id 999999"),
    "unknown_job": ("GET", "/grade/doesnotexist", {}, 404, "no grade job"),
    "bad_query_type": ("GET", "/runs", {"params": {"limit": "many"}}, 422, "query.limit"),
}


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=list(BAD_REQUESTS))
def test_bad_input_gets_a_4xx_with_a_message_and_writes_nothing(http, engine, case):
    method, path, kwargs, status, message = BAD_REQUESTS[case]
    tables = ("runs", "episodes", "turns", "grade_jobs", "heldout_evals", "iteration_metrics")
    before = {table: count(engine, table) for table in tables}
    response = http.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    assert message in response.json()["detail"]
    assert {table: count(engine, table) for table in tables} == before


def test_an_episode_batch_with_one_bad_episode_writes_none_of_it(http, engine):
    run = http.post("/runs", json={"name": unique("half")}, headers=AUTH).json()
    good = [episode(0, f"a/b/{i}", 0, 0) for i in range(5)]
    bad = {**episode(0, "a/b/x", 0, 0), "reward": "lots"}
    response = http.post(f"/runs/{run['id']}/episodes", json={"episodes": good + [bad]}, headers=AUTH)
    assert response.status_code == 422 and "episodes.5.reward" in response.json()["detail"]
    too_many = http.post(f"/runs/{run['id']}/episodes", headers=AUTH,
                         json={"episodes": [episode(0, f"a/b/{i}", 0, 0) for i in range(101)]})
    assert too_many.status_code == 413 and "the limit is 100" in too_many.json()["detail"]
    assert count(engine, "episodes", f"run_id = {run['id']}") == 0


# --- grading in the embedded pool --------------------------------------------------------------

def test_embedded_grading_returns_real_verdicts(api):
    task = rocq_task("test/embedded/0001")
    right = api.grade(task, fenced("reflexivity."), timeout_s=60)
    wrong = api.grade(task, fenced("exact I."), timeout_s=60)
    cheat = api.grade(task, fenced("Admitted."), timeout_s=60)
    prose = api.grade(task, "It is obviously true.", timeout_s=60)
    assert (right.status, right.verdict.passed, right.verdict.reason) == ("done", True, "ok")
    assert (wrong.verdict.passed, wrong.verdict.reason) == (False, "compile_error")
    assert cheat.verdict.reason == "forbidden"
    assert prose.verdict.reason == "bad_format"


def test_grading_by_stored_task_id_after_import(stack, api, tmp_path, engine):
    task = rocq_task("m9/imported/0001", family="imported")
    (tmp_path / "m9" / "rocq").mkdir(parents=True)
    (tmp_path / "m9" / "rocq" / "tasks.jsonl").write_text(task.model_dump_json() + "\n")
    result = subprocess.run([sys.executable, "-m", "services.cli", "db", "import-tasks", "--data-dir", str(tmp_path)],
                            env=stack.env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "m9/rocq: 1 tasks" in result.stdout
    job = api.grade("m9/imported/0001", fenced("reflexivity."), timeout_s=60)
    assert job.verdict.passed
    assert count(engine, "tasks", "family = 'imported'") == 1


def test_batch_answers_in_order_and_identical_items_share_a_job(api, engine):
    task = rocq_task("test/batch/0001")
    items = [grade_item(task, fenced("reflexivity.")), grade_item(task, "no fence"),
             grade_item(task, fenced("reflexivity."))]
    before = count(engine, "grade_jobs")
    verdicts = api.grade_batch(items, wait_s=30)
    assert [v.reason for v in verdicts] == ["ok", "bad_format", "ok"]
    assert count(engine, "grade_jobs") == before + 2


def test_metrics_report_verdicts_by_reason_and_latency(http, api):
    api.grade(rocq_task("test/metrics/0001"), "prose only", timeout_s=60)
    text = http.get("/metrics").text
    assert 'verirl_grade_verdicts_total{reason="bad_format"}' in text
    assert "verirl_grade_latency_seconds_bucket" in text
    health = http.get("/health").json()
    assert health["database"]["ok"] and health["queue"]["kind"] == "pool"


def test_openapi_schema_lists_every_endpoint(http):
    paths = http.get("/openapi.json").json()["paths"]
    for path in ("/grade", "/grade/batch", "/grade/{job_id}", "/runs", "/runs/{run_id}", "/runs/{run_id}/iterations",
                 "/runs/{run_id}/evals", "/runs/{run_id}/trajectory", "/runs/{run_id}/episodes",
                 "/episodes/{episode_id}", "/health", "/metrics"):
        assert path in paths, path


# --- restarts ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_api_restart_loses_no_run_episode_or_unfinished_grade(stack, http, api, engine):
    run = api.create_run(unique("restart"), {"seed": 1})
    api.post_iteration(run["id"], 0, {"loss": 1.0})
    api.post_episodes(run["id"], [episode(0, f"m1/sq/{i}", 0, 0) for i in range(20)])
    before = json.dumps([api.get_run(run["id"]), api.episodes(run["id"], limit=1000)["items"],
                         api.iterations(run["id"])], sort_keys=True)
    slow = api.grade(rocq_task("test/restart/0001"), fenced(SLOW_PROOF), timeout_s=0)
    assert slow.status != "done"

    stack.api.kill9()
    stack.start_api()
    stack.wait_ready()

    with APIClient(stack.url, TOKEN) as after:
        assert json.dumps([after.get_run(run["id"]), after.episodes(run["id"], limit=1000)["items"],
                           after.iterations(run["id"])], sort_keys=True) == before
        job = after.get_grade(slow.id, wait_s=60)
    assert job.status == "done" and job.verdict.passed
    assert count(engine, "grade_jobs", f"id = '{slow.id}'") == 1
