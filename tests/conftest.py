"""Fixtures every test folder may use."""
from __future__ import annotations

import pytest

from shared.schemas import Task

DOUBLE_STATEMENT = """Require Import Arith Lia.

Fixpoint dblq7 (n : nat) : nat := match n with 0 => 0 | S k => S (S (dblq7 k)) end.

Theorem dblq7_spec : forall n, dblq7 n = 2 * n.
Proof.
{{PROOF}}
Qed.
"""
DOUBLE_GOLD = "induction n as [|k IH]; simpl.\n- reflexivity.\n- rewrite IH. lia."


@pytest.fixture
def rocq_task() -> Task:
    """A small Rocq task with its own definition and a proof that needs induction."""
    return Task(id="test/double/0001", rung="test", family="double", lang="rocq",
                theorem="dblq7_spec", statement=DOUBLE_STATEMENT, gold=DOUBLE_GOLD)

