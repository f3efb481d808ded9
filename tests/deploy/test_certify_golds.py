"""docker/certify_golds.py, the Lean image's last build step, fails the build when any gold fails.
Run here with the Rocq checker (real coqc): the script is language-agnostic and there is no Lean
toolchain on this machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.deploy.tools import ROOT

SCRIPT = ROOT / "docker" / "certify_golds.py"


def write_rung(data_dir, lines: list[str], lang: str = "rocq") -> None:
    rung = data_dir / "m1" / lang
    rung.mkdir(parents=True)
    (rung / "tasks.jsonl").write_text("".join(line + "\n" for line in lines))


def committed(count: int) -> list[str]:
    """The first task of each of `count` families of the committed M1 Rocq rung."""
    seen, out = set(), []
    for line in (ROOT / "data/m1/rocq/tasks.jsonl").read_text().splitlines():
        family = json.loads(line)["family"]
        if family not in seen:
            seen.add(family)
            out.append(line)
        if len(out) == count:
            break
    return out


def certify(data_dir, *extra: str, lang: str = "rocq", env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "VERIRL_VAR_DIR": str(data_dir / "var"), **(env or {})}
    return subprocess.run([sys.executable, str(SCRIPT), "--rung", "m1", "--lang", lang, "--data-dir", str(data_dir),
                           "--jobs", "2", *extra], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def test_good_golds_certify(tmp_path):
    write_rung(tmp_path, committed(2))
    out = certify(tmp_path, "--steps-per-family", "1")
    assert out.returncode == 0, out.stderr
    assert "2/2 golds of" in out.stdout and "2/2 golds pass step by step" in out.stdout


def test_a_broken_gold_fails_the_build_and_is_named(tmp_path):
    good, broken = committed(2)
    task = json.loads(broken)
    task["gold"] = "reflexivity."  # not a proof of any of these theorems
    write_rung(tmp_path, [good, json.dumps(task)])
    out = certify(tmp_path, "--steps-per-family", "0")
    assert out.returncode == 1
    assert "1/2 golds of" in out.stdout
    assert f"FAILED {task['id']}" in out.stderr


def test_a_missing_lean_toolchain_fails_the_build(tmp_path):
    # The Lean image's failure mode when its toolchain is broken: every gold fails, exit 1.
    lines = (ROOT / "data/m1/lean/tasks.jsonl").read_text().splitlines()[:2]
    write_rung(tmp_path, lines, lang="lean")
    out = certify(tmp_path, "--steps-per-family", "0", lang="lean",
                  env={"VERIRL_LEAN": str(tmp_path / "no-such-toolchain" / "bin" / "lean")})
    assert out.returncode == 1
    assert "0/2 golds of" in out.stdout
    assert out.stderr.count("FAILED m1/") == 2 and "not found" in out.stderr
