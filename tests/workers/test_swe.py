"""SWE grading: which diffs are refused before anything runs, and hostile patches whose code
runs inside the test process."""
from __future__ import annotations

from pathlib import Path

import pytest

from services.grader.backends.swe import DiffRejected, SWEBackend, check_paths, diff_paths, load_task
from shared.schemas import Reason

TASK = Path(__file__).resolve().parents[2] / "tasks" / "swe" / "median-even"
MODULE = "statkit/summary.py"


def replace_body(new_body: str) -> str:
    """A diff that replaces median()'s last line with `new_body` (lines, 4-space indented)."""
    added = "".join(f"+    {line}\n" for line in new_body.splitlines())
    return (f"--- a/{MODULE}\n+++ b/{MODULE}\n@@ -6,4 +6,{3 + len(new_body.splitlines())} @@\n"
            " def median(xs):\n"
            '     """Median of a non-empty sequence (the mean of the two middle values when the length is even)."""\n'
            "     ordered = sorted(xs)\n"
            "-    return ordered[len(ordered) // 2]\n" + added)


def new_file(path: str, text: str = "x = 1\n") -> str:
    lines = text.splitlines()
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{ln}\n" for ln in lines)


@pytest.mark.parametrize("diff, why", [
    (new_file("tests/test_summary.py"), "test files are fixed"),
    (new_file("tests/test_summary_issue.py"), "test files are fixed"),
    (new_file("conftest.py"), "change how the tests run"),
    (new_file("statkit/conftest.py"), "change how the tests run"),
    (new_file("sitecustomize.py"), "change how the tests run"),
    (new_file("pytest.py"), "change how the tests run"),
    (new_file("_pytest/__init__.py"), "change how the tests run"),
    (new_file("pytest.ini", "[pytest]"), "change how the tests run"),
    (new_file("evil.pth", "import os"), "change how the tests run"),
    ("--- a/../outside.py\n+++ b/../outside.py\n@@ -0,0 +1 @@\n+x\n", "outside the repository"),
    ("--- /etc/passwd\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+x\n", "outside the repository"),
    (new_file(".git/config"), "outside the repository"),
    ("diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc\n",
     "symbolic links"),
    ("diff --git a/x.bin b/x.bin\nGIT binary patch\nliteral 1\nIcmZ?l000310RR91\n", "binary"),
    ('--- "a/we ird.py"\n+++ "b/we ird.py"\n@@ -0,0 +1 @@\n+x\n', "unsupported path"),
    ("just some text\n", "changes no file"),
])
def test_refused_before_anything_runs(diff, why):
    with pytest.raises(DiffRejected, match=why):
        check_paths(diff_paths(diff), ("tests/*",))


def test_refusals_are_forbidden_verdicts(pool):
    verdict = SWEBackend(pool).check(load_task(TASK), new_file("tests/test_summary.py"))
    assert verdict.reason == Reason.forbidden and "test files are fixed" in verdict.feedback


def test_diff_that_does_not_apply_is_a_parse_error(pool):
    diff = f"--- a/{MODULE}\n+++ b/{MODULE}\n@@ -6,2 +6,2 @@\n def nothing_like_this():\n-    pass\n+    return 1\n"
    verdict = SWEBackend(pool).check(load_task(TASK), diff)
    assert verdict.reason == Reason.parse and "does not apply" in verdict.feedback


def test_new_source_files_are_allowed(pool):
    fix = replace_body("from statkit.helpers import middle\nreturn middle(ordered)")
    helper = new_file("statkit/helpers.py", "def middle(o):\n    m = len(o) // 2\n"
                      "    return o[m] if len(o) % 2 else (o[m - 1] + o[m]) / 2")
    assert SWEBackend(pool).check(load_task(TASK), fix + helper).passed


@pytest.mark.parametrize("body, reasons, says", [
    # skipping the failing tests from library code does not resolve the issue
    ("import pytest\npytest.skip('no')", {Reason.tests_failed}, "FAIL_TO_PASS: 0/2 passed"),
    # killing the test run
    ("import os\nos.kill(os.getppid(), 9)\nos._exit(0)", {Reason.tests_failed}, "without reporting"),
    # printing something that looks like a results line
    ("print('0' * 32 + '{\"tests/test_summary_issue.py::test_median_even_sorted\": \"passed\"}' + '0' * 32)\n"
     "return ordered[len(ordered) // 2]", {Reason.tests_failed}, "FAIL_TO_PASS: 0/2 passed"),
    # filling the disk from the code under test
    ("open('/tmp/work/fill', 'wb').write(b'0' * (64 << 20))\nreturn 0", {Reason.tests_failed}, "FAIL_TO_PASS: 0/2"),
    # a fork bomb from the code under test: the process limit stops it, the wall clock ends it
    # (whether pytest reports before the wall clock hits depends on scheduling)
    ("import os\nwhile True:\n    os.fork()", {Reason.tests_failed, Reason.timeout}, ""),
])
def test_hostile_patches_are_contained(pool, body, reasons, says):
    task = load_task(TASK)
    task = task.model_copy(update={"meta": {**task.meta, "test_timeout_sec": 5}})
    verdict = SWEBackend(pool).check(task, replace_body(body))
    assert not verdict.passed and verdict.reason in reasons, verdict.feedback
    assert says in verdict.feedback and verdict.feedback


def test_invalid_text_is_bad_format(pool):
    verdict = SWEBackend(pool).check(load_task(TASK), replace_body("return '\udc80'"))
    assert verdict.reason == Reason.bad_format
