"""The contract every grader backend keeps."""
from __future__ import annotations

from shared.protocol import FENCE_TAGS, expected_format, extract_block
from shared.schemas import GradeMode, Reason, Task, Verdict


class Backend:
    """Checks one kind of answer. One instance per process; `check` must be safe to call from
    several threads at once and must never raise for anything the answer contains (a hostile
    answer is a verdict, not an exception)."""

    name = "base"
    fence = "rocq"  # key into FENCE_TAGS

    def version(self) -> str:
        """Version of the external checker; part of every verdict and cache key."""
        raise NotImplementedError

    def extract(self, answer: str) -> str | Verdict:
        """The part of the raw answer this backend checks, or a bad_format verdict."""
        tags = FENCE_TAGS[self.fence]
        block = extract_block(answer, tags)
        if block is None:
            return Verdict(passed=False, reason=Reason.bad_format, feedback=expected_format(tags))
        return block

    def check(self, task: Task, block: str, mode: GradeMode = "whole") -> Verdict:
        raise NotImplementedError

    def close(self) -> None:
        """Release warm processes, slots, etc."""


def trim_feedback(text: str, limit: int) -> str:
    """Keep what a model needs to retry: the head of the message, bounded in length."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: limit - 20].rstrip() + "\n… (truncated)"
