import os
import subprocess
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def calc(*args):
    return subprocess.run(["python3", str(WORK / "calc.py"), *args], capture_output=True, text=True, timeout=10)


def test_small():
    assert calc("2", "3").stdout.strip() == "5"


def test_negative():
    assert calc("-4", "10").stdout.strip() == "6"
