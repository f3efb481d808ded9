import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_active_sorted():
    assert (WORK / "active.txt").read_text().split() == ["alice", "carol", "dave"]
