"""The episode protocol the seeds use: the model answers with one fenced block; on failure the
grader's feedback comes back as a plain user message asking for a corrected block."""
from __future__ import annotations

import re

# Fence tags accepted per task language. Rocq answers may say ```coq or ```rocq.
FENCE_TAGS: dict[str, tuple[str, ...]] = {
    "rocq": ("coq", "rocq"),
    "lean": ("lean", "lean4"),
    "nd": ("nd",),
    "terminal": ("bash", "sh"),
    "swe": ("diff", "patch"),
}

_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def fence_key(lang: str | None, kind: str) -> str:
    return lang if kind == "proof" and lang else kind


def extract_block(answer: str, tags: tuple[str, ...]) -> str | None:
    """The last fenced block whose tag is one of `tags`, without the fences; None if none."""
    found = [body for tag, body in _FENCE.findall(answer) if tag.lower() in tags]
    return found[-1] if found else None


def fence_block(block: str, tag: str) -> str:
    """Render a bare block as an answer in the expected format (for golds and tests)."""
    return f"```{tag}\n{block.strip(chr(10))}\n```"


def expected_format(tags: tuple[str, ...]) -> str:
    return (
        f"Answer with ONLY the proof body in one fenced block: a line ```{tags[0]}, "
        "then your tactics, then a line ```."
    )


def retry_message(feedback: str, tags: tuple[str, ...]) -> str:
    """The user turn appended after a failed answer."""
    return (
        f"Your proof failed:\n{feedback}\n\n"
        f"Provide a corrected block in a ```{tags[0]} fence."
    )
