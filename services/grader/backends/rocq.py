"""Rocq (Coq) backend: splice the block between `Proof.` and `Qed.` of the fixed statement, refuse
anything but tactics, compile, and audit the original theorem with `Print Assumptions`.

Two paths reach the same verdict:
- fresh: one sandboxed `coqc` per answer. The audit runs in the same file after a line only we
  can produce (`Locate verirl_audit_<nonce>`, nonce unknown to the answer); we read the audit
  only after that line, so text the proof prints cannot fake it.
- warm: a leased `coqtop` session with the imports already loaded (see coqtop.py), fed sentence
  by sentence and reset afterwards. A session that breaks mid-answer is killed and the answer is
  regraded on the fresh path, which is the reference.
"""
from __future__ import annotations

import logging
import secrets
import subprocess
import time
from functools import cached_property

from services.grader.backends.base import Backend, trim_feedback
from services.grader.backends.rocq_syntax import (
    RocqSyntaxError, SplicedFile, coqc_error_line, error_message,
    feedback_for_error, forbidden_reason, parse_assumptions, scan, split_statement,
)
from services.grader.coqtop import CoqtopSession, SessionBroken, SessionPool, error_offset
from services.grader.sandbox import Limits, get_sandbox, is_resource_message, workdir
from shared.schemas import GradeMode, Reason, StepVerdict, Task, Verdict
from shared.settings import get_settings

log = logging.getLogger(__name__)


