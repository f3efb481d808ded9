"""The per-slot venv pool: slots exist only once verified, are never shared (threads or
processes), are reset when tampered with, and are read-only to the code that runs in them."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from services.grader.sandbox import Limits, get_sandbox, workdir
from services.grader.venv_pool import VenvPool

REPO = Path(__file__).resolve().parents[2]


def test_a_slot_that_fails_verification_never_appears(pool, searchable_dir, monkeypatch):
    pool = VenvPool(searchable_dir / "pool", 1, harness_root=pool.root)
    monkeypatch.setattr(pool, "_verify", lambda slot, harness: (_ for _ in ()).throw(RuntimeError("broken")))
    with pytest.raises(RuntimeError, match="broken"):
        with pool.lease("episode"):
            pass
    assert not (pool.root / "slot-0").exists()
    assert not list(pool.root.glob(".slot-*")), "a half-built slot was left behind"
    monkeypatch.undo()
    with pool.lease("episode") as slot:  # the next lease builds it properly
        assert (slot.path / ".verirl-manifest").is_file()


def test_a_tampered_slot_is_rebuilt_before_the_next_lease(pool):
    with pool.lease("tamper") as slot:
        site = next(slot.path.glob("lib/python3*/site-packages"))
        (site / "injected.py").write_text("raise SystemExit('stale slot')\n")
        tampered = slot.index
    with pool.lease("after") as slot:  # a lease takes the first free slot: the tampered one
        assert slot.index == tampered and not (site / "injected.py").exists()
    assert pool.records()[-1].rebuilt


def test_slots_are_read_only_inside_the_sandbox(pool):
    with pool.lease("write-probe") as slot, workdir() as wd:
        site = next(slot.path.glob("lib/python3*/site-packages"))
        res = get_sandbox().run([slot.python, "-c", f"open('{site}/x.py', 'w')"], wd, Limits(wall_s=30),
                                ro_binds=slot.ro_binds)
    assert res.returncode != 0 and "Read-only file system" in res.stderr


@pytest.mark.slow
def test_leases_are_exclusive_across_processes(pool, searchable_dir):
    """Two processes share one pool directory with a single slot: their leases never overlap."""
    script = textwrap.dedent(f"""
        import json, sys, time
        from pathlib import Path
        from services.grader.venv_pool import VenvPool
        pool = VenvPool(Path({str(searchable_dir / 'shared')!r}), 1, harness_root=Path({str(pool.root)!r}))
        spans = []
        for _ in range(5):
            with pool.lease(sys.argv[1]):
                start = time.time(); time.sleep(0.05); spans.append((start, time.time()))
        print(json.dumps(spans))
    """)
    VenvPool(searchable_dir / "shared", 1, harness_root=pool.root).warm_up()
    procs = [subprocess.Popen([sys.executable, "-c", script, f"p{i}"], cwd=REPO, stdout=subprocess.PIPE, text=True)
             for i in range(2)]
    spans = sorted(span for p in procs for span in json.loads(p.communicate(timeout=120)[0]))
    assert len(spans) == 10
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
