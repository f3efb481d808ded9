import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_config():
    assert (WORK / "config.ini").read_text() == (
        "[server]\nhost = 0.0.0.0\nport = 8080\n\n[database]\nhost = db.local\nport = 5432\n")
