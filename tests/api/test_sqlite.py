"""The embedded default: the same app on a SQLite file (migrations, bulk writes, grading in the
local pool with real coqc), in process."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from services.api.app import create_app
from shared.settings import Settings
from tests.api.conftest import AUTH, TOKEN, fenced, rocq_task


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    directory = tmp_path_factory.mktemp("sqlite")
    settings = Settings(database_url=f"sqlite:///{directory}/verirl.db", api_token=TOKEN, data_dir=directory / "none")
    with TestClient(create_app(settings)) as client:
        yield client


def test_runs_episodes_and_trajectory_work_on_sqlite(client):
    run = client.post("/runs", json={"name": "embedded"}, headers=AUTH).json()
    batch = {"episodes": [{"iteration": 0, "task_id": f"m1/sq/{i}", "index": 0,
                           "turns": [{"completion": "x", "passed": i % 2 == 0, "reason": "ok"}]} for i in range(30)]}
    first = client.post(f"/runs/{run['id']}/episodes", json=batch, headers=AUTH)
    again = client.post(f"/runs/{run['id']}/episodes", json=batch, headers=AUTH)
    assert (first.status_code, first.json()["inserted"]) == (201, 30)
    assert (again.status_code, again.json()["inserted"], again.json()["skipped"]) == (200, 0, 30)
    page = client.get(f"/runs/{run['id']}/episodes", params={"passed": True, "limit": 100}).json()
    assert len(page["items"]) == 15
    client.post(f"/runs/{run['id']}/evals", headers=AUTH,
                json={"iteration": 0, "items": [{"task_id": "m1/sq/1", "n": 2, "passed_by_turn": [1, 2]}]})
    point = client.get(f"/runs/{run['id']}/trajectory", params={"k": [1, 2]}).json()["iterations"][0]
    assert (point["turn1_rate"], point["pass_rate"], point["pass_at_k"]["2"]) == (0.5, 1.0, 1.0)
    assert point["families"]["sq"]["episodes"] == 2


def test_grading_in_the_local_pool_on_sqlite(client):
    task = rocq_task().model_dump(mode="json")
    response = client.post("/grade", json={"task": task, "answer": fenced("reflexivity."), "timeout_s": 60}, headers=AUTH)
    assert response.status_code == 200 and response.json()["verdict"]["passed"]
    batch = client.post("/grade/batch", headers=AUTH, json={"wait_s": 60, "items": [
        {"task": task, "answer": fenced("reflexivity.")}, {"task": task, "answer": fenced("exact I.")}]}).json()
    assert [job["verdict"]["reason"] for job in batch["jobs"]] == ["ok", "compile_error"]
    assert batch["jobs"][0]["id"] == response.json()["id"]
