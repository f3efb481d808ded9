"""The bubblewrap sandbox on its own: what a confined process can and cannot do."""
from __future__ import annotations

import logging
import os

import pytest

from services.grader.sandbox import BwrapSandbox, Limits, UnconfinedSandbox, get_sandbox, workdir
from shared.settings import Settings

LIMITS = Limits(wall_s=5, cpu_s=5, memory_mb=512, max_procs=32, file_size_mb=4, output_bytes=4096)


def sh(script: str, limits: Limits = LIMITS, **kw):
    with workdir() as work:
        return BwrapSandbox().run(["bash", "-c", script], work, limits, **kw)


def test_sandbox_blocks_network():
    result = sh("exec 3<>/dev/tcp/127.0.0.1/5432 && echo connected || echo refused")
    assert "connected" not in result.stdout


def test_sandbox_system_is_read_only_and_host_dirs_are_hidden():
    result = sh(f"touch /usr/evil; ls {os.getcwd()} /root; echo done")
    assert "Read-only file system" in result.stderr
    assert "No such file or directory" in result.stderr and "done" in result.stdout


def test_sandbox_work_dir_is_private_and_writable():
    with workdir() as work:
        result = BwrapSandbox().run(["bash", "-c", "echo hi > out.txt && pwd"], work, LIMITS)
        assert (work / "out.txt").read_text() == "hi\n"
    assert result.stdout.strip() == "/tmp/work"


def test_sandbox_process_limit_refuses_extra_processes():
    result = sh("for i in $(seq 100); do sleep 5 & done; echo started", LIMITS.scaled(wall_s=2))
    assert "fork" in result.stderr  # bash reports each refused fork


def test_sandbox_fork_bomb_is_contained_and_the_next_run_works():
    result = sh(":(){ :|:& };: ; sleep 3", LIMITS.scaled(wall_s=2))
    assert result.timed_out
    assert sh("echo next").stdout == "next\n"


def test_sandbox_timeout_kills_the_whole_process_group():
    result = sh("(sleep 60; echo escaped > /dev/null) & sleep 60", LIMITS.scaled(wall_s=1))
    assert result.timed_out and result.limit_hit == "timeout"


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_sandbox_output_flood_is_bounded_and_ends_the_run(stream):
    redirect = ">&2" if stream == "stderr" else ""
    result = sh(f"head -c 5000000 /dev/zero | tr '\\0' x {redirect}; echo end")
    assert result.output_truncated
    assert len(getattr(result, stream)) == 4096 and "end" not in result.stdout
    assert result.limit_hit == "resource"  # a flood ends the run instead of blocking on a full pipe
    assert not result.timed_out


def test_sandbox_file_size_limit_stops_disk_filling():
    result = sh("head -c 10000000 /dev/zero > big; echo rc=$?")
    assert "rc=0" not in result.stdout


def test_sandbox_private_tmp_is_capped():
    script = "for i in $(seq 80); do head -c 4000000 /dev/zero > /tmp/f$i || exit 7; done; echo filled"
    result = sh(script, LIMITS.scaled(wall_s=60))
    assert "filled" not in result.stdout and "No space left on device" in result.stderr


def test_sandbox_memory_limit_stops_allocation():
    result = sh("perl -e '$x = \"a\" x (2 * 1024**3); print \"allocated\"'")
    assert result.returncode != 0 and "allocated" not in result.stdout
    assert "Out of memory" in result.stderr


def test_sandbox_cpu_limit_stops_busy_loop():
    result = sh("while :; do :; done", LIMITS.scaled(cpu_s=1, wall_s=20))
    assert result.limit_hit == "timeout" and not result.timed_out  # SIGXCPU, before the wall limit


def test_sandbox_runs_as_throwaway_user_when_root():
    if os.geteuid() != 0:
        pytest.skip("the uid switch only happens when the grader runs as root")
    assert sh("id -u").stdout.strip() != "0"


def test_sandbox_none_must_be_chosen_explicitly_and_warns(caplog):
    assert isinstance(get_sandbox(Settings()), BwrapSandbox)
    with caplog.at_level(logging.WARNING):
        assert isinstance(get_sandbox(Settings(sandbox="none")), UnconfinedSandbox)
    assert "WITHOUT a sandbox" in caplog.text
