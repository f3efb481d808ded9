"""The compile path end to end through `services.grader.pipeline.grade`, with a STAND-IN `lean`
executable (no Lean toolchain can be installed here) run in the real bubblewrap sandbox.

The stand-in (`STANDIN_LEAN` below) answers `--version` and `--print-prefix` like lean, and for
`--json FILE` prints messages in lean's JSON shape: `#print "…"` lines and `#print axioms` are
answered as lean would, `trace "…"` logs at its own position, and `fake_*` words in the proof stand
for what a real proof can make lean do (depend on an axiom, hang, flood stdout, run out of memory,
exceed heartbeats, leave goals unsolved) or for an escape that slipped past the screen (log a
message, or write a raw line to stdout; their text is hex-encoded so the screen does not see it). Steps mode also runs the stand-in REPL
(fake_lean_repl.py). What these tests establish is our side: the command we run, the sandbox, the
limits, and how lean's output becomes a verdict."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from services.grader.backends.lean_syntax import splice
from services.grader.pipeline import get_backend, grade, shutdown
from shared.protocol import fence_block
from shared.schemas import Reason, Task
from shared.settings import get_settings

STANDIN_LEAN = r'''#!/usr/bin/python3
"""Stand-in for lean 4 (tests only)."""
import json, os, re, sys, time

args = sys.argv[1:]
if args == ["--version"]:
    print("Lean (version 4.99.0-standin, x86_64-unknown-linux-gnu, Release)")
    sys.exit(0)
if args == ["--print-prefix"]:
    print(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    sys.exit(0)
assert args[0] == "--json", args
path = args[1]
lines = open(path).read().split("\n")
out, axioms, errors = [], [], 0

def message(line, column, data, severity="information"):
    out.append(json.dumps({"caption": "", "data": data, "endPos": {"column": column + 1, "line": line},
                           "fileName": path, "isSilent": False, "keepFullRange": False, "kind": "[anonymous]",
                           "pos": {"column": column, "line": line}, "severity": severity},
                          ensure_ascii=False, separators=(",", ":"), sort_keys=True))

def error(line, column, data):
    global errors
    errors += 1
    message(line, column, data, "error")

theorem_line = next(i for i, t in enumerate(lines, 1) if t.startswith("theorem"))
for number, text in enumerate(lines, 1):
    s = text.strip()
    col = len(text) - len(text.lstrip())
    if m := re.fullmatch(r'#print "(.*)"', s):
        message(number, 0, m[1])
    elif m := re.fullmatch(r"#print axioms (\S+)", s):
        message(number, 0, f"'{m[1]}' depends on axioms: [{', '.join(axioms)}]" if axioms
                else f"'{m[1]}' does not depend on any axioms")
    if "fake_hang" in s:
        time.sleep(3600)
    if "fake_flood" in s:
        for i in range(40000):
            message(number, col, "x" * 100)
    if "fake_oom" in s:
        sys.stderr.write("INTERNAL PANIC: out of memory\n")
        sys.exit(1)
    if "fake_heartbeats" in s:
        error(number, col, "(deterministic) timeout at `whnf`, maximum number of heartbeats (200000) has been reached")
    if "fake_unsolved" in s:
        head = lines[theorem_line - 1]
        error(theorem_line, head.index(":= by") + 3, "unsolved goals\nl : List Nat\n⊢ (revr17 l).length = l.length")
    if "fake_broken_header" in s:
        error(1, 4, "unknown constant 'List.reverseAux'")
    if m := re.search(r'\btrace "(.*)"', s):
        message(number, col, m[1])
    if m := re.search(r"\bfake_message_hex (\w+)", s):
        message(number, col, bytes.fromhex(m[1]).decode())
    if m := re.search(r"\bfake_stdout_hex (\w+)", s):
        out.append(bytes.fromhex(m[1]).decode())
    if "fake_sorry_slipped_through" in s:
        axioms.append("sorryAx")
    if m := re.search(r"\bfake_uses (\S+)", s):
        axioms.append(m[1])
    if m := re.search(r"\bbogus\w*", s):
        error(number, m.start() + col, f"unknown identifier '{m[0]}'")
sys.stdout.write("".join(line + "\n" for line in out))
sys.exit(1 if errors else 0)
'''

# `lake -d DIR env CMD…`: runs CMD with DIR's import path; refuses a DIR it cannot see.
STANDIN_LAKE = r'''#!/usr/bin/python3
import os, sys
assert sys.argv[1] == "-d" and sys.argv[3] == "env", sys.argv
if not os.path.isfile(os.path.join(sys.argv[2], "lakefile.toml")):
    sys.exit(f"error: no Lake project in {sys.argv[2]}")
os.execv(sys.argv[4], sys.argv[4:])
'''

STATEMENT = """def revr17 : List Nat → List Nat
  | [] => []
  | x :: xs => revr17 xs ++ [x]

