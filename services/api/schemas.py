"""Request and response bodies of the API (the OpenAPI schema is generated from these)."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from shared.schemas import GradeMode, Reason, Task, Verdict

# Stored times are UTC; SQLite hands them back without a zone, so say so on the way out.
Timestamp = Annotated[datetime, AfterValidator(lambda moment: moment if moment.tzinfo else moment.replace(tzinfo=UTC))]
JobStatus = Literal["queued", "running", "done"]
RunStatus = Literal["created", "running", "finished", "failed", "stopped"]
Split = Literal["train", "heldout"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- grading -----------------------------------------------------------------------------------

class GradeItem(Strict):
    """One answer to grade, against a stored task (`task_id`) or an inline `task`."""

    task_id: str | None = Field(None, description="id of a task in the tasks table")
    task: Task | None = Field(None, description="an inline task, instead of task_id")
    answer: str = Field(description="the model's raw answer text")
    mode: GradeMode = "whole"

    @model_validator(mode="after")
    def _one_task(self) -> GradeItem:
        if (self.task_id is None) == (self.task is None):
            raise ValueError("give exactly one of task_id or task")
        return self


class GradeRequest(GradeItem):
    timeout_s: float | None = Field(None, ge=0, description="how long to wait for the verdict before "
                                    "answering 202 with the job id; default from settings")


class GradeBatchRequest(Strict):
    items: list[GradeItem] = Field(min_length=1)
    wait_s: float = Field(0.0, ge=0, description="wait up to this long for verdicts; 0 answers at once")


class GradeJobOut(BaseModel):
    id: str
    status: JobStatus
    task_id: str
    attempts: int
    verdict: Verdict | None = None
    created_at: Timestamp
    finished_at: Timestamp | None = None


class GradeBatchOut(BaseModel):
    jobs: list[GradeJobOut] = Field(description="one per item, in order; identical items share a job")
    done: int


# --- runs --------------------------------------------------------------------------------------

class RunCreate(Strict):
    name: str = Field(min_length=1, max_length=200, description="unique; creating it again is a no-op")
    config: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    status: RunStatus = "created"
    phase: str = ""


class RunPatch(Strict):
    status: RunStatus | None = None
    phase: str | None = None
    tags: list[str] | None = None


class RunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    config: dict[str, Any]
    status: str
    phase: str
    tags: list[Any]
    version: int = Field(description="goes up on every write concerning the run")
    created_at: Timestamp
    updated_at: Timestamp


class RunList(BaseModel):
    items: list[RunOut]
    cursor: Timestamp | None = Field(description="pass as updated_after to get only runs changed since")


class IterationIn(Strict):
    iteration: int = Field(ge=0)
    metrics: dict[str, Any] = Field(default_factory=dict)


class IterationOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    iteration: int
    metrics: dict[str, Any]
    created_at: Timestamp


class WriteResult(BaseModel):
    inserted: int = Field(description="rows written; rows whose natural key existed are skipped")
    skipped: int
    run_version: int


# --- held-out evals ----------------------------------------------------------------------------

class EvalItem(Strict):
    task_id: str = Field(min_length=1, max_length=300)
    family: str | None = Field(None, description="default: the stored task's family, else the id's "
                               "middle part (m1/poly_square/0007 -> poly_square)")
    n: int = Field(ge=1, description="episodes sampled for this task")
    passed_by_turn: list[int] = Field(min_length=1, description="cumulative: episodes solved within 1, 2, … turns")

    @model_validator(mode="after")
    def _cumulative(self) -> EvalItem:
        counts = self.passed_by_turn
        if any(c < 0 or c > self.n for c in counts) or any(b < a for a, b in zip(counts, counts[1:])):
            raise ValueError("passed_by_turn must be non-decreasing counts between 0 and n")
        return self


class EvalBatch(Strict):
    iteration: int = Field(ge=0)
    items: list[EvalItem] = Field(min_length=1)


class TrajectoryPoint(BaseModel):
    iteration: int
    tasks: int
    episodes: int
    pass_rate: float | None
    turn1_rate: float | None
    pass_at_k: dict[str, float | None]
    solved_by_n_turns: list[float]
    families: dict[str, dict[str, Any]]


class Trajectory(BaseModel):
    run_id: int
    run_version: int
    ks: list[int]
    iterations: list[TrajectoryPoint]
    last_iteration: int | None = Field(description="pass as after_iteration to get only newer points")


# --- episodes ----------------------------------------------------------------------------------

class TurnIn(Strict):
    completion: str
    sampled_tokens: int = Field(0, ge=0)
    passed: bool = False
    reason: Reason | None = None
    feedback: str = ""


class EpisodeIn(Strict):
    iteration: int = Field(ge=0)
    task_id: str = Field(min_length=1, max_length=300)
    index: int = Field(0, ge=0, description="episode index within the task's group")
    split: Split = "train"
    family: str = ""
    prompt: str | None = None
    reward: float = 0.0
    policy_version: int | None = None
    turns: list[TurnIn] = Field(default_factory=list)


class EpisodeBatch(Strict):
    episodes: list[EpisodeIn] = Field(min_length=1)


class TurnOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    index: int
    completion: str
    sampled_tokens: int
    passed: bool
    reason: str
    feedback: str


class EpisodeOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    run_id: int
    iteration: int
    split: str
    task_id: str
    index: int
    family: str
    reward: float
    passed: bool
    n_turns: int
    policy_version: int | None
    created_at: Timestamp


class EpisodeDetail(EpisodeOut):
    prompt: str | None
    turns: list[TurnOut]


class EpisodePage(BaseModel):
    items: list[EpisodeOut]
    next_after: int = Field(description="pass as `after` next time: the last id returned (or the "
                            "`after` given, when nothing was returned)")
    has_more: bool = Field(description="more episodes match now; fetch again at once")
