"""Build: certification through the real grader, frozen stratified split, reproducible files."""
from __future__ import annotations

import dataclasses
import hashlib

import pytest

from services.cli import main as cli
from shared.factory import families
from shared.factory.build import build, freeze_split
from shared.factory.core import RUNGS
from shared.tasks import check_manifest, read_tasks


def test_rebuild_with_the_same_seed_is_byte_identical(tmp_path):
    a = build("m2", "rocq", seed=5, n=36, heldout_per_family=2, out_root=tmp_path / "a", certify_golds=False)
    b = build("m2", "rocq", seed=5, n=36, heldout_per_family=2, out_root=tmp_path / "b", certify_golds=False)
    assert (a.out_dir / "tasks.jsonl").read_bytes() == (b.out_dir / "tasks.jsonl").read_bytes()
    assert a.manifest["sha256"] == b.manifest["sha256"]


def test_split_is_stratified_per_family_and_depends_only_on_the_seed(tmp_path):
    result = build("m3", "rocq", seed=2, n=48, heldout_per_family=3, out_root=None, certify_golds=False)
    for fam in families("m3"):
        members = [t for t in result.tasks if t.family == fam.name]
        assert sum(t.split == "heldout" for t in members) == 3
        assert sum(t.split == "train" for t in members) == 5
    again = freeze_split([t.model_copy(update={"split": "train"}) for t in result.tasks], "m3", 2, 3)
    assert [t.split for t in again] == [t.split for t in result.tasks]
    other = freeze_split(result.tasks, "m3", 3, 3)
    assert [t.split for t in other] != [t.split for t in result.tasks]


def test_manifest_counts_and_hash_describe_the_file(tmp_path):
    result = build("m0", "rocq", n=36, heldout_per_family=1, out_root=tmp_path, certify_golds=False)
    manifest = check_manifest(result.out_dir)
    data = (result.out_dir / "tasks.jsonl").read_bytes()
    assert manifest["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["counts"] == {"total": 36, "train": 30, "heldout": 6}
    assert manifest["families"]["concrete"] == {"tier": 1, "bridge": True, "train": 5, "heldout": 1}
    assert manifest["certified"] is False and manifest["checker_version"] is None
    (result.out_dir / "tasks.jsonl").write_bytes(data.replace(b"reflexivity.", b"lia."))
    with pytest.raises(ValueError, match="does not match its manifest"):
        check_manifest(result.out_dir)


def test_build_certifies_through_the_grader_and_drops_a_false_gold(tmp_path, monkeypatch):
    """Every gold is graded by the real coqc; a family whose gold is wrong ships nothing of it."""
    fams = RUNGS["m0"]
    sabotaged = fams[0]

    def wrong_gold(rng):
        d = sabotaged.gen(rng)
        proof = dataclasses.replace(d.proofs["rocq"], gold="intros n. induction n; simpl; auto.")
        return dataclasses.replace(d, proofs={"rocq": proof})

    monkeypatch.setitem(RUNGS, "m0", [dataclasses.replace(sabotaged, gen=wrong_gold), fams[-1]])
    with pytest.raises(ValueError, match="affine: 0 certified tasks, need more than"):
        build("m0", "rocq", n=4, heldout_per_family=1, out_root=tmp_path)
    monkeypatch.setitem(RUNGS, "m0", [fams[1], fams[-1]])
    result = build("m0", "rocq", n=4, heldout_per_family=1, out_root=tmp_path)
    assert result.rejected == []
    assert all(t.certified == "coqc 8.16.1" for t in result.tasks)
    assert result.manifest["checker_version"] == "coqc 8.16.1" and result.manifest["certified"]
    assert result.timing["verdicts_per_s"] > 0
    assert [t.id for t in read_tasks(result.out_dir / "tasks.jsonl")] == [t.id for t in result.tasks]


def test_rejected_golds_are_reported_not_shipped(tmp_path, monkeypatch):
    fams = RUNGS["m0"]
    target = fams[1]
    calls = {"n": 0}

    def sometimes_wrong(rng):
        d = target.gen(rng)
        calls["n"] += 1
        if calls["n"] == 1:
            d = dataclasses.replace(d, proofs={"rocq": dataclasses.replace(d.proofs["rocq"], gold="auto.")})
        return d

    monkeypatch.setitem(RUNGS, "m0", [dataclasses.replace(target, gen=sometimes_wrong)])
    result = build("m0", "rocq", n=3, heldout_per_family=1, out_root=None)
    assert [tid for tid, _ in result.rejected] == ["m0/repeat_sum/0000"]
    assert "m0/repeat_sum/0000" not in {t.id for t in result.tasks} and len(result.tasks) == 2
    assert result.manifest["rejected"] == ["m0/repeat_sum/0000"]


@pytest.mark.parametrize("argv, message", [
    (["--rung", "m9"], "unknown rung"),
    (["--rung", "m1", "--lang", "agda"], "unknown language"),
    (["--rung", "m1", "--n", "25"], "multiple of 6"),
    (["--rung", "m1", "--n", "12", "--heldout", "2"], "need more than"),
])
def test_bad_build_arguments_exit_2_with_one_line(tmp_path, capsys, argv, message):
    assert cli(["dataset", "build", "--no-certify", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_calibrate_on_a_missing_dataset_says_how_to_build_it(tmp_path, capsys):
    assert cli(["dataset", "calibrate", "--rung", "m2", "--data", str(tmp_path)]) == 2
    assert "verirl dataset build --rung m2" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--rung", "m1", "--per-family", "0"], "at least 1"),
    (["--rung", "m7"], "unknown rung"),
])
def test_bad_calibrate_arguments_exit_2_with_one_line(capsys, argv, message):
    assert cli(["dataset", "calibrate", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