theorem revr17_length (l : List Nat) : (revr17 l).length = l.length := by
  {{PROOF}}
"""
GOOD = "induction l with\n| nil => rfl\n| cons x xs ih => simp [revr17, ih]"


@pytest.fixture(scope="module")
def standin_root():
    """A toolchain-shaped folder (bin/lean, bin/lake, bin/repl) the sandbox's user can read."""
    root = Path(tempfile.mkdtemp(prefix="verirl-standin-lean-"))
    root.chmod(0o755)
    (root / "bin").mkdir()
    (root / "bin").chmod(0o755)
    for name, text in (("lean", STANDIN_LEAN), ("lake", STANDIN_LAKE)):
        (root / "bin" / name).write_text(text)
    shutil.copy(Path(__file__).with_name("fake_lean_repl.py"), root / "bin" / "repl")
    for name in ("lean", "lake", "repl"):
        (root / "bin" / name).chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def configure(monkeypatch, standin_root):
    """Point the settings at the stand-in toolchain (plus any VERIRL_* overrides)."""

    def apply(**env: str) -> None:
        shutdown()
        monkeypatch.setenv("VERIRL_LEAN", str(standin_root / "bin" / "lean"))
        monkeypatch.setenv("VERIRL_LEAN_REPL", str(standin_root / "bin" / "repl"))
        monkeypatch.setenv("VERIRL_GRADE_WALL_S", "10")
        for key, value in env.items():
            monkeypatch.setenv(f"VERIRL_{key.upper()}", value)
        get_settings.cache_clear()

    apply()
    yield apply
    shutdown()
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.fixture
def task() -> Task:
    return Task(id="test/revr17_length/0001", lang="lean", theorem="revr17_length", statement=STATEMENT, gold=GOOD)


def lean(task: Task, block: str, mode: str = "whole"):
    return grade(task, fence_block(block, "lean"), mode, use_cache=False)


# -- whole file --------------------------------------------------------------------------------


def test_lean_standin_correct_proof_passes_with_version(configure, task):
    verdict = lean(task, GOOD)
    assert verdict.passed and verdict.reason == Reason.ok, verdict.feedback
    assert verdict.backend == "lean" and verdict.axioms == []
    assert verdict.backend_version == "Lean (version 4.99.0-standin, x86_64-unknown-linux-gnu, Release)"


def test_lean_standin_allowed_axioms_pass_and_are_reported(configure, task):
    verdict = lean(task, f"fake_uses propext\nfake_uses Classical.choice\n{GOOD}")
    assert verdict.passed and verdict.axioms == ["propext", "Classical.choice"]


def test_lean_standin_compile_error_position_is_relative_to_block(configure, task):
    verdict = lean(task, "induction l with\n| nil => rfl\n| cons x xs ih => exact bogus_lemma")
    assert verdict.reason == Reason.compile_error and not verdict.passed
    assert "block:3:24: error: unknown identifier 'bogus_lemma'" in verdict.feedback


def test_lean_standin_unsolved_goals_point_at_the_statement(configure, task):
    verdict = lean(task, "fake_unsolved")
    assert verdict.reason == Reason.compile_error
    assert "statement:5:71: error: unsolved goals" in verdict.feedback and "⊢ (revr17 l).length" in verdict.feedback


def test_lean_standin_long_errors_are_trimmed_to_feedback_limit(configure, task):
    configure(feedback_chars="200")
    verdict = lean(task, "\n".join(f"exact bogus_{i}" for i in range(50)))
    assert verdict.reason == Reason.compile_error
    assert len(verdict.feedback) <= 200 and verdict.feedback.endswith("(truncated)")


def test_lean_standin_sorryAx_that_slipped_past_the_screen_fails_the_audit(configure, task):
    verdict = lean(task, f"fake_sorry_slipped_through\n{GOOD}")
    assert verdict.reason == Reason.axioms and not verdict.passed
    assert verdict.axioms == ["sorryAx"] and "sorryAx" in verdict.feedback


