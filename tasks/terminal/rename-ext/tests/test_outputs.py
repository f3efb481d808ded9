import os
from pathlib import Path

WORK = Path(os.environ["VERIRL_WORK"])


def test_renamed():
    docs = WORK / "docs"
    assert sorted(p.name for p in docs.glob("*.md")) == ["a.md", "b.md", "c.notes.md"]
    assert (docs / "c.notes.md").read_text() == "gamma notes\n"


def test_no_txt_left_at_top():
    assert not list((WORK / "docs").glob("*.txt"))


def test_subdirectory_untouched():
    assert (WORK / "docs" / "keep" / "inner.txt").read_text() == "nested\n"
