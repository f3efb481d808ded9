import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_top3():
    assert (WORK / "top3.txt").read_text().splitlines() == ["6 the", "4 dog", "3 cat"]