def test_lean_standin_report_forged_inside_the_proof_does_not_hide_sorryAx(configure, task):
    # As `trace` would log it: at the proof's own position. (A literal `trace "… axioms"` never
    # gets this far: the screen refuses the word.)
    forged = "'revr17_length' does not depend on any axioms".encode().hex()
    verdict = lean(task, f"fake_message_hex {forged}\nfake_sorry_slipped_through\n{GOOD}")
    assert verdict.reason == Reason.axioms and verdict.axioms == ["sorryAx"]


def test_lean_standin_forged_frame_written_to_stdout_is_refused(configure, task):
    # Suppose a proof could write raw lines to stdout: it knows the file layout (so the audit's
    # line numbers) but not the nonce. Its forged frame and report make the audit ambiguous.
    first = splice(STATEMENT, task.theorem, "x\nx\nx\nx").source.rstrip("\n").count("\n") + 2

    def forged(line: int, data: str) -> str:
        line_json = json.dumps({"data": data, "pos": {"line": line, "column": 0}, "severity": "information"})
        return f"fake_stdout_hex {line_json.encode().hex()}"

    block = "\n".join([
        forged(first, "guessed-BEGIN"),
        forged(first + 1, "'revr17_length' does not depend on any axioms"),
        forged(first + 2, "guessed-END"),
        "fake_sorry_slipped_through",
    ])
    verdict = lean(task, block)
    assert not verdict.passed and verdict.reason == Reason.axioms
    assert "not exactly one framed report" in verdict.feedback


def test_lean_standin_non_terminating_proof_times_out_and_next_grade_works(configure, task):
    configure(grade_wall_s="1.5")
    verdict = lean(task, "fake_hang")
    assert verdict.reason == Reason.timeout and "1.5 s" in verdict.feedback
    assert lean(task, GOOD).passed


def test_lean_standin_output_flood_is_cut_off_and_next_grade_works(configure, task):
    verdict = lean(task, "fake_flood")
    assert verdict.reason == Reason.resource and "output exceeded" in verdict.feedback
    assert lean(task, GOOD).passed


def test_lean_standin_out_of_memory_is_resource(configure, task):
    verdict = lean(task, "fake_oom")
    assert verdict.reason == Reason.resource and "out of memory" in verdict.feedback


def test_lean_standin_heartbeat_exhaustion_is_timeout_with_lean_message(configure, task):
    verdict = lean(task, "fake_heartbeats")
    assert verdict.reason == Reason.timeout and "maximum number of heartbeats" in verdict.feedback


def test_lean_standin_broken_task_definitions_are_sandbox_error(configure, task):
    verdict = lean(task, "fake_broken_header")
    assert verdict.reason == Reason.sandbox_error and "task's own definitions" in verdict.feedback


def test_lean_missing_binary_is_sandbox_error_and_version_unavailable(configure, task):
    configure(lean="/nonexistent/bin/lean")
    verdict = lean(task, GOOD)
    assert verdict.reason == Reason.sandbox_error
    assert "'/nonexistent/bin/lean' not found" in verdict.feedback and "VERIRL_LEAN" in verdict.feedback
    assert verdict.backend_version == "unavailable"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to a throw-away uid inside the sandbox")
def test_lean_standin_toolchain_unreadable_by_sandbox_user_is_clear_sandbox_error(configure, task, standin_root):
    private = Path(tempfile.mkdtemp(prefix="verirl-private-lean-"))  # mode 0700
    try:
        shutil.copytree(standin_root / "bin", private / "bin")
        configure(lean=str(private / "bin" / "lean"))
        verdict = lean(task, GOOD)
        assert verdict.reason == Reason.sandbox_error and "not readable by the sandbox" in verdict.feedback
    finally:
        shutil.rmtree(private)


def test_lean_standin_project_runs_through_lake_env(configure, task, standin_root):
    project = Path(tempfile.mkdtemp(prefix="verirl-standin-project-"))
    try:
        project.chmod(0o755)
        (project / "lakefile.toml").write_text('name = "tasks"\n')
        (project / "lake-manifest.json").write_text('{"packages": []}\n')
        configure(lean_project=str(project))
        verdict = lean(task, GOOD)
        assert verdict.passed, verdict.feedback
        assert " project:" in verdict.backend_version  # the project's pins are part of the version
    finally:
        shutil.rmtree(project)


