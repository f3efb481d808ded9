import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_largest():
    assert (WORK / "largest.txt").read_text().strip() == "a/b/deep.bin"
