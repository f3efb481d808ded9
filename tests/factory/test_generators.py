"""Generators: deterministic, unique, fresh names, the families each rung promises."""
from __future__ import annotations

import re

import pytest

from services.grader.backends.rocq_syntax import forbidden_reason
from shared.factory import BRIDGE, RUNG_NAMES, candidates, families
from shared.factory.core import fresh_name

EXPECTED_FAMILIES = {
    "m0": ["affine", "repeat_sum", "repeat_len", "sum_app", "mirror_size", "concrete"],
    "m1": ["poly_square", "compose_affine", "map_rev", "fold_rev", "revacc", "concrete"],
    "m2": ["rev_invol", "sum_map_mul", "count_filter", "compose_two", "height_mirror", "concrete"],
    "m3": ["sumacc", "tsumacc", "takedrop_len", "pow_mul", "filter_idem", "concrete"],
    "m4": ["insert_count", "flatten_tsum", "pow_lt_mono", "rev_map_rev", "count_take_le", "concrete"],
    "m5": ["isort_count", "isort_len", "isort_sorted", "mirror_flatten", "gauss_div", "concrete"],
}
# Names a model could have memorised from a library; no task may define or cite them.
LIBRARY_NAMES = {"rev", "app", "map", "length", "len", "sum", "count", "filter", "fold_left", "fold_right",
                 "repeat", "take", "firstn", "skipn", "drop", "insert", "sort", "isort", "sorted", "Sorted",
                 "mirror", "flatten", "tree", "list", "nil", "cons", "rev_append", "concat", "pow", "double"}
FRESH = re.compile(r"^[a-z]{5}\d{2}$")
DEFINED = re.compile(r"^(?:Inductive|Fixpoint|Theorem)\s+(\w+)", re.MULTILINE)


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_each_rung_has_exactly_its_families_with_the_bridge_last(rung):
    fams = families(rung)
    assert [f.name for f in fams] == EXPECTED_FAMILIES[rung]
    assert fams[-1].name == BRIDGE and fams[-1].tier == 1
    assert all(f.tier > 1 for f in fams[:-1])


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_generation_is_deterministic_given_rung_seed_and_index(rung):
    first = candidates(rung, "rocq", 7, 3)
    again = candidates(rung, "rocq", 7, 3)
    assert [t.model_dump() for t in first] == [t.model_dump() for t in again]
    # A prefix of a bigger build is the same tasks: index i does not depend on how many follow.
    bigger = candidates(rung, "rocq", 7, 5)
    assert {t.id: t.statement for t in first}.items() <= {t.id: t.statement for t in bigger}.items()


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_another_seed_gives_other_tasks(rung):
    a = {t.statement for t in candidates(rung, "rocq", 0, 3)}
    b = {t.statement for t in candidates(rung, "rocq", 1, 3)}
    assert not a & b


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_a_full_rung_has_no_duplicate_statements(rung):
    tasks = candidates(rung, "rocq", 0, 40)
    assert len(tasks) == 240
    assert len({t.statement for t in tasks}) == 240
    assert len({t.id for t in tasks}) == 240


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_every_defined_name_is_fresh_and_no_library_name_is_defined(rung):
    for task in candidates(rung, "rocq", 0, 4):
        defined = DEFINED.findall(task.statement)
        assert defined and all(FRESH.match(name) for name in defined), (task.id, defined)
        words = set(re.findall(r"[A-Za-z_]\w*", task.statement))
        assert not (words & LIBRARY_NAMES), (task.id, words & LIBRARY_NAMES)
        assert task.theorem in defined


def test_names_differ_from_task_to_task():
    tasks = candidates("m1", "rocq", 0, 20)
    revacc = [t for t in tasks if t.family == "revacc"]
    assert len({t.theorem for t in revacc}) == len(revacc)
    assert len({DEFINED.findall(t.statement)[0] for t in revacc}) == len(revacc)


def test_fresh_names_have_the_documented_shape():
    import random

    rng = random.Random(0)
    names = [fresh_name(rng) for _ in range(200)]
    assert all(FRESH.match(n) for n in names)
    assert len(set(names)) > 190


@pytest.mark.parametrize("rung", RUNG_NAMES)
def test_rocq_golds_are_bare_tactic_blocks_the_grader_accepts(rung):
    for task in candidates(rung, "rocq", 0, 2):
        assert "```" not in task.gold
        assert forbidden_reason(task.gold) is None, task.id
        assert task.statement.startswith("Require Import Arith Lia.\n")
        assert task.statement.count("{{PROOF}}") == 1
        assert f"Theorem {task.theorem} :" in task.statement
        assert "{{PROOF}}" not in task.prompt and "```coq" in task.prompt
