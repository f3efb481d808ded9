import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


import hashlib


def test_extracted():
    assert (WORK / "out" / "data" / "secret.txt").read_text() == "the eagle lands at noon\n"


def test_hash():
    want = hashlib.sha256(b"the eagle lands at noon\n").hexdigest()
    assert (WORK / "hash.txt").read_text().strip() == want
