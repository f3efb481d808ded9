"""SWE backend: SWE-bench-style tasks. The model submits a unified diff; we apply it to a fresh
copy of the repository snapshot, add the task's hidden test files, and run the FAIL_TO_PASS and
PASS_TO_PASS tests with pytest from a leased venv slot. Resolved = every FAIL_TO_PASS test passes
and every PASS_TO_PASS test still passes (or is skipped), as in SWE-bench.

Before anything runs, the diff's paths are checked on the host: plain relative paths inside the
repository only, no symlinks or binary patches, nothing under the task's protected test paths,
and nothing that would change how pytest itself runs (conftest.py, pytest config, sitecustomize,
modules shadowing pytest's). The diff is then applied by `git apply` inside the sandbox, against
a copy that lives only in the sandbox's size-capped tmpfs.
"""
from __future__ import annotations

import fnmatch
import importlib.metadata as metadata
import logging
import re
import secrets
from pathlib import Path, PurePosixPath

import yaml

from services.grader.backends.base import Backend, trim_feedback
from services.grader.sandbox import Limits
from services.grader.terminal_session import pack, run_scratch, tests_verdict
from services.grader.venv_pool import HARNESS_DISTS, RESULTS_PLUGIN, PoolBusy, VenvPool, get_pool
from shared.schemas import GradeMode, Reason, Task, Verdict
from shared.settings import get_settings

log = logging.getLogger(__name__)

