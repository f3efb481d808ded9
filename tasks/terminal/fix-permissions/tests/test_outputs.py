import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


import stat


def mode(path):
    return stat.S_IMODE((WORK / path).stat().st_mode)


def test_scripts_executable():
    assert all(mode(f"bin/{n}.sh") & stat.S_IXUSR for n in "ab")


def test_key_private():
    assert mode("secrets/key.txt") == 0o600


def test_nothing_world_writable():
    assert not any(stat.S_IMODE(p.stat().st_mode) & stat.S_IWOTH for p in WORK.rglob("*"))
