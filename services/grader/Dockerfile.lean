# syntax=docker/dockerfile:1
# A grading worker for the `lean` queue: a pinned Lean 4 toolchain (installed with elan) and the
# leanprover-community REPL (for step-by-step grading), both built into the image. The build ends
# by certifying every M1 gold in its Lean rendering with this toolchain, so a broken or
# incompatible toolchain fails `docker build`, not a training run.
# Build from the repository root: docker build -f services/grader/Dockerfile.lean .
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

# ---- lean: elan, the toolchain, the REPL ---------------------------------------------------
FROM ${PYTHON_IMAGE} AS lean
# elan's release archive, checked against its published SHA-256; the REPL's tag matches the
# toolchain (the REPL is tagged per Lean release).
ARG ELAN_VERSION=v4.2.3
ARG ELAN_SHA256_X86_64=df0b2b3a439961ffcbb3985214365ffe40f49bc871df04dff268c7d8e21ca8b2
ARG ELAN_SHA256_AARCH64=cb69af0803b04157bc30201c29c12fca882bb3ad8b43476b8d2d3064810bc3ac
ARG LEAN_VERSION=v4.29.0
ARG REPL_VERSION=v4.29.0
SHELL ["/bin/bash", "-euo", "pipefail", "-c"]
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl git \
    && rm -rf /var/lib/apt/lists/*
ENV ELAN_HOME=/opt/elan
RUN arch="$(uname -m)"; \
    case "$arch" in \
      x86_64) sum="$ELAN_SHA256_X86_64" ;; \
      aarch64) sum="$ELAN_SHA256_AARCH64" ;; \
      *) echo "no elan build for $arch" >&2; exit 1 ;; \
    esac; \
    curl --fail --location --retry 3 -o /tmp/elan.tar.gz \
      "https://github.com/leanprover/elan/releases/download/${ELAN_VERSION}/elan-${arch}-unknown-linux-gnu.tar.gz"; \
    echo "${sum}  /tmp/elan.tar.gz" | sha256sum -c -; \
    tar -xzf /tmp/elan.tar.gz -C /tmp; \
    /tmp/elan-init -y --no-modify-path --default-toolchain "leanprover/lean4:${LEAN_VERSION}"; \
    rm /tmp/elan.tar.gz /tmp/elan-init; \
    "$ELAN_HOME/bin/lean" --version
RUN git clone --depth 1 --branch "${REPL_VERSION}" https://github.com/leanprover-community/repl /opt/repl-src
WORKDIR /opt/repl-src
# Built with the image's toolchain, whatever the tag's own lean-toolchain file says.
RUN echo "leanprover/lean4:${LEAN_VERSION}" > lean-toolchain \
    && "$ELAN_HOME/bin/lake" build \
    && install -D -m 0755 .lake/build/bin/repl /opt/repl/bin/repl

# ---- build: the virtualenv ---------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml docker/requirements.py ./
RUN python requirements.py pyproject.toml api > requirements.txt \
    && pip install --no-cache-dir -r requirements.txt
COPY README.md ./
COPY shared ./shared
COPY services ./services
RUN pip install --no-cache-dir --no-deps .

# ---- runtime -----------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /home/verirl verirl \
    && install -d -o verirl -g verirl /var/lib/verirl
# The toolchain keeps its path (its binaries find their libraries relative to it); the grader
# runs the real binaries, never elan's proxies, and bind-mounts the toolchain read-only into
# each sandbox.
COPY --from=lean /opt/elan /opt/elan
COPY --from=lean /opt/repl /opt/repl
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY data ./data
COPY docker/certify_golds.py /usr/local/lib/verirl/certify_golds.py
ENV PATH=/opt/venv/bin:/opt/repl/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ELAN_HOME=/opt/elan \
    VERIRL_VAR_DIR=/var/lib/verirl \
    VERIRL_LEAN_REPL=/opt/repl/bin/repl
# One fixed path for the toolchain elan installed (the only one under toolchains/).
RUN set -- /opt/elan/toolchains/*/bin/lean && [ "$#" -eq 1 ] && [ -x "$1" ] && ln -s "${1%/bin/lean}" /opt/lean
ENV VERIRL_LEAN=/opt/lean/bin/lean
# Certify every M1 gold in its Lean rendering (whole-file check), and a sample of them step by
# step through the REPL. These are the project's own reference proofs, run during the build where
# namespaces cannot be created, hence no sandbox for this one step.
USER 10001:10001
RUN VERIRL_SANDBOX=none VERIRL_VAR_DIR=/tmp/certify python /usr/local/lib/verirl/certify_golds.py \
      --rung m1 --lang lean --jobs 2 --steps-per-family 1
HEALTHCHECK --interval=30s --timeout=20s --start-period=30s --retries=3 \
    CMD ["sh", "-c", "celery -A services.grader.worker:app inspect ping --timeout 10 --destination \"lean@$HOSTNAME\" >/dev/null"]
CMD ["verirl", "worker", "--queues", "lean", "--name", "lean@%h"]
