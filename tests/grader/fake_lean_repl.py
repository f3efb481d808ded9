#!/usr/bin/python3
"""Stand-in for the leanprover-community REPL (no Lean toolchain can be installed here).

It speaks the same protocol — a JSON request and a blank line in, a pretty-printed JSON reply and
a blank line out — over a toy tactic language: a proof state is a list of goal strings;
`constructor` splits the first goal in two, `intro x` adds a hypothesis, the closing tactics
(`rfl`, `simp`, `omega`, `trivial`, `decide`, `exact …`, `assumption`) close the first goal,
`all_goals …` closes every goal, words starting with `fake_` (directives for the stand-in
`lean` in test_lean_compile.py) do nothing, and anything else is an unknown tactic. A few tactics stand for a
misbehaving process, so the driver's defences can be tested:

    hang         never replies            crash        dies halfway through a reply
    stderr_spam  writes 1 MiB to stderr   slow_split   replies a few bytes per write
    garbage      replies with non-JSON    double       replies twice (out of step)
"""
import json
import os
import re
import sys
import time

CLOSERS = ("rfl", "simp", "omega", "trivial", "decide", "exact", "assumption", "linarith", "norm_num")
states: dict[int, list[str]] = {}
envs = 0


def reply(obj: dict, chunk: int | None = None) -> None:
    text = json.dumps(obj, ensure_ascii=False, indent=1) + "\n\n"
    data = text.encode()
    if chunk is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    for i in range(0, len(data), chunk):
        sys.stdout.buffer.write(data[i:i + chunk])
        sys.stdout.buffer.flush()
        time.sleep(0.0005)


def new_state(goals: list[str]) -> int:
    states[len(states)] = goals
    return len(states) - 1


def run_cmd(cmd: str) -> dict:
    global envs
    sorries, messages = [], []
    statement = re.search(r":\s*([^:]*?)\s*:=\s*by", cmd, re.S)
    goal = "⊢ " + (statement[1] if statement else "True")
    for number, line in enumerate(cmd.split("\n"), 1):
        m = re.search(r"\bsorry\b", line)
        if m:
            sorries.append({"proofState": new_state([goal]), "pos": {"line": number, "column": m.start()},
                            "endPos": {"line": number, "column": m.end()}, "goal": goal})
    if sorries:
        messages.append({"severity": "warning", "pos": {"line": 1, "column": 8},
                         "endPos": {"line": 1, "column": 11}, "data": "declaration uses 'sorry'"})
    envs += 1
    return {"sorries": sorries, "messages": messages, "env": envs - 1}


def apply(goals: list[str], tactic: str) -> list[str] | str:
    """The goals after `tactic`, or an error message."""
    for piece in re.split(r"[;\n]", tactic):
        piece = piece.strip().lstrip("·").strip()
        if not piece or piece in ("skip", "stderr_spam", "slow_split", "double"):
            continue
        word = piece.split()[0]
        if word.startswith("fake_"):  # directives for the stand-in `lean`; no-ops here
            continue
        if not goals:
            return "no goals to be proved"
        if word == "constructor":
            goals = [f"case left\n{goals[0]}", f"case right\n{goals[0]}", *goals[1:]]
        elif word == "intro":
            goals = [f"{piece.split()[1]} : Nat\n{goals[0]}", *goals[1:]]
        elif word == "all_goals":
            goals = []
        elif word in CLOSERS:
            goals = goals[1:]
        else:
            return f"<input>:1:0: unknown tactic '{word}'"
    return goals


def run_tactic(request: dict) -> None:
    tactic, state = request["tactic"], request.get("proofState")
    if tactic == "hang":
        time.sleep(3600)
    if tactic == "crash":
        sys.stdout.buffer.write(b'{"proofState": 1, "go')
        sys.stdout.buffer.flush()
        os._exit(7)
    if tactic == "garbage":
        sys.stdout.buffer.write(b"}}} this is not json {{{\n\n")
        sys.stdout.buffer.flush()
        return
    if tactic == "stderr_spam":
        for _ in range(256):
            sys.stderr.buffer.write(b"x" * 4095 + b"\n")
        sys.stderr.buffer.flush()
    if state not in states:
        reply({"message": "Unknown proof state."})
        return
    goals = apply(states[state], tactic)
    if isinstance(goals, str):
        reply({"message": f"Lean error:\n{goals}"})
        return
    out = {"proofState": new_state(goals), "goals": goals,
           "proofStatus": "Completed" if not goals else "Incomplete: open goals remain"}
    reply(out, chunk=3 if tactic == "slow_split" else None)
    if tactic == "double":
        reply(out)


def main() -> None:
    lines: list[str] = []
    for line in sys.stdin:
        if line.strip():
            lines.append(line)
            continue
        if not lines:
            continue
        request = json.loads("".join(lines))
        lines = []
        if "cmd" in request:
            reply(run_cmd(request["cmd"]))
        elif "tactic" in request:
            run_tactic(request)
        else:
            reply({"message": "Could not parse as a valid JSON command"})


if __name__ == "__main__":
    main()
