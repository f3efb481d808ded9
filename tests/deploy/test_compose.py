"""`docker compose config` validates the stack (no engine needed), and the stack keeps the
promises of the operations design: health-gated start order, no default secrets, limits."""
from __future__ import annotations

import re

import pytest

from tests.deploy.tools import ROOT, SECRETS, compose, resolved

CORE = {"postgres", "redis", "prestart", "api", "grader-rocq", "grader-lean", "grader-terminal", "grader-swe"}
GPU = {"model-init", "sampler", "trainer"}
WORKER_QUEUES = {"grader-rocq": "rocq,nd", "grader-lean": "lean", "grader-terminal": "terminal", "grader-swe": "swe"}


@pytest.fixture(scope="module")
def stack() -> dict:
    return resolved()


@pytest.fixture(scope="module")
def gpu_stack() -> dict:
    return resolved("gpu")


def test_config_passes_without_gpu_profile(stack):
    assert set(stack["services"]) == CORE


def test_config_passes_with_gpu_profile(gpu_stack):
    assert set(gpu_stack["services"]) == CORE | GPU


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_config_refuses_to_run_without_each_secret(missing):
    env = {k: v for k, v in SECRETS.items() if k != missing}
    out = compose("config", "--quiet", env=env)
    assert out.returncode != 0
    assert f"required variable {missing} is missing a value" in out.stderr


def test_services_run_in_production_mode_with_the_given_token(gpu_stack):
    for name, service in gpu_stack["services"].items():
        env = service.get("environment") or {}
        if any(key.startswith("VERIRL_") for key in env):
            assert env["VERIRL_MODE"] == "production", name
            assert env["VERIRL_API_TOKEN"] == SECRETS["VERIRL_API_TOKEN"], name


def test_database_password_comes_from_the_environment(stack):
    password = SECRETS["POSTGRES_PASSWORD"]
    assert stack["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"] == password
    assert f":{password}@postgres:5432/" in stack["services"]["api"]["environment"]["VERIRL_DATABASE_URL"]


def test_every_long_running_service_has_a_health_check(gpu_stack):
    one_shots = {"prestart", "model-init"}
    for name, service in gpu_stack["services"].items():
        if name not in one_shots:
            assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"


def test_api_starts_only_after_healthy_data_services_and_migrations(stack):
    depends = stack["services"]["api"]["depends_on"]
    assert depends["postgres"]["condition"] == "service_healthy"
    assert depends["redis"]["condition"] == "service_healthy"
    assert depends["prestart"]["condition"] == "service_completed_successfully"
    assert stack["services"]["api"]["environment"]["VERIRL_DB_UPGRADE_ON_START"] == "false"


def test_prestart_waits_for_the_database_then_migrates(stack):
    prestart = stack["services"]["prestart"]
    assert prestart["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert prestart["command"] == ["verirl-prestart"]
    script = (ROOT / "docker" / "prestart.sh").read_text()
    assert script.index("database_ready") < script.index("verirl db upgrade")


@pytest.mark.parametrize("name", sorted(WORKER_QUEUES))
def test_each_queue_has_a_worker_with_resource_limits(stack, name):
    service = stack["services"][name]
    command = service["command"]
    assert command[:4] == ["verirl", "worker", "--queues", WORKER_QUEUES[name]]
    limits = service["deploy"]["resources"]["limits"]
    assert limits["cpus"] and limits["memory"] and limits["pids"]
    assert service["cap_drop"] == ["ALL"] and service["read_only"] is True
    assert "no-new-privileges:true" in service["security_opt"]
    # Docker mounts a tmpfs noexec unless told otherwise; task scripts and test venvs run there.
    assert all("exec" in mount.split(":", 1)[1].split(",") for mount in service["tmpfs"])
    for dependency in ("postgres", "redis"):
        assert service["depends_on"][dependency]["condition"] == "service_healthy"


@pytest.mark.parametrize("name", ["sampler", "trainer"])
def test_gpu_services_reserve_gpus_and_share_the_artifacts_volume(gpu_stack, name):
    service = gpu_stack["services"][name]
    assert service["profiles"] == ["gpu"]
    (device,) = service["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"] and device["count"] >= 1
    mounts = {m["source"]: m["target"] for m in service["volumes"] if m["type"] == "volume"}
    assert mounts["artifacts"] == "/var/lib/verirl/artifacts"
    assert mounts["models"] == "/var/lib/verirl/models"


def test_sampler_runs_the_vllm_engine(gpu_stack):
    command = gpu_stack["services"]["sampler"]["command"]
    assert command[:3] == ["verirl", "serve", "sampler"]
    assert command[command.index("--engine") + 1] == "vllm"


def test_data_services_keep_their_data_in_volumes(stack):
    assert {m["target"] for m in stack["services"]["postgres"]["volumes"]} == {"/var/lib/postgresql/data"}
    assert {m["target"] for m in stack["services"]["redis"]["volumes"]} == {"/data"}


def test_third_party_images_are_pinned_by_tag_and_digest(gpu_stack):
    for name in ("postgres", "redis"):
        assert re.fullmatch(r"[a-z]+:[\w.-]+@sha256:[0-9a-f]{64}", gpu_stack["services"][name]["image"]), name


def test_only_loopback_is_published_by_default(gpu_stack):
    for name, service in gpu_stack["services"].items():
        for port in service.get("ports", []):
            assert port["host_ip"] == "127.0.0.1", name


def test_docker_compose_config_through_the_docker_client(tmp_path):
    # The same binary as a Docker CLI plugin: `docker compose config`, exactly as a user runs it.
    import os
    import shutil
    import subprocess

    from tests.deploy.tools import compose_binary

    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client here; the compose binary itself is checked by the tests above")
    plugins = tmp_path / "cli-plugins"
    plugins.mkdir()
    (plugins / "docker-compose").symlink_to(compose_binary())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERIRL_", "POSTGRES_"))}
    env.update(SECRETS, DOCKER_CONFIG=str(tmp_path))
    out = subprocess.run([docker, "compose", "--env-file", os.devnull, "--profile", "gpu", "config", "--services"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert set(out.stdout.split()) == CORE | GPU
