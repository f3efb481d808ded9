"""Import datasets (`<data_dir>/<rung>/<lang>/tasks.jsonl`) into the tasks table, so that grade
requests can name a task by id. Idempotent: a task whose content changed is updated."""
from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.dialects import postgresql, sqlite

from services.api.db import transaction
from services.api.models import Dataset, TaskRow, utcnow
from shared.schemas import Task
from shared.tasks import read_tasks


def task_row(task: Task, dataset_id: int | None) -> dict:
    body = task.model_dump(mode="json")
    return {"id": task.id, "dataset_id": dataset_id, "rung": task.rung, "family": task.family,
            "split": task.split, "kind": task.kind, "lang": task.lang, "body": body,
            "hash": hashlib.sha256(task.model_dump_json().encode()).hexdigest()}


def import_tasks(engine: Engine, data_dir: Path) -> dict[str, int]:
    """Upsert every dataset under `data_dir`; returns {dataset name: task count}. A line that is
    not a task raises ValueError naming the file and line."""
    counts = {}
    for path in sorted(data_dir.glob("*/*/tasks.jsonl")):
        name = f"{path.parent.parent.name}/{path.parent.name}"
        tasks = read_tasks(path)
        with transaction(engine) as session:
            dataset = session.scalar(select(Dataset).where(Dataset.name == name))
            if dataset is None:
                dataset = Dataset(name=name, path=str(path))
                session.add(dataset)
            dataset.task_count, dataset.imported_at, dataset.path = len(tasks), utcnow(), str(path)
            session.flush()
            rows = [task_row(task, dataset.id) for task in tasks]
            dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
            for start in range(0, len(rows), 500):
                statement = dialect.insert(TaskRow.__table__)
                statement = statement.on_conflict_do_update(
                    index_elements=["id"],
                    set_={column: statement.excluded[column] for column in rows[0] if column != "id"},
                    where=TaskRow.__table__.c.hash != statement.excluded.hash,
                )
                session.execute(statement, rows[start:start + 500])
        counts[name] = len(tasks)
    return counts
