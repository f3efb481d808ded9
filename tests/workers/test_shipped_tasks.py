"""Every shipped task: the grader certifies its reference solution and rejects its wrong one."""
from __future__ import annotations

from pathlib import Path

import pytest

from services.grader.backends import swe, terminal
from services.grader.pipeline import grade
from shared.schemas import Reason

TASKS = Path(__file__).resolve().parents[2] / "tasks"
TERMINAL_TASKS = sorted(p for p in (TASKS / "terminal").iterdir() if p.is_dir())
SWE_TASKS = sorted(p for p in (TASKS / "swe").iterdir() if p.is_dir())


def fenced(body: str, tag: str = "bash") -> str:
    return f"```{tag}\n{body.rstrip()}\n```"


def test_task_sets_are_big_enough():
    assert len(TERMINAL_TASKS) >= 12 and len(SWE_TASKS) >= 8


@pytest.mark.parametrize("path", TERMINAL_TASKS, ids=lambda p: p.name)
def test_terminal_reference_passes_and_wrong_fails(pool, path):
    task = terminal.load_task(path)
    good = grade(task, fenced((path / "solution.sh").read_text()), use_cache=False)
    assert good.passed and good.reason == Reason.ok, good.feedback
    assert good.backend == "terminal" and len(good.steps) == 1 and good.steps[0].exit_code == 0
    bad = grade(task, fenced((path / "wrong.sh").read_text()), use_cache=False)
    assert not bad.passed and bad.reason == Reason.tests_failed, bad.feedback
    assert "failing:" in bad.feedback


@pytest.mark.parametrize("path", SWE_TASKS, ids=lambda p: p.name)
def test_swe_reference_resolves_and_wrong_does_not(pool, path):
    task = swe.load_task(path)
    assert task.gold == (path / "solution.diff").read_text()
    good = grade(task, fenced(task.gold, "diff"), use_cache=False)
    assert good.passed and good.reason == Reason.ok, good.feedback
    bad = grade(task, fenced((path / "wrong.diff").read_text(), "diff"), use_cache=False)
    assert not bad.passed and bad.reason == Reason.tests_failed, bad.feedback


@pytest.mark.parametrize("path", SWE_TASKS, ids=lambda p: p.name)
def test_swe_base_commit_fails_its_fail_to_pass_tests(pool, path):
    """The snapshot really has the bug: a harmless diff (a README edit) leaves FAIL_TO_PASS failing
    and PASS_TO_PASS passing."""
    task = swe.load_task(path)
    first, *rest = (path / "repo" / "README.md").read_text().splitlines()
    n = 1 + len(rest)
    noop = (f"--- a/README.md\n+++ b/README.md\n@@ -1,{n} +1,{n} @@\n-{first}\n+{first} (edited)\n"
            + "".join(f" {line}\n" for line in rest))
    verdict = grade(task, fenced(noop, "diff"), use_cache=False)
    assert not verdict.passed and verdict.reason == Reason.tests_failed
    assert f"FAIL_TO_PASS: 0/{len(task.meta['FAIL_TO_PASS'])} passed" in verdict.feedback
    p2p = len(task.meta["PASS_TO_PASS"])
    assert f"PASS_TO_PASS: {p2p}/{p2p} passed" in verdict.feedback


def test_prompts_show_source_but_not_tests():
    task = swe.load_task(SWE_TASKS[0])
    assert "```diff" in task.prompt and "(test file; not shown)" in task.prompt
    hidden = (SWE_TASKS[0] / "test_files").rglob("*.py")
    assert all(p.read_text() not in task.prompt for p in hidden)
    term = terminal.load_task(TERMINAL_TASKS[0])
    assert "submit" in term.prompt and "test_" not in term.prompt
