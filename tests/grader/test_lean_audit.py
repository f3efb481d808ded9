"""Reading the `#print axioms` report out of `lean --json` output, including output forged by the
answer. No Lean toolchain can be installed here: the message lines below have the shape real
`lean --json` prints (one JSON object per message, `pos.line` 1-based, `pos.column` 0-based)."""
from __future__ import annotations

import json

import pytest

from services.grader.backends.lean_syntax import (
    AuditError, audit_commands, parse_axiom_report, parse_messages, read_audit,
)

NONCE = "5f0c3a9e1b2d4c6a8e0f1a2b3c4d5e6f"
THEOREM = "revr17_length"
AUDIT = 20  # the line of `#print "<nonce>-BEGIN"`; the report is on 21, the end frame on 22


def message(line: int, data: str, severity: str = "information", column: int = 0) -> str:
    return json.dumps({
        "caption": "", "data": data, "endPos": {"column": column + 6, "line": line},
        "fileName": "Answer.lean", "isSilent": False, "keepFullRange": False, "kind": "[anonymous]",
        "pos": {"column": column, "line": line}, "severity": severity,
    }, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def framed(report: str, nonce: str = NONCE, first: int = AUDIT) -> list[str]:
    return [message(first, f"{nonce}-BEGIN"), message(first + 1, report), message(first + 2, f"{nonce}-END")]


def audit(lines: list[str]) -> list[str]:
    return read_audit(parse_messages("\n".join(lines) + "\n"), AUDIT, NONCE, THEOREM)


def test_lean_audit_reads_allowed_axioms_from_genuine_frame():
    lines = framed(f"'{THEOREM}' depends on axioms: [propext, Classical.choice, Quot.sound]")
    assert audit(lines) == ["propext", "Classical.choice", "Quot.sound"]


def test_lean_audit_reads_axiom_free_report():
    assert audit(framed(f"'{THEOREM}' does not depend on any axioms")) == []


def test_lean_audit_reads_report_wrapped_over_several_lines():
    report = f"'{THEOREM}' depends on axioms: [propext,\n Classical.choice,\n Quot.sound,\n sorryAx]"
    assert audit(framed(report)) == ["propext", "Classical.choice", "Quot.sound", "sorryAx"]


def test_lean_audit_surfaces_sorryAx():
    assert audit(framed(f"'{THEOREM}' depends on axioms: [sorryAx]")) == ["sorryAx"]


def test_lean_audit_ignores_report_forged_by_trace_inside_the_proof():
    # The answer's `trace` message carries the position of the trace, inside the proof (line 7).
    forged = message(7, f"'{THEOREM}' does not depend on any axioms", column=2)
    assert audit([forged, *framed(f"'{THEOREM}' depends on axioms: [sorryAx]")]) == ["sorryAx"]


def test_lean_audit_ignores_nonce_frame_guessed_inside_the_proof():
    guess = framed(f"'{THEOREM}' does not depend on any axioms", nonce="0" * 32, first=7)
    assert audit([*guess, *framed(f"'{THEOREM}' depends on axioms: [sorryAx]")]) == ["sorryAx"]


def test_lean_audit_forged_raw_line_at_audit_position_makes_report_ambiguous():
    # Even a line written straight to stdout with the audit's own position cannot pass: it adds a
    # second message at the frame's lines.
    forged = message(AUDIT + 1, f"'{THEOREM}' does not depend on any axioms")
    with pytest.raises(AuditError) as exc:
        audit([forged, *framed(f"'{THEOREM}' depends on axioms: [sorryAx]")])
    assert exc.value.kind == "ambiguous"


def test_lean_audit_forged_full_frame_without_the_nonce_is_refused():
    with pytest.raises(AuditError) as exc:
        audit(framed(f"'{THEOREM}' does not depend on any axioms", nonce="deadbeef" * 4))
    assert exc.value.kind == "ambiguous"


def test_lean_audit_frame_interrupted_by_other_output_is_refused():
    lines = framed(f"'{THEOREM}' does not depend on any axioms")
    lines.insert(2, message(7, "interleaved"))
    with pytest.raises(AuditError):
        audit(lines)


def test_lean_audit_report_for_another_declaration_is_refused():
    with pytest.raises(AuditError) as exc:
        audit(framed("'helper' does not depend on any axioms"))
    assert exc.value.kind == "ambiguous"


def test_lean_audit_report_with_error_severity_is_refused():
    lines = framed(f"'{THEOREM}' does not depend on any axioms")
    lines[1] = message(AUDIT + 1, f"'{THEOREM}' does not depend on any axioms", severity="error")
    with pytest.raises(AuditError):
        audit(lines)


def test_lean_audit_missing_report_is_reported_as_missing():
    with pytest.raises(AuditError) as exc:
        audit([message(7, "unrelated")])
    assert exc.value.kind == "missing"


def test_lean_audit_parse_messages_skips_non_json_and_malformed_lines():
    stdout = "\n".join(["plain text", "{not json", '{"severity": "error"}', message(3, "kept"), ""])
    (kept,) = parse_messages(stdout)
    assert (kept.line, kept.column, kept.text) == (3, 0, "kept")


def test_lean_audit_report_names_match_namespaced_theorem():
    assert parse_axiom_report("'Q.t' depends on axioms: [propext]", "t") == ["propext"]
    assert parse_axiom_report("'Q.t' depends on axioms: [propext]", "Q.t") == ["propext"]
    assert parse_axiom_report("'Q.tt' depends on axioms: [propext]", "t") is None


def test_lean_audit_commands_frame_the_report_with_the_nonce():
    assert audit_commands("thm", "abc").splitlines() == ['#print "abc-BEGIN"', "#print axioms thm", '#print "abc-END"']
