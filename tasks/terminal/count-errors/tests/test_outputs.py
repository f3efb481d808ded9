import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_errors_file_exists():
    assert (WORK / "errors.txt").is_file()


def test_errors_count():
    assert (WORK / "errors.txt").read_text().strip() == "3"