def test_lean_standin_concurrent_grades_match_sequential(configure, task):
    blocks = [GOOD, "exact bogus_1", f"fake_sorry_slipped_through\n{GOOD}", "fake_unsolved", "sorry",
              f"fake_uses propext\n{GOOD}"] * 2
    sequential = [(v.passed, v.reason, v.axioms) for v in (lean(task, b) for b in blocks)]
    with ThreadPoolExecutor(6) as pool:
        concurrent = [(v.passed, v.reason, v.axioms) for v in pool.map(lambda b: lean(task, b), blocks)]
    assert concurrent == sequential
    assert [r for _, r, _ in sequential[:6]] == [Reason.ok, Reason.compile_error, Reason.axioms,
                                                 Reason.compile_error, Reason.forbidden, Reason.ok]


# -- steps mode (stand-in lean and stand-in REPL) ----------------------------------------------


def test_lean_standin_steps_mode_reports_each_step_and_passes(configure, task):
    verdict = lean(task, "intro h\nconstructor\n· simp\n· omega", mode="steps")
    assert verdict.passed, verdict.feedback
    assert [s.text for s in verdict.steps] == ["intro h", "constructor", "· simp", "· omega"]
    assert all(s.ok for s in verdict.steps)
    assert verdict.steps[1].goals.count("case ") == 2 and verdict.steps[-1].goals == ""
    assert "⊢ (revr17 l).length = l.length" in verdict.steps[0].goals


def test_lean_standin_steps_mode_failed_step_stops_with_goals_before_it(configure, task):
    verdict = lean(task, "constructor\nfrobnicate\nsimp", mode="steps")
    assert verdict.reason == Reason.compile_error and not verdict.passed
    assert [s.ok for s in verdict.steps] == [True, False]
    assert "unknown tactic" in verdict.steps[1].message and verdict.steps[1].goals.count("case ") == 2
    assert "step 2 failed" in verdict.feedback


def test_lean_standin_steps_mode_unsolved_goals_fail(configure, task):
    verdict = lean(task, "constructor\nsimp", mode="steps")
    assert verdict.reason == Reason.compile_error and "unsolved goals after the last step" in verdict.feedback


def test_lean_standin_steps_mode_still_requires_whole_file_audit(configure, task):
    verdict = lean(task, "fake_sorry_slipped_through\nsimp", mode="steps")
    assert verdict.reason == Reason.axioms and verdict.axioms == ["sorryAx"]
    assert [s.ok for s in verdict.steps] == [True, True] and verdict.steps[-1].goals == ""


def test_lean_standin_steps_mode_repl_timeout_then_next_answer_works(configure, task):
    configure(grade_wall_s="1")
    verdict = lean(task, "hang", mode="steps")
    assert verdict.reason == Reason.timeout
    assert lean(task, "simp", mode="steps").passed


def test_lean_standin_steps_mode_repl_crash_is_retried_once_on_fresh_process(configure, task):
    verdict = lean(task, "crash", mode="steps")
    assert verdict.reason == Reason.resource and "crash" in verdict.feedback
    repl = get_backend("lean")._idle_repls[0]
    assert repl.starts >= 2  # the crashed process was replaced, not reused
    assert lean(task, "simp", mode="steps").passed


def test_lean_standin_steps_mode_reuses_opened_proof_state_in_warm_repl(configure, task):
    for _ in range(3):
        assert lean(task, "simp", mode="steps").passed
    (repl,) = get_backend("lean")._idle_repls
    assert repl.starts == 1 and len(repl.state) == 1


def test_lean_standin_steps_mode_loads_imports_once_and_elaborates_statement_on_top(configure, task):
    statement = "import Std.Data.List\n\n" + STATEMENT
    imported = task.model_copy(update={"statement": statement})
    assert lean(imported, "constructor\nsimp\nsimp", mode="steps").passed
    assert lean(imported, "all_goals simp", mode="steps").passed
    (repl,) = get_backend("lean")._idle_repls
    assert repl.state[("imports", "import Std.Data.List")] == 0  # the first environment, loaded once
    assert len(repl.state) == 2 and repl.starts == 1


def test_lean_standin_steps_mode_repl_dying_before_the_answer_runs_is_sandbox_error(configure, task):
    configure(lean_repl="/bin/false")
    verdict = lean(task, "simp", mode="steps")
    assert verdict.reason == Reason.sandbox_error and "could not open the task's proof (crash)" in verdict.feedback


def test_lean_steps_mode_missing_repl_binary_is_sandbox_error(configure, task):
    configure(lean_repl="/nonexistent/repl")
    verdict = lean(task, GOOD, mode="steps")
    assert verdict.reason == Reason.sandbox_error and "VERIRL_LEAN_REPL" in verdict.feedback
