"""Hostile agents on terminal tasks: each is contained, the grading process carries on, and the
verdict (or the observation) says what happened."""
from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

import pytest

from services.grader.backends.terminal import load_task
from services.grader.pipeline import grade
from services.grader.terminal_session import TerminalSession, TerminalSpec
from shared.schemas import Reason

TASK = Path(__file__).resolve().parents[2] / "tasks" / "terminal" / "count-errors"


def session(pool, **changes) -> TerminalSession:
    return TerminalSession(replace(TerminalSpec.load(TASK), **changes), pool=pool)


def fenced(body: str) -> str:
    return f"```bash\n{body}\n```"


def test_fork_bomb_is_contained_and_reported(pool, terminal_task_copy):
    task = load_task(terminal_task_copy("count-errors", command_timeout_sec=3))
    verdict = grade(task, fenced(":(){ :|:& };:"), use_cache=False)
    assert not verdict.passed and verdict.reason == Reason.tests_failed
    (step,) = verdict.steps
    # the process limit stops it (fork fails), or the turn's time limit does
    assert "destructive" in step.signals and {"resource", "timeout"} & set(step.signals)
    assert "destructive" in verdict.feedback and "killed_session" not in step.signals


def test_writes_outside_the_sandbox_never_reach_the_host(pool, searchable_dir):
    target = searchable_dir / "pwned"
    s = session(pool)
    obs = s.step(f"echo x > {target}; touch /usr/pwned; echo x >> /etc/passwd; mkdir /pwned-dir; "
                 f"cp /etc/hostname {searchable_dir}/copied; echo done")
    assert not target.exists() and not (searchable_dir / "copied").exists()
    assert not Path("/usr/pwned").exists() and not Path("/pwned-dir").exists()
    assert "outside_write" in obs.step.signals
    assert "Read-only file system" in obs.stderr or "No such file" in obs.stderr


def test_tests_are_not_visible_before_the_episode_ends(pool):
    s = session(pool)
    obs = s.step(f"ls {TASK}/tests; find / -name 'test_outputs.py' 2>/dev/null | wc -l; "
                 "ls /work 2>&1 | head -1")
    assert "No such file" in obs.stderr and obs.stdout.split()[0] == "0"
    # and a planted conftest.py or tests/ in the work dir does not change how the tests run
    s.step("mkdir tests && printf 'def test_x(): pass\\n' > tests/test_outputs.py && "
           "printf 'import pytest\\n@pytest.hookimpl(tryfirst=True)\\ndef pytest_runtest_call(item):\\n"
           "    raise SystemExit(0)\\n' > conftest.py")
    verdict = s.finish()
    assert not verdict.passed and "tests: 0/2 passed" in verdict.feedback


def test_no_network_unless_the_task_allows_it(pool):
    probe = ("python3 -c \"import socket; socket.create_connection(('127.0.0.1', 6379), timeout=2); "
             "print('connected')\"")
    with socket.create_connection(("127.0.0.1", 6379), timeout=2):
        pass  # the host's Redis is up, so only the sandbox can be what blocks the probe
    blocked = session(pool).step(probe)
    assert blocked.exit_code != 0 and "connected" not in blocked.stdout
    allowed = session(pool, allow_network=True).step(probe)
    assert allowed.stdout.strip() == "connected"


def test_filling_the_disk_hits_the_work_dir_cap(pool):
    s = session(pool, disk_mb=8)
    obs = s.step("for i in 1 2 3 4; do head -c 5M /dev/zero > fill$i || break; done; df -k /tmp | tail -1")
    assert "No space left on device" in obs.stderr or "File size limit" in obs.stderr
    assert "resource" in obs.step.signals
    after = s.step("rm -f fill*; echo ok > small.txt && cat small.txt")
    assert after.stdout.strip() == "ok"


def test_an_output_flood_is_cut_and_reported(pool):
    obs = session(pool, command_timeout_s=3).step("yes; echo unreachable")
    assert obs.truncated and obs.exit_code is not None and obs.stdout.startswith("y\ny\n")
    assert len(obs.stdout) <= 4096 and "unreachable" not in obs.stdout


@pytest.mark.parametrize("command", ["kill -9 -1", "kill -9 $PPID; sleep 1"])
def test_killing_the_parent_is_contained(pool, command):
    s = session(pool)
    s.step("echo before > kept.txt")
    obs = s.step(f"echo lost > lost.txt; {command}")
    assert s.step("true").exit_code == 0  # the session (and this process) carry on
    listing = s.step("ls").stdout.split()
    assert "kept.txt" in listing
    if command == "kill -9 -1":
        assert "killed_session" in obs.step.signals and "lost.txt" not in listing
        assert "killed the session shell" in obs.text()
    else:  # the turn ends there (exit 137, SIGKILL) but what it wrote before is kept
        assert "lost.txt" in listing and obs.exit_code == 137 and "failed" in obs.step.signals
    verdict = s.finish()
    assert verdict.reason == Reason.tests_failed and len(verdict.steps) == 4
