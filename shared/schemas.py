"""The data contracts every service shares: tasks in, verdicts out.

A Task is one JSON line of a dataset file. A Verdict is what `grade()` returns; it is a pure
function of (task, answer, grader version), which is what makes the verdict cache sound.
"""
from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Bumped whenever a change can alter any verdict; part of every cache key.
GRADER_VERSION = "1"

# What the harness replaces with the model's block inside `Task.statement`.
PROOF_HOLE = "{{PROOF}}"


class Reason(StrEnum):
    ok = "ok"
    forbidden = "forbidden"
    parse = "parse"
    compile_error = "compile_error"
    timeout = "timeout"
    axioms = "axioms"
    resource = "resource"
    sandbox_error = "sandbox_error"
    bad_format = "bad_format"
    tests_failed = "tests_failed"  # terminal and swe: the task's tests ran and some failed


class Task(BaseModel):
    """One task. For proofs `statement` is the fixed file with `PROOF_HOLE` where the block goes."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="stable id, e.g. m1/poly_square/0007")
    rung: str = ""
    family: str = ""
    tier: int = 2
    split: Literal["train", "heldout"] = "train"
    kind: Literal["proof", "terminal", "swe"] = "proof"
    lang: Literal["lean", "rocq", "nd"] | None = None
    prompt: str = Field("", description="what the model sees")
    theorem: str | None = Field(None, description="name of the theorem the axiom audit checks")
    statement: str | None = Field(None, description="fixed file the harness splices into")
    gold: str | None = Field(None, description="reference answer (a bare block, not fenced)")
    certified: str | None = Field(None, description="checker and version that certified the gold")
    meta: dict[str, Any] = Field(default_factory=dict, description="kind-specific data")


class StepVerdict(BaseModel):
    """One step of a step-checked answer (a tactic, a command)."""

    index: int
    text: str
    ok: bool
    message: str = ""
    goals: str | None = None
    exit_code: int | None = Field(None, description="terminal steps: the command's exit status")
    signals: list[str] = Field(default_factory=list,
                               description="per-step facts for process rewards, e.g. repeat_error")


class Verdict(BaseModel):
    passed: bool
    reason: Reason
    feedback: str = Field("", description="text the model can act on, bounded length")
    axioms: list[str] = Field(default_factory=list)
    elapsed_s: float = 0.0
    backend: str = ""
    backend_version: str = ""
    grader_version: str = GRADER_VERSION
    steps: list[StepVerdict] | None = None
    cached: bool = False


GradeMode = Literal["whole", "steps"]
