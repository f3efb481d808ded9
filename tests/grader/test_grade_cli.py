"""`verirl grade` as a user runs it: JSON verdict on stdout, exit 0 pass / 1 fail / 2 bad usage."""
from __future__ import annotations

import json
import subprocess
import sys

from shared.protocol import fence_block


def verirl(*args: str, stdin: str = ""):
    return subprocess.run([sys.executable, "-m", "services.cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_grade_cli_pass_prints_verdict_and_exits_0(rocq_task, tmp_path):
    (tmp_path / "task.json").write_text(rocq_task.model_dump_json())
    (tmp_path / "answer.txt").write_text(fence_block(rocq_task.gold, "coq"))
    result = verirl("grade", "--task", str(tmp_path / "task.json"), "--answer", str(tmp_path / "answer.txt"))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["passed"] is True


def test_grade_cli_fail_exits_1_with_feedback(rocq_task, tmp_path):
    (tmp_path / "task.json").write_text(rocq_task.model_dump_json())
    result = verirl("grade", "--task", str(tmp_path / "task.json"), "--answer", "-",
                    stdin=fence_block("intros.", "coq"))
    assert result.returncode == 1
    assert "incomplete proof" in json.loads(result.stdout)["feedback"]


def test_grade_cli_defaults_to_the_gold_of_a_jsonl_task(rocq_task, tmp_path):
    (tmp_path / "tasks.jsonl").write_text(rocq_task.model_dump_json() + "\n")
    result = verirl("grade", "--task", str(tmp_path / "tasks.jsonl"), "--id", rocq_task.id)
    assert result.returncode == 0, result.stderr


def test_grade_cli_bad_usage_exits_2_with_one_line(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    for args in (["grade", "--task", str(tmp_path / "missing.json")],
                 ["grade", "--task", str(tmp_path / "bad.json")]):
        result = verirl(*args)
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("verirl grade:")
