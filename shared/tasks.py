"""Dataset files: loading tasks, filtering by rung/family/split, and curriculum phases.

A dataset is `data/<rung>/<lang>/tasks.jsonl` (one `Task` per line) with a `manifest.json` beside
it. Loading refuses tasks whose gold no checker certified unless `allow_uncertified=True`: a
reward computed on such a task could be wrong in either direction."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pydantic import ValidationError

from shared.schemas import Task


class UncertifiedTasks(ValueError):
    """The file holds tasks whose gold was never certified."""


def dataset_dir(rung: str, lang: str = "rocq", data_dir: Path | None = None) -> Path:
    if data_dir is None:
        from shared.settings import get_settings

        data_dir = get_settings().data_dir
    return Path(data_dir) / rung / lang


def resolve(source: str | Path, lang: str = "rocq", data_dir: Path | None = None) -> Path:
    """A path to a tasks file, or a rung name (`m1`) meaning its built file for `lang`."""
    path = Path(source)
    if path.suffix == ".jsonl" or path.exists():
        return path
    return dataset_dir(str(source), lang, data_dir) / "tasks.jsonl"


def read_tasks(path: Path) -> list[Task]:
    """Every task of one file; a bad line is an error naming the file and line."""
    if not path.is_file():
        raise FileNotFoundError(f"no tasks file at {path}")
    tasks = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            tasks.append(Task.model_validate_json(line))
        except ValidationError as exc:
            raise ValueError(f"{path}:{lineno}: not a task: {exc.errors()[0]['msg']}") from None
    return tasks


def load_tasks(sources: str | Path | Iterable[str | Path], *, rung: str | None = None,
               family: str | Iterable[str] | None = None, split: str | None = None,
               lang: str = "rocq", allow_uncertified: bool = False,
               data_dir: Path | None = None) -> list[Task]:
    """Tasks from one or more files (or rung names), filtered; ids must be unique."""
    if isinstance(sources, (str, Path)):
        sources = [sources]
    families = {family} if isinstance(family, str) else set(family) if family else None
    out: list[Task] = []
    seen: set[str] = set()
    for source in sources:
        path = resolve(source, lang, data_dir)
        tasks = read_tasks(path)
        uncertified = [t.id for t in tasks if not t.certified]
        if uncertified and not allow_uncertified:
            raise UncertifiedTasks(f"{path}: {len(uncertified)} task(s) have no certified gold "
                                   f"(e.g. {uncertified[0]}); pass allow_uncertified=True to load them")
        for t in tasks:
            if t.id in seen:
                raise ValueError(f"{path}: task id {t.id} appears twice")
            seen.add(t.id)
            if (rung is None or t.rung == rung) and (families is None or t.family in families) \
                    and (split is None or t.split == split):
                out.append(t)
    return out


@dataclass(frozen=True)
class Phase:
    """One stage of a curriculum: the task pool the trainer samples from until it moves on."""

    index: int
    sources: tuple[str, ...]
    tasks: tuple[Task, ...]


def load_phases(spec: str | Iterable[str], *, split: str = "train", lang: str = "rocq",
                allow_uncertified: bool = False, data_dir: Path | None = None) -> list[Phase]:
    """Phases from a spec like `"m0,m1+m2"` or `["a.jsonl", "b.jsonl"]`: commas separate phases
    in order, `+` joins several files into one phase's pool."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    phases = []
    for index, part in enumerate(p.strip() for p in parts):
        if not part:
            raise ValueError(f"empty phase in curriculum spec {spec!r}")
        sources = tuple(s.strip() for s in part.split("+"))
        tasks = load_tasks(sources, split=split, lang=lang, allow_uncertified=allow_uncertified,
                           data_dir=data_dir)
        if not tasks:
            raise ValueError(f"phase {index} ({part}) has no {split} tasks")
        phases.append(Phase(index, sources, tuple(tasks)))
    return phases


def check_manifest(directory: Path) -> dict:
    """The manifest of a built dataset, after checking that its hash matches `tasks.jsonl`."""
    manifest = json.loads((directory / "manifest.json").read_text())
    digest = hashlib.sha256((directory / "tasks.jsonl").read_bytes()).hexdigest()
    if digest != manifest["sha256"]:
        raise ValueError(f"{directory}: tasks.jsonl does not match its manifest (sha256 {digest})")
    return manifest
