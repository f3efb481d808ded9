import os
import subprocess
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def git(*args):
    return subprocess.run(["git", "-C", str(WORK / "project"), *args], capture_output=True, text=True, timeout=10)


def test_one_commit_with_message():
    assert git("log", "--format=%s").stdout.splitlines() == ["initial import"]


def test_files_committed_and_clean():
    assert sorted(git("ls-files").stdout.split()) == ["README.md", "src/main.py"]
    assert git("status", "--porcelain").stdout == ""
