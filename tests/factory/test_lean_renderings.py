"""Lean 4 renderings of every rung: in step with the Rocq rendering of the same task, golds the Lean
grader's screen accepts and splices, and the committed uncertified `data/<rung>/lean/` datasets.

No Lean toolchain can be installed here, so nothing in this file runs `lean`: the golds are
certified by `verirl dataset build --lang lean` on a host that has one."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from services.cli import main as cli
from services.grader.backends.lean_syntax import screen, splice, split_steps
from shared.factory import RUNG_NAMES, candidates, families, render_lean, render_rocq
from shared.factory.build import build, tasks_jsonl
from shared.factory.core import RUNGS
from shared.tasks import UncertifiedTasks, check_manifest, load_tasks, read_tasks

DATA = Path(__file__).resolve().parents[2] / "data"
FRESH_WORD = re.compile(r"\b[a-z]{5}\d{2}\b")
ROCQ_DEFINED = re.compile(r"^(?:Inductive|Fixpoint)\s+(\w+)", re.MULTILINE)
LEAN_DEFINED = re.compile(r"^(?:inductive|def)\s+(\w+)", re.MULTILINE)
LEAN_CONSTRUCTORS = re.compile(r"^  \| (\w+)", re.MULTILINE)


@pytest.fixture(scope="module")
def renderings() -> dict[str, tuple[list, list]]:
    """Per rung: (Rocq tasks, Lean tasks), three of every family."""
    return {rung: (candidates(rung, "rocq", 0, 3), candidates(rung, "lean", 0, 3)) for rung in RUNG_NAMES}


def test_the_lean_definition_library_mirrors_the_rocq_one():
    assert render_lean.DEFS.keys() == render_rocq.DEFS.keys()


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_lean_and_rocq_renderings_of_a_task_share_ids_names_and_definitions(renderings, rung):
    rocq, lean = renderings[rung]
    assert len(lean) == len(rocq) == 3 * len(families(rung))
    for r, ln in zip(rocq, lean):
        assert (r.id, r.theorem, r.family, r.tier, r.meta["induct"]) == (
            ln.id, ln.theorem, ln.family, ln.tier, ln.meta["induct"])
        assert set(ROCQ_DEFINED.findall(r.statement)) == set(LEAN_DEFINED.findall(ln.statement)), r.id
        # A family with a stripped gold (calibration) has one in both languages.
        assert (r.meta["stripped"] is None) == (ln.meta["stripped"] is None), r.id


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_lean_statements_have_one_hole_under_the_theorem_and_a_sorry_prompt(renderings, rung):
    for task in renderings[rung][1]:
        assert task.lang == "lean" and task.kind == "proof"
        assert task.statement.count("{{PROOF}}") == 1 and task.statement.endswith(":= by\n  {{PROOF}}\n")
        assert f"\ntheorem {task.theorem} " in task.statement
        assert "{{PROOF}}" not in task.prompt and "\n  sorry\n" in task.prompt and "```lean" in task.prompt
        # Every template placeholder was filled: the only braces left are the hole's.
        assert not re.search(r"[{}]", task.statement.replace("{{PROOF}}", "")), task.id
        assert "Mathlib" not in task.statement and "import" not in task.statement


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_lean_golds_and_stripped_golds_pass_the_lean_graders_screen_and_splice(renderings, rung):
    for task in renderings[rung][1]:
        for block in filter(None, [task.gold, task.meta["stripped"]]):
            assert "```" not in block and "{" not in block and "}" not in block, task.id
            assert screen(block) is None, (task.id, screen(block))
            spliced = splice(task.statement, task.theorem, block)
            body = spliced.source.split("\n")[spliced.block_start - 1:][:spliced.block_lines]
            assert body == ["  " + line if line else "" for line in block.split("\n")], task.id
            assert spliced.source.endswith("\n") and "{{PROOF}}" not in spliced.source
            # Top-level tactics sit at column 0; nested blocks only continue a step.
            steps = split_steps(block)
            assert steps and all(step and not step[0].isspace() for step in steps), task.id


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_lean_golds_cite_only_names_the_task_defines(renderings, rung):
    for task in renderings[rung][1]:
        defined = set(LEAN_DEFINED.findall(task.statement)) | set(LEAN_CONSTRUCTORS.findall(task.statement))
        for block in filter(None, [task.gold, task.meta["stripped"]]):
            cited = set(FRESH_WORD.findall(block))
            assert cited <= defined, (task.id, cited - defined)
            assert cited or block == "rfl", task.id


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_bridge_golds_are_rfl_and_hard_golds_are_more(renderings, rung):
    for task in renderings[rung][1]:
        if task.tier == 1:
            assert task.gold == "rfl", task.id
        else:
            assert task.gold != "rfl" and len(split_steps(task.gold)) >= 1, task.id


def test_a_family_without_a_lean_rendering_says_so(monkeypatch):
    fam = families("m3")[0]

    def rocq_only(rng):
        d = fam.gen(rng)
        return dataclasses.replace(d, proofs={"rocq": d.proofs["rocq"]})

    monkeypatch.setitem(RUNGS, "m3", [dataclasses.replace(fam, gen=rocq_only)])
    with pytest.raises(KeyError, match="no lean rendering"):
        candidates("m3", "lean", 0, 1)


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_committed_lean_rung_is_uncertified_refused_by_default_and_what_the_generators_build(rung):
    directory = DATA / rung / "lean"
    manifest = check_manifest(directory)
    assert manifest["lang"] == "lean" and manifest["certified"] is False and manifest["checker_version"] is None
    assert manifest["counts"] == {"total": 240, "train": 210, "heldout": 30}
    with pytest.raises(UncertifiedTasks):
        load_tasks(directory / "tasks.jsonl")
    tasks = load_tasks(directory / "tasks.jsonl", allow_uncertified=True)
    assert all(t.lang == "lean" and t.certified is None and t.rung == rung for t in tasks)
    fresh = build(rung, "lean", seed=manifest["seed"], n=240, out_root=None, certify_golds=False)
    assert tasks_jsonl(fresh.tasks) == (directory / "tasks.jsonl").read_bytes()
    # Same tasks as the certified Rocq rung: same ids, theorem names and frozen split.
    rocq = load_tasks(DATA / rung / "rocq" / "tasks.jsonl")
    assert [(t.id, t.theorem, t.split) for t in tasks] == [(t.id, t.theorem, t.split) for t in rocq]


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_lean_build_of_every_rung_without_a_toolchain_writes_uncertified_tasks(tmp_path, capsys, rung):
    assert cli(["dataset", "build", "--rung", rung, "--lang", "lean", "--n", "12", "--heldout", "1",
                "--out", str(tmp_path)]) == 0
    tasks = read_tasks(tmp_path / rung / "lean" / "tasks.jsonl")
    assert len(tasks) == 12 and all(t.certified is None and t.lang == "lean" for t in tasks)
    assert "NOT certified" in capsys.readouterr().out


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_lean_calibration_of_every_rung_refuses_without_a_lean_checker(capsys, rung):
    assert cli(["dataset", "calibrate", "--rung", rung, "--lang", "lean"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no lean checker" in err and "\n" not in err
