"""The REPL driver (services/grader/lean_repl.py) against a stand-in process that speaks the
leanprover-community REPL protocol (tests/grader/fake_lean_repl.py): no Lean toolchain can be
installed here, so these tests cover the driver's protocol handling and its defences — real
deadlines, stderr drained, rebuilt processes — not Lean itself. The stand-in runs in the real
bubblewrap sandbox."""
from __future__ import annotations

from pathlib import Path

import pytest

from services.grader.lean_repl import LeanRepl, ReplError
from services.grader.sandbox import Limits

STANDIN = Path(__file__).with_name("fake_lean_repl.py")
STATEMENT = "theorem t (n : Nat) : n + 0 = n ∧ 0 + n = n := by\n  sorry"
CALL_S = 10.0  # a generous per-call deadline for calls that should answer promptly


def standin_repl(max_uses: int = 50) -> LeanRepl:
    return LeanRepl(["/usr/bin/python3", str(STANDIN)], limits=Limits(), max_uses=max_uses,
                    ro_binds=(str(STANDIN.parent),))


@pytest.fixture
def repl():
    driver = standin_repl()
    yield driver
    driver.close()


def open_proof(repl: LeanRepl) -> int:
    reply = repl.request({"cmd": STATEMENT}, CALL_S)
    (sorry,) = reply["sorries"]
    assert sorry["pos"]["line"] == 2
    return sorry["proofState"]


def test_lean_repl_driver_against_standin_runs_steps_to_completion(repl):
    state = open_proof(repl)
    split = repl.request({"tactic": "constructor", "proofState": state}, CALL_S)
    assert len(split["goals"]) == 2 and split["proofStatus"].startswith("Incomplete")
    first = repl.request({"tactic": "simp", "proofState": split["proofState"]}, CALL_S)
    done = repl.request({"tactic": "omega", "proofState": first["proofState"]}, CALL_S)
    assert done["goals"] == [] and done["proofStatus"] == "Completed"


def test_lean_repl_driver_against_standin_reports_tactic_error_and_keeps_process(repl):
    state = open_proof(repl)
    pid = repl.pid
    reply = repl.request({"tactic": "frobnicate", "proofState": state}, CALL_S)
    assert reply["message"].startswith("Lean error:") and "unknown tactic" in reply["message"]
    assert repl.pid == pid  # a tactic error is an answer, not a broken process


def test_lean_repl_driver_against_standin_reply_that_never_comes_times_out_and_rebuilds(repl):
    state = open_proof(repl)
    pid = repl.pid
    with pytest.raises(ReplError) as exc:
        repl.request({"tactic": "hang", "proofState": state}, 0.5)
    assert exc.value.kind == "timeout"
    assert repl.pid is None and repl.state == {}  # killed, and its proof-state ids forgotten
    state = open_proof(repl)
    assert repl.pid != pid and repl.starts == 2
    assert repl.request({"tactic": "all_goals simp", "proofState": state}, CALL_S)["goals"] == []


def test_lean_repl_driver_against_standin_crash_mid_reply_rebuilds(repl):
    state = open_proof(repl)
    with pytest.raises(ReplError) as exc:
        repl.request({"tactic": "crash", "proofState": state}, CALL_S)
    assert exc.value.kind == "crash" and "exit" in str(exc.value)
    state = open_proof(repl)
    assert repl.starts == 2
    assert repl.request({"tactic": "constructor", "proofState": state}, CALL_S)["proofState"] > state


def test_lean_repl_driver_against_standin_one_mib_of_stderr_does_not_deadlock(repl):
    state = open_proof(repl)
    reply = repl.request({"tactic": "stderr_spam", "proofState": state}, CALL_S)
    assert "goals" in reply
    tail = repl.stderr_tail()
    assert 0 < len(tail) <= 64 * 1024 and tail.rstrip().endswith("x")
    assert repl.request({"tactic": "all_goals simp", "proofState": reply["proofState"]}, CALL_S)["goals"] == []


def test_lean_repl_driver_against_standin_reply_split_across_many_small_writes(repl):
    state = open_proof(repl)
    reply = repl.request({"tactic": "slow_split", "proofState": state}, CALL_S)
    assert reply["proofStatus"] == "Incomplete: open goals remain" and len(reply["goals"]) == 1


def test_lean_repl_driver_against_standin_garbage_output_is_refused_and_rebuilt(repl):
    state = open_proof(repl)
    with pytest.raises(ReplError) as exc:
        repl.request({"tactic": "garbage", "proofState": state}, CALL_S)
    assert exc.value.kind == "garbled"
    assert repl.pid is None
    open_proof(repl)
    assert repl.starts == 2


def test_lean_repl_driver_against_standin_extra_reply_puts_process_out_of_step_and_rebuilds(repl):
    state = open_proof(repl)
    # The stand-in answers twice; whichever way the second copy arrives (with the first, or later),
    # the driver must not hand it out as the answer to the next request.
    try:
        repl.request({"tactic": "double", "proofState": state}, CALL_S)
    except ReplError as exc:
        assert exc.kind == "garbled"
    reply = repl.request({"cmd": STATEMENT}, CALL_S)
    assert "sorries" in reply and repl.starts == 2


def test_lean_repl_driver_against_standin_recycles_after_max_uses():
    repl = standin_repl(max_uses=2)
    try:
        open_proof(repl)
        first = repl.pid
        open_proof(repl)
        assert repl.pid == first
        open_proof(repl)
        assert repl.pid != first and repl.starts == 2
    finally:
        repl.close()


def test_lean_repl_driver_missing_binary_reports_crash_with_stderr():
    repl = LeanRepl(["/nonexistent/repl"], limits=Limits())
    try:
        with pytest.raises(ReplError) as exc:
            repl.request({"cmd": "example : True := trivial"}, CALL_S)
        assert exc.value.kind == "crash"
    finally:
        repl.close()
