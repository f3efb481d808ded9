"""Task pools: which tasks an iteration trains on.

A phase's pool is the train split of its tasks. Iterations draw P tasks at a time along a seeded
shuffle of the pool, reshuffled on every pass; the position along it (the cursor) is the only
state, so a checkpoint stores one number, and the pool restarts at 0 at a phase boundary.
"""
from __future__ import annotations

import random
from collections.abc import Sequence

from shared.schemas import Task


class TaskPool:
    """The train tasks of one phase, drawn in a seeded order that depends only on the cursor."""

    def __init__(self, tasks: Sequence[Task], seed: int, phase: int):
        if not tasks:
            raise ValueError(f"phase {phase} has no train tasks")
        self.tasks = list(tasks)
        self.seed = seed
        self.phase = phase

    def _order(self, epoch: int) -> list[int]:
        return random.Random(f"{self.seed}/{self.phase}/{epoch}").sample(range(len(self.tasks)), len(self.tasks))

    def draw(self, cursor: int, n: int) -> list[Task]:
        """The `n` tasks at positions cursor … cursor+n-1 along the endless shuffled sequence."""
        size = len(self.tasks)
        return [self.tasks[self._order(pos // size)[pos % size]] for pos in range(cursor, cursor + n)]
