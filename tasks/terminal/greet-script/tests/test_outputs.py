import os
import subprocess
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def run(*args):
    return subprocess.run([str(WORK / "greet.sh"), *args], capture_output=True, text=True, timeout=10)


def test_executable():
    assert os.access(WORK / "greet.sh", os.X_OK)


def test_with_name():
    assert run("ada").stdout.strip() == "hello, ada"


def test_default():
    assert run().stdout.strip() == "hello, world"
