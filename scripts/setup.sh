#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian machine: system packages, a virtualenv, the project.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v coqc >/dev/null || need_apt+=(coq)
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v chromium >/dev/null || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.verirl-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  # The CPU build of torch first, so that nothing later pulls a CUDA build.
  .venv/bin/pip install -q "torch==2.13.0"
  .venv/bin/pip install -q -e ".[dev]"
  touch "$stamp"
fi