class RocqBackend(Backend):
    name = "rocq"
    fence = "rocq"

    def __init__(self, warm: bool | None = None):
        settings = get_settings()
        self.settings = settings
        self.sandbox = get_sandbox(settings)
        self.limits = Limits.from_settings(settings)
        self.warm = settings.warm_sessions if warm is None else warm
        self.pool = SessionPool(self._new_session)

    @cached_property
    def _version(self) -> str:
        try:
            out = subprocess.run([self.settings.coqc, "--version"], capture_output=True, text=True, timeout=30).stdout
        except OSError:
            return "unavailable"
        return "coqc " + out.split("version", 1)[-1].split()[0] if "version" in out else "unavailable"

    def version(self) -> str:
        return self._version

    def close(self) -> None:
        self.pool.close()

    # -- the check ------------------------------------------------------------------------------

    def check(self, task: Task, block: str, mode: GradeMode = "whole") -> Verdict:
        if not task.statement or not task.theorem:
            return Verdict(passed=False, reason=Reason.sandbox_error, feedback="task has no statement or theorem")
        try:
            spliced = split_statement(task.statement)
            why = forbidden_reason(block)
        except RocqSyntaxError as exc:
            return Verdict(passed=False, reason=Reason.parse, feedback=str(exc))
        except ValueError as exc:
            return Verdict(passed=False, reason=Reason.sandbox_error, feedback=str(exc))
        if why:
            return Verdict(passed=False, reason=Reason.forbidden, feedback=why)
        if self.warm or mode == "steps":
            try:
                return self.check_warm(task, spliced, block, with_steps=mode == "steps")
            except SessionBroken as exc:
                log.info("warm session broke on %s (%s); regrading with a fresh coqc", task.id, exc)
        return self.check_fresh(task, spliced, block)

    def check_fresh(self, task: Task, spliced: SplicedFile, block: str) -> Verdict:
        marker = f"verirl_audit_{secrets.token_hex(12)}"
        source = spliced.with_block(block) + f"\nLocate {marker}.\nPrint Assumptions {task.theorem}.\n"
        with workdir("verirl-rocq-") as work:
            (work / "answer.v").write_text(source)
            result = self.sandbox.run([self.settings.coqc, "-q", "answer.v"], work, self.limits)
        if result.limit_hit == "timeout":
            return self._timeout()
        if result.returncode != 0:
            message = error_message(result.stderr)
            if message is None:
                limited = result.limit_hit or is_resource_message(result.stderr)
                reason = Reason.resource if limited else Reason.sandbox_error
                return Verdict(passed=False, reason=reason,
                               feedback=f"checker stopped (exit {result.returncode}): {result.stderr.strip()[-300:]}")
            line = coqc_error_line(result.stderr, spliced.hole_line, block.count("\n") + 1)
            return self._error(message, line)
        done = f"No object of basename {marker}"
        if done not in result.stdout:
            reason = Reason.resource if result.output_truncated else Reason.sandbox_error
            return Verdict(passed=False, reason=reason, feedback="the proof's output exceeded the limit"
                           if result.output_truncated else "the axiom audit did not run")
        return self._audit(result.stdout.split(done)[-1])

    def check_warm(self, task: Task, spliced: SplicedFile, block: str, with_steps: bool = False) -> Verdict:
        sentences, _ = scan(block)
        deadline = time.monotonic() + self.limits.wall_s
        steps: list[StepVerdict] = []
        with self.pool.lease(spliced.prelude) as session:
            verdict = None
            try:
                verdict = self._run_in_session(session, task, spliced, sentences, deadline, steps, with_steps)
                return verdict.model_copy(update={"steps": steps or None})
            finally:
                # A session that ran out of memory may be left half-working: never reuse it.
                if verdict is not None and verdict.reason == Reason.resource:
                    session.close()
                elif not session.broken:
                    session.reset(time.monotonic() + self.limits.wall_s)

    def _run_in_session(self, session: CoqtopSession, task: Task, spliced: SplicedFile, sentences,
                        deadline: float, steps: list[StepVerdict], with_steps: bool) -> Verdict:
        _, err = session.command(spliced.before.rstrip(), deadline)
        if (message := error_message(err)) is not None:
            return self._error(message, None)
        for index, sentence in enumerate(sentences):
            out, err = session.command(sentence.text, deadline)
            message = error_message(err)
            if with_steps:
                steps.append(StepVerdict(index=index, text=sentence.text, ok=message is None,
                                         message=message or "", goals=_goals(out)))
            if message is not None:
                offset = error_offset(err) or 0
                return self._error(message, sentence.line + sentence.text.count("\n", 0, offset))
        _, err = session.command(spliced.after.rstrip(), deadline)
        if (message := error_message(err)) is not None:
            return self._error(message, None)
        out, _ = session.command(f"Print Assumptions {task.theorem}.", deadline)
        return self._audit(out)

    # -- verdicts -------------------------------------------------------------------------------

    def _new_session(self, prelude: str) -> CoqtopSession:
        return CoqtopSession(prelude, self.sandbox, self.limits, self.settings.coqtop,
                             self.settings.warm_session_max_uses)

    def _error(self, message: str, line: int | None) -> Verdict:
        if is_resource_message(message):
            return Verdict(passed=False, reason=Reason.resource, feedback=f"the checker ran out of resources: {message}")
        return Verdict(passed=False, reason=Reason.compile_error,
                       feedback=trim_feedback(feedback_for_error(message, line), self.settings.feedback_chars))

    def _audit(self, output: str) -> Verdict:
        axioms = parse_assumptions(output)
        if axioms is None:
            return Verdict(passed=False, reason=Reason.sandbox_error, feedback="the axiom audit printed no report")
        if axioms:
            return Verdict(passed=False, reason=Reason.axioms, axioms=axioms,
                           feedback=f"the proof depends on axioms, which are not allowed: {', '.join(axioms)}")
        return Verdict(passed=True, reason=Reason.ok, feedback="")

    def _timeout(self) -> Verdict:
        return Verdict(passed=False, reason=Reason.timeout,
                       feedback=f"the proof did not finish checking within {self.limits.wall_s:g} s")


def _goals(out: str) -> str:
    """The goal display coqtop prints after a tactic, without prompts."""
    lines = [line for line in out.splitlines() if not line.rstrip().endswith(" <") and "Fetching opaque" not in line]
    return "\n".join(lines).strip()
