"""The multi-turn terminal session: what persists between turns, how an episode ends, and the
per-step signals that process rewards use."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from services.grader.backends.terminal import load_task, open_session
from services.grader.terminal_session import OBSERVATION_BYTES, TerminalSession, TerminalSpec
from shared.schemas import Reason

TASK = Path(__file__).resolve().parents[2] / "tasks" / "terminal" / "count-errors"


@pytest.fixture
def session(pool):
    return TerminalSession(TerminalSpec.load(TASK), pool=pool)


def test_files_cwd_and_exports_persist_between_turns(session):
    session.step("mkdir sub && cd sub && echo kept > note.txt && export COLOR=teal")
    obs = session.step('pwd; cat note.txt; echo "$COLOR"; ls ..')
    assert obs.exit_code == 0
    assert obs.stdout.split() == ["/tmp/work/sub", "kept", "teal", "logs", "sub"]


def test_background_processes_do_not_survive_the_turn(session):
    session.step("(sleep 30; echo late > late.txt) & echo started")
    obs = session.step("sleep 1; ls; pgrep sleep || echo none")
    assert "late.txt" not in obs.stdout and obs.stdout.split()[-1] == "none"


def test_observation_has_exit_code_and_bounded_streams(session):
    obs = session.step(f"head -c {OBSERVATION_BYTES * 3} /dev/zero | tr '\\0' x; echo oops >&2; exit 7")
    assert obs.exit_code == 7 and obs.truncated
    assert len(obs.stdout) == OBSERVATION_BYTES and obs.stderr == "oops\n"
    assert "exit code: 7" in obs.text() and "truncated" in obs.text()


def test_submit_ends_the_episode_and_tests_decide(session):
    session.step("awk '$2 == \"ERROR\"' logs/*.log | wc -l > errors.txt")
    obs = session.act("Done.\n```bash\nsubmit\n```")
    assert obs.finished and session.done
    with pytest.raises(RuntimeError):
        session.step("ls")
    verdict = session.finish()
    assert verdict.passed and [s.ok for s in verdict.steps] == [True, True]
    assert session.finish() is verdict  # idempotent: the tests run once


def test_max_turns_ends_the_episode(pool):
    session = TerminalSession(replace(TerminalSpec.load(TASK), max_turns=2), pool=pool)
    session.step("true")
    session.act("no block here")
    assert session.done and session.steps[1].message.startswith("no ```bash block")
    verdict = session.finish()
    assert not verdict.passed and verdict.reason == Reason.tests_failed and len(verdict.steps) == 2


def test_signals_repeat_error_destructive_outside_write(session):
    session.step("cat missing.txt")
    again = session.step("cat   missing.txt")
    assert again.step.signals == ["failed", "repeat_error"]
    wipe = session.step("rm -rf logs")
    assert wipe.step.signals == ["destructive"] and wipe.exit_code == 0
    outside = session.step("echo x > /etc/verirl-test")
    assert "outside_write" in outside.step.signals and "failed" in outside.step.signals


def test_command_timeout_is_a_signal_and_keeps_earlier_files(pool):
    session = TerminalSession(replace(TerminalSpec.load(TASK), command_timeout_s=1.0), pool=pool)
    session.step("echo before > kept.txt")
    obs = session.step("echo during > during.txt; sleep 20")
    assert obs.timed_out and "timeout" in obs.step.signals
    assert session.step("cat kept.txt during.txt").stdout.split() == ["before", "during"]


def test_open_session_from_task(pool):
    session = open_session(load_task(TASK))
    assert session.step("ls logs").stdout.split() == ["app.log", "worker.log"]


@pytest.mark.parametrize("command", ["echo a\0b", "echo \udc80"])
def test_unrunnable_text_is_an_observation_not_an_error(session, command):
    obs = session.step(command)
    assert obs.exit_code is None and "invalid text" in obs.text() and not obs.step.ok
