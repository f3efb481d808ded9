import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_unique_in_order():
    assert (WORK / "unique.txt").read_text().split() == ["pear", "apple", "fig", "kiwi"]
