"""The trainer service: jobs over HTTP, started, watched and stopped; bad requests refused."""
from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from services.trainer.app import create_app
from tests.trainer.conftest import small_config


@pytest.fixture
def client():
    with TestClient(create_app()) as c:
        yield c


def test_job_without_phases_is_refused_with_a_message(client):
    response = client.post("/jobs", json={"config": {"model": "m", "phases": []}})
    assert response.status_code == 422
    assert "phases" in response.text


def test_unknown_job_is_404(client):
    assert client.get("/jobs/99").status_code == 404
    assert client.post("/jobs/99/stop").status_code == 404


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_job_runs_and_stops_after_the_current_iteration_with_a_checkpoint(client, stack, warm_model_dir, tmp_path):
    cfg = small_config(stack, warm_model_dir, tmp_path / "run", "service-job")
    # The token is a secret that a config never dumps, so a job names it explicitly.
    body = {"config": {**cfg.model_dump(mode="json"), "api_token": stack.token}}
    job = client.post("/jobs", json=body).json()
    assert job["status"] == "running" and job["total_iterations"] == 2
    assert client.post("/jobs", json=body).status_code == 409
    assert client.post(f"/jobs/{job['id']}/stop").json()["status"] == "stopping"
    for _ in range(1200):
        state = client.get(f"/jobs/{job['id']}").json()
        if state["status"] not in ("running", "stopping"):
            break
        time.sleep(0.5)
    assert state["status"] == "stopped", state
    done = state["iterations_done"]
    assert done < 2  # it stopped between iterations instead of running to the end
    assert (tmp_path / "run" / "checkpoints" / f"it{done:06d}" / "state.json").is_file()
