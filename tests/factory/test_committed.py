"""The committed datasets: complete, certified, split as promised, and exactly what the
generators produce (so the files and the code can never drift apart)."""
from __future__ import annotations

from pathlib import Path

import pytest

from shared.factory import RUNG_NAMES, families
from shared.factory.build import build, tasks_jsonl
from shared.tasks import check_manifest, load_tasks

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_committed_rung_is_complete_certified_and_split_5_per_family(rung):
    manifest = check_manifest(DATA / rung / "rocq")
    tasks = load_tasks(DATA / rung / "rocq" / "tasks.jsonl")
    assert len(tasks) == 240 and manifest["counts"] == {"total": 240, "train": 210, "heldout": 30}
    assert all(t.certified == "coqc 8.16.1" and t.rung == rung and t.id.startswith(f"{rung}/") for t in tasks)
    for fam in families(rung):
        members = [t for t in tasks if t.family == fam.name]
        assert len(members) == 40 and sum(t.split == "heldout" for t in members) == 5
    assert sum(t.tier == 1 for t in tasks) == 40


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_committed_rung_is_exactly_what_the_generators_build(rung):
    manifest = check_manifest(DATA / rung / "rocq")
    fresh = build(rung, "rocq", seed=manifest["seed"], n=240, out_root=None, certify_golds=False)
    fresh_certified = [t.model_copy(update={"certified": manifest["checker_version"]}) for t in fresh.tasks]
    assert tasks_jsonl(fresh_certified) == (DATA / rung / "rocq" / "tasks.jsonl").read_bytes()


def test_ids_and_statements_are_disjoint_across_rungs():
    ids, statements = set(), set()
    for rung in RUNG_NAMES:
        tasks = load_tasks(DATA / rung / "rocq" / "tasks.jsonl")
        assert not ids & {t.id for t in tasks}
        assert not statements & {t.statement for t in tasks}
        ids |= {t.id for t in tasks}
        statements |= {t.statement for t in tasks}
    assert len(ids) == len(statements) == 240 * len(RUNG_NAMES)
