"""Every service command in compose.yaml exists and starts outside Docker with the environment
compose gives it (addresses rewritten to this machine's Postgres and Redis; see local.py), and
passes compose's own health check: the prestart step migrates a fresh database, the API and the
trainer answer /health, each grading worker answers the broker ping its health check sends. The
sampler's command needs vLLM and a GPU: here it runs up to building the engine and stops there,
saying so (the same service with the hf engine is started and exercised by tests/sampler)."""
from __future__ import annotations

import secrets
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from services.cli import build_parser
from tests.deploy.local import (Places, free_port, healthcheck, http_ok, localise, postgres_database, shell_words,
                                start, stop_all, wait_until)
from tests.deploy.tools import ROOT, SECRETS, resolved

pytestmark = pytest.mark.slow
WORKERS = ("grader-rocq", "grader-lean", "grader-terminal", "grader-swe")
CONTAINER_MODEL = "/var/lib/verirl/models/base"


@pytest.fixture(scope="module")
def services() -> dict:
    return resolved("gpu")["services"]


@pytest.fixture(scope="module")
def places():
    # The var dir must be searchable by other users, as in the images: the SWE worker's venv
    # slots in it are used by sandboxed processes under a throw-away uid.
    var_dir = Path(tempfile.mkdtemp(prefix="verirl-deploy-var-"))
    var_dir.chmod(0o755)
    try:
        with postgres_database() as url:
            yield Places(database_url=url, broker_namespace=f"deploy-{secrets.token_hex(4)}.", var_dir=var_dir)
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def prestart(services, places):
    """compose's prestart command; the API image installs docker/prestart.sh under that name."""
    assert services["prestart"]["command"] == ["verirl-prestart"]
    dockerfile = (ROOT / "services/api/Dockerfile").read_text()
    assert "COPY --chmod=0755 docker/prestart.sh /usr/local/bin/verirl-prestart" in dockerfile
    return subprocess.run(["sh", str(ROOT / "docker/prestart.sh")], env=places.environment(services["prestart"]["environment"]),
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.fixture
def model_dir(tmp_path):
    """What model-init looks for: a model directory (only its presence matters here)."""
    model = tmp_path / "base"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return model


@pytest.fixture(scope="module")
def stack(services, places, prestart, tmp_path_factory):
    """The long-running services, all started at once (each is checked by its own test)."""
    assert prestart.returncode == 0, prestart.stdout + prestart.stderr
    logs = tmp_path_factory.mktemp("logs")
    ports = {name: free_port() for name in ("api", "trainer")}
    places.api_url = f"http://127.0.0.1:{ports['api']}"
    running = {}
    try:
        for name in ("api", "trainer", *WORKERS):
            command = localise(services[name]["command"], ports.get(name))
            running[name] = start(name, command, places.environment(services[name]["environment"]), logs)
        yield running, ports
    finally:
        stop_all(list(running.values()))


def local_healthcheck(service: dict, port: int | None, container_port: int | None) -> list[str]:
    replacements = {f"127.0.0.1:{container_port}": f"127.0.0.1:{port}"} if port else {}
    return healthcheck(service["healthcheck"]["test"], replacements)


# ---- every command parses with the real CLI ----------------------------------------------------

def test_every_verirl_command_in_compose_parses(services):
    parser = build_parser()
    checked = 0
    for name, service in services.items():
        words = shell_words(service.get("command") or [])
        if words[:1] == ["verirl"]:
            args = parser.parse_args(words[1:])
            assert callable(args.handler), name
            checked += 1
    assert checked == len(services) - 3  # all but postgres, redis and prestart (a script, below)


def test_prestart_script_runs_only_existing_commands():
    parser = build_parser()
    lines = [line.strip() for line in (ROOT / "docker/prestart.sh").read_text().splitlines()]
    commands = [shlex.split(line) for line in lines if line.startswith("verirl ")]
    assert [c[:3] for c in commands] == [["verirl", "db", "upgrade"], ["verirl", "db", "import-tasks"]]
    for words in commands:
        assert callable(parser.parse_args(words[1:]).handler)


# ---- one-shots ---------------------------------------------------------------------------------

def test_prestart_migrates_a_fresh_database_and_imports_tasks(prestart, places):
    from sqlalchemy import create_engine, text

    assert prestart.returncode == 0, prestart.stdout + prestart.stderr
    engine = create_engine(places.database_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
            assert connection.execute(text("SELECT count(*) FROM tasks")).scalar() > 0
    finally:
        engine.dispose()


def test_model_init_keeps_a_model_that_is_already_there(services, places, model_dir):
    command = services["model-init"]["command"]
    assert command[:2] == ["sh", "-c"]
    before = sorted(model_dir.iterdir())
    script = command[2].replace(CONTAINER_MODEL, str(model_dir))
    out = subprocess.run(["sh", "-c", script], env=places.environment({}), cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert sorted(model_dir.iterdir()) == before  # nothing written: the model was kept


def test_production_mode_refuses_the_development_token(services, places):
    env = places.environment({**services["api"]["environment"], "VERIRL_API_TOKEN": "dev-token"})
    out = subprocess.run(localise(services["api"]["command"], free_port()), env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "verirl serve: VERIRL_MODE=production needs VERIRL_API_TOKEN set to a secret of at least 16 "
        "characters (e.g. `openssl rand -hex 32`), not the default"]


# ---- long-running services pass compose's health checks ----------------------------------------

def test_api_is_healthy_with_database_and_queue(stack, services):
    running, ports = stack
    wait_until(lambda: http_ok(f"http://127.0.0.1:{ports['api']}/health"), running["api"])
    check = subprocess.run(local_healthcheck(services["api"], ports["api"], 8000), capture_output=True, timeout=30)
    assert check.returncode == 0
    report = httpx.get(f"http://127.0.0.1:{ports['api']}/health", timeout=5).json()
    assert report["database"]["ok"] and report["database"]["dialect"] == "postgresql"
    assert report["queue"]["ok"] and report["queue"]["kind"] == "celery"


def test_api_requires_the_configured_token_for_writes(stack):
    running, ports = stack
    url = f"http://127.0.0.1:{ports['api']}/runs"
    wait_until(lambda: http_ok(f"http://127.0.0.1:{ports['api']}/health"), running["api"])
    refused = httpx.post(url, json={"name": "deploy-check"}, headers={"Authorization": "Bearer dev-token"}, timeout=10)
    assert refused.status_code == 401
    accepted = httpx.post(url, json={"name": "deploy-check"},
                          headers={"Authorization": f"Bearer {SECRETS['VERIRL_API_TOKEN']}"}, timeout=10)
    assert accepted.status_code in (200, 201), accepted.text


def test_every_worker_answers_its_health_check(stack, services):
    running, _ = stack
    # Each health check runs in its worker's container, so with that worker's environment; they
    # are asked together, and those not answering yet are asked again.
    for name in WORKERS:  # first the worker's own word that it consumes its queues, then the check
        wait_until(lambda: " ready." in running[name].log.read_text(errors="replace"), running[name], budget_s=240)
    waiting = {name: local_healthcheck(services[name], None, None) for name in WORKERS}
    deadline = time.monotonic() + 240  # bounds a hang only
    while waiting and time.monotonic() < deadline:
        for name in waiting:
            assert running[name].process.poll() is None, f"{name} exited:\n{running[name].tail()}"
        checks = {name: subprocess.Popen(argv, env=running[name].env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL) for name, argv in waiting.items()}
        waiting = {name: waiting[name] for name, check in checks.items() if check.wait(timeout=90) != 0}
    assert not waiting, {name: running[name].tail() for name in waiting}


def test_trainer_is_healthy(stack, services):
    running, ports = stack
    wait_until(lambda: http_ok(f"http://127.0.0.1:{ports['trainer']}/health"), running["trainer"])
    check = subprocess.run(local_healthcheck(services["trainer"], ports["trainer"], 8002), capture_output=True, timeout=30)
    assert check.returncode == 0


def test_sampler_command_reaches_the_vllm_engine_which_needs_a_gpu(services, places, model_dir):
    # Everything up to building the engine runs: arguments, settings, the model directory check;
    # then the one missing piece on this machine is named (vLLM, which needs CUDA).
    command = localise(services["sampler"]["command"], free_port(), {CONTAINER_MODEL: str(model_dir)})
    out = subprocess.run(command, env=places.environment(services["sampler"]["environment"]), cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "verirl serve: the vllm engine needs the `vllm` package, which runs only on a CUDA GPU "
        "(pip install vllm there); on this machine use --engine hf"]
