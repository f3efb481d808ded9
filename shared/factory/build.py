"""Build one rung in one language: generate candidates, certify every gold through `grade()`,
keep only certified tasks, freeze the stratified split, write `tasks.jsonl` and `manifest.json`.

Rebuilding with the same (rung, lang, seed, n, heldout) reproduces `tasks.jsonl` byte for byte:
generation is deterministic, the split is drawn from its own seeded RNG, and the `certified`
field names the checker and its version only. Timings live in the manifest's `build` field, which
no hash covers."""
from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from shared.factory import BRIDGE, candidates, families, renderer
from shared.schemas import GRADER_VERSION, Task


@dataclass
class BuildResult:
    tasks: list[Task]
    rejected: list[tuple[str, str]]  # (task id, verdict feedback) of golds that did not certify
    manifest: dict
    out_dir: Path | None = None
    timing: dict = field(default_factory=dict)


def checker_available(lang: str) -> bool:
    """Whether this host can run the language's checker (there is no Lean toolchain here)."""
    from shared.settings import get_settings

    binary = get_settings().coqc if lang == "rocq" else get_settings().lean
    return shutil.which(binary) is not None


def grade_all(jobs_list: list[tuple[Task, str]], workers: int) -> list:
    """`grade()` every (task, answer) on `workers` threads (the work runs in checker
    subprocesses, so threads suffice and share warm sessions). No verdict cache: a certificate
    or a calibration figure always comes from a checker run made now."""
    from concurrent.futures import ThreadPoolExecutor

    from services.grader.pipeline import grade, shutdown

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="certify") as pool:
            return list(pool.map(lambda job: grade(job[0], job[1], use_cache=False), jobs_list))
    finally:
        shutdown()


def certify(tasks: list[Task], jobs: int) -> tuple[list[Task], list[tuple[str, str]], str]:
    """Grade every gold (fenced as a model would answer); return the certified tasks, the
    rejected ids with their feedback, and the checker version."""
    if not tasks:
        return [], [], ""
    r = renderer(tasks[0].lang)
    verdicts = grade_all([(t, r.fence(t.gold)) for t in tasks], jobs)
    version = next((v.backend_version for v in verdicts if v.passed), verdicts[0].backend_version)
    kept = [t.model_copy(update={"certified": version}) for t, v in zip(tasks, verdicts) if v.passed]
    rejected = [(t.id, v.feedback) for t, v in zip(tasks, verdicts) if not v.passed]
    return kept, rejected, version


def freeze_split(tasks: list[Task], rung: str, seed: int, heldout_per_family: int) -> list[Task]:
    """Mark `heldout_per_family` tasks of every family held out, drawn from a seeded RNG."""
    out: list[Task] = []
    for fam in families(rung):
        ids = [t.id for t in tasks if t.family == fam.name]
        if len(ids) <= heldout_per_family:
            raise ValueError(f"{rung}/{fam.name}: {len(ids)} certified tasks, need more than "
                             f"{heldout_per_family} to hold {heldout_per_family} out")
        held = set(random.Random(f"{rung}/{fam.name}/{seed}/split").sample(ids, heldout_per_family))
        out += [t.model_copy(update={"split": "heldout" if t.id in held else "train"})
                for t in tasks if t.family == fam.name]
    return out


def tasks_jsonl(tasks: list[Task]) -> bytes:
    return "".join(t.model_dump_json() + "\n" for t in tasks).encode()


def build(rung: str, lang: str, *, seed: int = 0, n: int = 240, jobs: int = 2, heldout_per_family: int = 5,
          out_root: Path | None = Path("data"), certify_golds: bool | None = None) -> BuildResult:
    """Build and (with `out_root`) write the rung. `certify_golds=None` certifies wherever the
    language's checker is installed; uncertified tasks carry `certified: null`."""
    fams = families(rung)
    if n <= 0 or n % len(fams):
        raise ValueError(f"--n must be a positive multiple of {len(fams)} (the number of families in {rung})")
    start = time.monotonic()
    generated = candidates(rung, lang, seed, n // len(fams))
    gen_s = time.monotonic() - start
    if certify_golds is None:
        certify_golds = checker_available(lang)
    rejected: list[tuple[str, str]] = []
    version = None
    cert_start = time.monotonic()
    if certify_golds:
        kept, rejected, version = certify(generated, jobs)
    else:
        kept = generated
    cert_s = time.monotonic() - cert_start
    final = freeze_split(kept, rung, seed, heldout_per_family)
    data = tasks_jsonl(final)
    timing = {
        "generate_s": round(gen_s, 3), "certify_s": round(cert_s, 3), "jobs": jobs,
        "verdicts_per_s": round(len(generated) / cert_s, 3) if certify_golds and cert_s > 0 else None,
    }
    manifest = {
        "rung": rung, "lang": lang, "seed": seed, "n_candidates": len(generated),
        "heldout_per_family": heldout_per_family,
        "checker": renderer(lang).CHECKER, "checker_version": version, "grader_version": GRADER_VERSION,
        "certified": bool(certify_golds),
        "counts": {"total": len(final), "train": sum(t.split == "train" for t in final),
                   "heldout": sum(t.split == "heldout" for t in final)},
        "families": {f.name: {"tier": f.tier, "bridge": f.name == BRIDGE,
                              "train": sum(t.family == f.name and t.split == "train" for t in final),
                              "heldout": sum(t.family == f.name and t.split == "heldout" for t in final)}
                     for f in fams},
        "rejected": [tid for tid, _ in rejected],
        "sha256": hashlib.sha256(data).hexdigest(),
        "build": timing,  # not covered by any hash: varies run to run
    }
    out_dir = None
    if out_root is not None:
        out_dir = Path(out_root) / rung / lang
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "tasks.jsonl").write_bytes(data)
        (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return BuildResult(final, rejected, manifest, out_dir, timing)
