"""Terminal backend: Terminal-Bench-style tasks graded by their hidden tests.

`grade(task, answer)` runs a one-turn episode: the answer's LAST ```bash block is run once, as one
script, in a fresh session of the task (after its setup.sh), then the episode ends and the tests
decide. Multi-turn episodes go through `TerminalSession` directly (`open_session`), which is what
the trainer's tool loop uses; its verdict has the same shape, with one step per turn.
"""
from __future__ import annotations

import importlib.metadata as metadata
import logging
from pathlib import Path

from services.grader.backends.base import Backend
from services.grader.terminal_session import FINISH_WORDS, TerminalSession, TerminalSpec
from services.grader.venv_pool import PoolBusy
from shared.schemas import GradeMode, Reason, Task, Verdict

log = logging.getLogger(__name__)

PROMPT = """{instruction}

You work in a bash shell (no network{net}) in your working directory, which starts out as the
task prepared it. Answer with commands in one ```bash block. In an interactive episode you see
each block's output (exit code, stdout, stderr) and reply with the next block; reply with a block
containing only `submit` when you are done. Files persist between turns; running processes do not.
When the episode ends, hidden tests check the result."""


def load_task(path: str | Path, split: str = "train") -> Task:
    """The Task for a terminal task directory; `meta["task_dir"]` points back at it."""
    spec = TerminalSpec.load(path)
    solution = spec.path / "solution.sh"
    return Task(
        id=f"terminal/{spec.name}", rung="terminal", family=spec.category or spec.name,
        tier={"easy": 1, "medium": 2, "hard": 3}.get(spec.difficulty, 2), split=split, kind="terminal",
        prompt=PROMPT.format(instruction=spec.instruction, net=", except as allowed" if spec.allow_network else ""),
        gold=solution.read_text() if solution.is_file() else None,
        meta={"task_dir": str(spec.path), "max_turns": spec.max_turns},
    )


def open_session(task: Task) -> TerminalSession:
    """A fresh episode of `task` (setup already run) for a multi-turn tool loop."""
    return TerminalSession(TerminalSpec.load(task.meta["task_dir"]))


class TerminalBackend(Backend):
    name = "terminal"
    fence = "terminal"

    def version(self) -> str:
        return f"terminal-1+pytest-{metadata.version('pytest')}"

    def check(self, task: Task, block: str, mode: GradeMode = "whole") -> Verdict:
        try:
            session = open_session(task)
        except (KeyError, OSError, ValueError, RuntimeError) as exc:
            log.warning("terminal task %s could not start: %s", task.id, exc)
            return Verdict(passed=False, reason=Reason.sandbox_error, feedback=f"the task could not start: {exc}")
        try:
            if block.strip() not in FINISH_WORDS:
                session.step(block)
            return session.finish()
        except PoolBusy as exc:
            return Verdict(passed=False, reason=Reason.sandbox_error, feedback=str(exc), steps=session.steps)
