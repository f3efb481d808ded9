"""Print the pinned requirements of verirl's core dependencies plus the given extras, one a line.

Images install these in a layer of their own, before the source is copied, so that editing code
does not reinstall dependencies; `pip install --no-deps .` then adds the project itself.

    python requirements.py pyproject.toml api        # core + api (+ grader, which api includes)
    python requirements.py pyproject.toml            # core only
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

SELF = re.compile(r"^verirl\[(?P<extras>[^\]]+)\]$")


def requirements(project: dict, extras: list[str]) -> list[str]:
    """Core dependencies and those of `extras`, following `verirl[...]` references, in order and
    without repeats. Unknown extras are an error rather than an image that silently lacks them."""
    table = project["optional-dependencies"]
    out: list[str] = list(project["dependencies"])
    pending, seen = list(extras), set()
    while pending:
        extra = pending.pop(0)
        if extra in seen:
            continue
        if extra not in table:
            raise SystemExit(f"requirements.py: no extra {extra!r} in pyproject.toml (have: {', '.join(table)})")
        seen.add(extra)
        for requirement in table[extra]:
            if match := SELF.match(requirement.strip()):
                pending += [name.strip() for name in match["extras"].split(",")]
            elif requirement not in out:
                out.append(requirement)
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: requirements.py PYPROJECT [EXTRA ...]", file=sys.stderr)
        return 2
    project = tomllib.loads(Path(argv[0]).read_text())["project"]
    print("\n".join(requirements(project, argv[1:])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
