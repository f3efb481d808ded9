import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_totals():
    assert (WORK / "totals.csv").read_text().split() == ["region,total", "east,8", "north,13", "south,25"]
