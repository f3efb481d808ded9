"""Loading datasets: refusing uncertified tasks, filters, curriculum phases, bad files."""
from __future__ import annotations

import pytest

from shared.factory.build import build
from shared.tasks import UncertifiedTasks, load_phases, load_tasks


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Small uncertified builds of two rungs, and a copy of m0 marked certified."""
    root = tmp_path_factory.mktemp("data")
    for rung in ("m0", "m1"):
        build(rung, "rocq", n=24, heldout_per_family=1, out_root=root, certify_golds=False)
    certified = root / "certified"
    certified.mkdir()
    for rung in ("m0", "m1"):
        lines = (root / rung / "rocq" / "tasks.jsonl").read_text().replace('"certified":null', '"certified":"coqc 8.16.1"')
        (certified / f"{rung}.jsonl").write_text(lines)
    return root


def test_loader_refuses_uncertified_tasks(data):
    with pytest.raises(UncertifiedTasks, match="no certified gold.*allow_uncertified"):
        load_tasks(data / "m0" / "rocq" / "tasks.jsonl")


def test_loader_takes_uncertified_tasks_only_when_asked(data):
    tasks = load_tasks(data / "m0" / "rocq" / "tasks.jsonl", allow_uncertified=True)
    assert len(tasks) == 24 and all(t.certified is None for t in tasks)


def test_filters_by_rung_family_and_split(data):
    path = data / "certified" / "m1.jsonl"
    assert len(load_tasks(path, split="heldout")) == 6
    revacc = load_tasks(path, family="revacc")
    assert len(revacc) == 4 and {t.family for t in revacc} == {"revacc"}
    assert len(load_tasks(path, family=["revacc", "concrete"], split="train")) == 6
    assert load_tasks(path, rung="m0") == []


def test_rung_names_resolve_to_the_built_file(data):
    tasks = load_tasks("m1", data_dir=data, allow_uncertified=True, split="train")
    assert len(tasks) == 18 and all(t.rung == "m1" for t in tasks)


def test_phases_from_several_files_keep_order_and_join_with_plus(data):
    m0, m1 = str(data / "certified" / "m0.jsonl"), str(data / "certified" / "m1.jsonl")
    phases = load_phases(f"{m0},{m0}+{m1},{m1}")
    assert [p.index for p in phases] == [0, 1, 2]
    assert [len(p.tasks) for p in phases] == [18, 36, 18]
    assert {t.rung for t in phases[1].tasks} == {"m0", "m1"}
    assert all(t.split == "train" for p in phases for t in p.tasks)
    assert phases[1].sources == (m0, m1)
    heldout = load_phases([m1], split="heldout")
    assert len(heldout) == 1 and len(heldout[0].tasks) == 6


def test_a_phase_refuses_uncertified_files_too(data):
    with pytest.raises(UncertifiedTasks):
        load_phases(f"{data / 'certified' / 'm0.jsonl'},{data / 'm1' / 'rocq' / 'tasks.jsonl'}")


def test_empty_phase_and_duplicate_ids_are_errors(data):
    m0 = str(data / "certified" / "m0.jsonl")
    with pytest.raises(ValueError, match="empty phase"):
        load_phases(f"{m0},,{m0}")
    with pytest.raises(ValueError, match="appears twice"):
        load_tasks([m0, m0])


def test_a_bad_line_names_file_and_line(tmp_path, data):
    path = tmp_path / "bad.jsonl"
    good = (data / "certified" / "m0.jsonl").read_text().splitlines()[0]
    path.write_text(good + "\n" + '{"id": 3}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a task"):
        load_tasks(path)
    with pytest.raises(FileNotFoundError):
        load_tasks(tmp_path / "missing.jsonl")
