"""`verirl grade`: grade answers from files and print verdicts as JSON."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from services.cli import UsageError


def register(sub) -> None:
    p = sub.add_parser("grade", help="grade an answer (or a JSONL batch) and print the verdict as JSON",
                       description="Exit 0 if every answer passed, 1 if any failed, 2 on bad usage.")
    p.add_argument("--task", type=Path, required=True,
                   help="a task JSON file, or a tasks.jsonl file together with --id")
    p.add_argument("--id", help="which task of a tasks.jsonl file")
    p.add_argument("--answer", type=Path,
                   help="file with the model's raw answer ('-' for stdin); default: the task's gold proof")
    p.add_argument("--mode", choices=["whole", "steps"], default="whole", help="whole proof, or per step")
    p.set_defaults(handler=run)


def load_task(path: Path, task_id: str | None):
    from pydantic import ValidationError

    from shared.schemas import Task

    if not path.is_file():
        raise UsageError(f"no such task file: {path}")
    text = path.read_text()
    try:
        if task_id is None:
            return Task.model_validate_json(text)
        for line in text.splitlines():
            if line.strip() and json.loads(line).get("id") == task_id:
                return Task.model_validate_json(line)
    except (ValidationError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path} is not a valid task: {str(exc).splitlines()[0]}") from None
    raise UsageError(f"no task with id {task_id!r} in {path}")


def run(args) -> int:
    from services.grader.pipeline import grade, shutdown
    from shared.protocol import FENCE_TAGS, fence_block, fence_key

    task = load_task(args.task, args.id)
    if args.answer is None:
        if not task.gold:
            raise UsageError("the task has no gold proof; pass --answer FILE")
        answer = fence_block(task.gold, FENCE_TAGS[fence_key(task.lang, task.kind)][0])
    elif str(args.answer) == "-":
        answer = sys.stdin.read()
    elif not args.answer.is_file():
        raise UsageError(f"no such answer file: {args.answer}")
    else:
        answer = args.answer.read_text(errors="replace")
    try:
        verdict = grade(task, answer, args.mode)
    finally:
        shutdown()
    print(verdict.model_dump_json(indent=2, exclude_none=True))
    return 0 if verdict.passed else 1