AVAILABLE_REQUIREMENTS = {"pytest"}  # what a venv slot provides beyond the standard library
# Paths no diff may touch, whatever the task says: they would change how the tests run.
HARNESS_PATHS = ("conftest.py", "*/conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                 "sitecustomize.py", "usercustomize.py", "*.pth")
SHADOWED = {"pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", RESULTS_PLUGIN, *HARNESS_DISTS}
DISK_MB = 32

PROMPT = """You are working in the repository `{name}` (Python, tests run with pytest).

Issue:
{statement}

Repository files:
{files}
Fix the issue by answering with a unified diff against the repository root in one ```diff block
(paths as `a/<path>` and `b/<path>`, e.g. from `git diff`). Do not modify the tests."""


class DiffRejected(ValueError):
    """The diff may not be applied (a path outside the repo, a protected file, ...)."""


def diff_paths(diff: str) -> list[str]:
    """Every repository path the diff names, each checked; DiffRejected on the first bad one."""
    lines = diff.splitlines()
    names: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith(("GIT binary patch", "Binary files ")):
            raise DiffRejected("binary patches are not accepted")
        if re.match(r"(new file mode|new mode|old mode|deleted file mode|index \S+) 120000", line):
            raise DiffRejected("the diff may not create or change symbolic links")
        if line.startswith("diff --git "):
            names += line[len("diff --git "):].split(" ")
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            names.append("x/" + line.split(" ", 2)[2])
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            names += [line[4:].split("\t")[0], lines[i + 1][4:].split("\t")[0]]
    paths = []
    for name in names:
        name = name.strip()
        if name == "/dev/null":
            continue
        if name.startswith('"') or not re.fullmatch(r"[A-Za-z0-9_.+@/-]+", name):
            raise DiffRejected(f"unsupported path {name[:80]!r}: use plain a/<path> and b/<path> names")
        parts = PurePosixPath(name).parts[1:]  # drop the a/ or b/ prefix, as git apply -p1 does
        if not parts or name.startswith("/") or ".." in parts or ".git" in parts:
            raise DiffRejected(f"path {name[:80]!r} is outside the repository")
        paths.append("/".join(parts))
    if not paths:
        raise DiffRejected("the diff changes no file (expected ---/+++ headers)")
    return sorted(set(paths))


def check_paths(paths: list[str], protected: tuple[str, ...]) -> None:
    """DiffRejected if a path is protected by the task or would change the test harness."""
    for path in paths:
        for pattern in protected:
            if fnmatch.fnmatch(path, pattern) or path.startswith(pattern.rstrip("*").rstrip("/") + "/"):
                raise DiffRejected(f"the diff may not modify {path}: test files are fixed")
        top = PurePosixPath(path).parts[0].removesuffix(".py")
        if any(fnmatch.fnmatch(path, p) for p in HARNESS_PATHS) or top in SHADOWED:
            raise DiffRejected(f"the diff may not modify {path}: it would change how the tests run")


def load_task(path: str | Path, split: str = "train") -> Task:
    """The Task for an SWE task directory; `meta` carries the test lists and the directory."""
    path = Path(path).resolve()
    spec = yaml.safe_load((path / "task.yaml").read_text())
    repo = path / "repo"
    missing = set(spec.get("requirements", ["pytest"])) - AVAILABLE_REQUIREMENTS
    if missing:
        raise ValueError(f"{path}: requirements {sorted(missing)} are not available in the venv slots")
    if not spec.get("FAIL_TO_PASS"):
        raise ValueError(f"{path}: FAIL_TO_PASS is empty")
    protected = tuple(spec.get("protected", ["tests/*"]))
    files = []
    for file in sorted(p for p in repo.rglob("*") if p.is_file()):
        rel = file.relative_to(repo).as_posix()
        if not any(fnmatch.fnmatch(rel, pat) for pat in protected):
            files.append(f"--- {rel}\n{file.read_text()}")
        else:
            files.append(f"--- {rel} (test file; not shown)")
    solution = path / "solution.diff"
    return Task(
        id=f"swe/{path.name}", rung="swe", family=str(spec.get("family", path.name)), split=split,
        kind="swe", tier=int(spec.get("tier", 2)),
        prompt=PROMPT.format(name=path.name, statement=str(spec["problem_statement"]).strip(), files="\n".join(files)),
        gold=solution.read_text() if solution.is_file() else None,
        meta={"task_dir": str(path), "FAIL_TO_PASS": list(spec["FAIL_TO_PASS"]),
              "PASS_TO_PASS": list(spec.get("PASS_TO_PASS", [])), "protected": list(protected),
              "test_timeout_sec": float(spec.get("test_timeout_sec", 30))},
    )


def _snapshot(task_dir: Path, patch: str) -> bytes:
    """The tar the sandbox starts from: the repo, the hidden test files and the diff."""
    files = {f"work/repo/{p.relative_to(task_dir / 'repo').as_posix()}": p.read_bytes()
             for p in (task_dir / "repo").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    overlay = task_dir / "test_files"
    if overlay.is_dir():
        files |= {f"overlay/{p.relative_to(overlay).as_posix()}": p.read_bytes()
                  for p in overlay.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    files["patch.diff"] = patch.encode()
    return pack(files, dirs=("work", "work/repo", "overlay"))


class SWEBackend(Backend):
    name = "swe"
    fence = "swe"

    def __init__(self, pool: VenvPool | None = None):
        self.pool = pool

    def version(self) -> str:
        return f"swe-1+pytest-{metadata.version('pytest')}"

    def check(self, task: Task, block: str, mode: GradeMode = "whole") -> Verdict:
        try:
            task_dir = Path(task.meta["task_dir"])
            f2p, p2p = tuple(task.meta["FAIL_TO_PASS"]), tuple(task.meta.get("PASS_TO_PASS", ()))
            protected = tuple(task.meta.get("protected", ("tests/*",)))
        except (KeyError, TypeError) as exc:
            return Verdict(passed=False, reason=Reason.sandbox_error, feedback=f"malformed swe task: {exc}")
        patch = block if block.endswith("\n") else block + "\n"
        try:
            check_paths(diff_paths(patch), protected)
        except DiffRejected as exc:
            return Verdict(passed=False, reason=Reason.forbidden, feedback=str(exc))
        try:
            patch.encode("utf-8")
        except UnicodeEncodeError:
            return Verdict(passed=False, reason=Reason.bad_format, feedback="the diff is not valid UTF-8 text")
        if "\0" in patch:
            return Verdict(passed=False, reason=Reason.bad_format, feedback="the diff contains a NUL byte")
        try:
            return self._run(task, task_dir, patch, f2p, p2p)
        except (OSError, PoolBusy, RuntimeError) as exc:
            log.warning("swe task %s could not run: %s", task.id, exc)
            return Verdict(passed=False, reason=Reason.sandbox_error, feedback=f"grading failed to run: {exc}")

    def _run(self, task: Task, task_dir: Path, patch: str, f2p: tuple[str, ...], p2p: tuple[str, ...]) -> Verdict:
        settings = get_settings()
        wall = float(task.meta.get("test_timeout_sec", 30))
        limits = Limits.from_settings(settings).scaled(wall_s=wall, cpu_s=int(wall) + 1, file_size_mb=DISK_MB)
        pool = self.pool or get_pool()
        state = _snapshot(task_dir, patch)
        with pool.lease(f"swe:{task.id}:{secrets.token_hex(4)}") as slot:
            repo = "{work}/repo"
            argv = slot.pytest_argv("--rootdir", repo, "--confcutdir", repo, "-o", f"pythonpath={repo}",
                                    *dict.fromkeys(f2p + p2p))
            run = run_scratch("patch", argv, state, limits, size_mb=DISK_MB, ro_binds=slot.ro_binds)
        res = run.result
        if res.returncode == 3 and "verirl: the diff does not apply" in res.stderr and not run.payloads():
            return Verdict(passed=False, reason=Reason.parse, feedback=trim_feedback(
                "the diff does not apply:\n" + res.stderr, settings.feedback_chars))
        return tests_verdict(run, "", None, {"FAIL_TO_PASS": (f2p, ("passed",)),
                                             "PASS_TO_PASS": (p2p, ("passed", "skipped"))})
