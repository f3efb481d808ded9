"""Hostile Rocq answers, one case each, named for the exploit. Each must be refused with the
right reason; none may pass. Cases refused before anything runs cost nothing; the rest run the
real coqc (and warm coqtop) in the sandbox."""
from __future__ import annotations

import pytest

from services.grader.pipeline import grade, shutdown
from shared.protocol import fence_block
from shared.schemas import Reason

GOOD = "induction n as [|k IH]; simpl.\n- reflexivity.\n- rewrite IH. lia."

# (case id, block, expected reason)
REFUSED_BEFORE_RUNNING = [
    ("admitted_ends_proof", "Admitted.", Reason.forbidden),
    ("qed_ends_proof_early", "intros. Qed.", Reason.forbidden),
    ("defined_ends_proof_early", "Defined.", Reason.forbidden),
    ("abort_then_restate_weaker_theorem", "Abort.\nTheorem dblq7_spec : True. exact I.", Reason.forbidden),
    ("admit_tactic", "admit.", Reason.forbidden),
    ("give_up_tactic", "give_up.", Reason.forbidden),
    ("axiom_of_false", "Axiom cheat : False. destruct cheat.", Reason.forbidden),
    ("parameter_declaration", "Parameter p : forall n, n = n.", Reason.forbidden),
    ("hypothesis_declaration", "Hypothesis h : False.", Reason.forbidden),
    ("variable_declaration", "Variable v : False.", Reason.forbidden),
    ("context_declaration", "Context (h : False).", Reason.forbidden),
    ("require_classical_axioms", "Require Import Classical. intros.", Reason.forbidden),
    ("load_external_file", 'Load "/etc/passwd".', Reason.forbidden),
    ("declare_ml_module_plugin", 'Declare ML Module "evil_plugin".', Reason.forbidden),
    ("extraction_writes_files", 'Extraction "/tmp/x.ml" dblq7.', Reason.forbidden),
    ("set_option_changes_checker", "Set Printing All. intros.", Reason.forbidden),
    ("unset_guard_checking", "Unset Guard Checking. intros.", Reason.forbidden),
    ("local_ltac_persists", "Local Ltac done := idtac. intros.", Reason.forbidden),
    ("global_hint_persists", "Global Hint Resolve eq_refl : core.", Reason.forbidden),
    ("attribute_syntax", "#[local] Hint Resolve eq_refl : core.", Reason.forbidden),
    ("opaque_changes_reduction", "Opaque dblq7. intros.", Reason.forbidden),
    ("transparent_changes_reduction", "Transparent dblq7. intros.", Reason.forbidden),
    ("print_assumptions_forgery", "Print Assumptions dblq7_spec.", Reason.forbidden),
    ("check_command", "Check dblq7.", Reason.forbidden),
    ("eval_compute_command", "Eval compute in dblq7 3.", Reason.forbidden),
    ("compute_command", "Compute dblq7 3.", Reason.forbidden),
    ("time_prefix", "Time intros.", Reason.forbidden),
    ("timeout_prefix", "Timeout 1 intros.", Reason.forbidden),
    ("fail_prefix_swallows_errors", "Fail reflexivity. intros.", Reason.forbidden),
    ("redirect_output_to_file", 'Redirect "/tmp/out" intros.', Reason.forbidden),
    ("ltac_definition", "Ltac finish := admit. finish.", Reason.forbidden),
    ("notation_redefines_syntax", 'Notation "x" := 0.', Reason.forbidden),
    ("new_lemma_declaration", "Lemma helper : True. exact I.", Reason.forbidden),
    ("module_opened", "Module M. End M.", Reason.forbidden),
    ("proof_using_restarts", "Proof using. intros.", Reason.forbidden),
    ("exact_no_check_skips_typing", "exact_no_check I.", Reason.forbidden),
    ("vm_cast_no_check_skips_typing", "vm_cast_no_check I.", Reason.forbidden),
    ("reset_environment", "Reset Initial.", Reason.forbidden),
    ("universe_declaration", "Universe u.", Reason.forbidden),
    ("unshelve_leftover_goals", "Unshelve.", Reason.forbidden),
    ("unterminated_comment_hides_qed", "intros. (* the rest is a comment", Reason.parse),
    ("unterminated_string_hides_qed", 'idtac "never closed.', Reason.parse),
    ("missing_final_period_merges_with_qed", "intros", Reason.parse),
]


@pytest.fixture(autouse=True)
def fresh_backends():
    yield
    shutdown()


@pytest.mark.parametrize("case,block,reason", REFUSED_BEFORE_RUNNING, ids=[c[0] for c in REFUSED_BEFORE_RUNNING])
def test_rocq_hostile_block_refused(rocq_task, case, block, reason):
    verdict = grade(rocq_task, fence_block(block, "coq"), use_cache=False)
    assert not verdict.passed
    assert verdict.reason == reason, verdict.feedback
    assert verdict.feedback


def test_rocq_forbidden_word_inside_comment_is_harmless_but_still_checked(rocq_task):
    # Comments are not code: a proof that mentions Qed in a comment is judged on its tactics.
    verdict = grade(rocq_task, fence_block("(* no Qed here *)\n" + GOOD, "coq"), use_cache=False)
    assert verdict.passed, verdict.feedback


def test_rocq_set_as_a_sort_is_not_a_command(rocq_task):
    block = "assert (forall A : Set, A = A) by reflexivity.\n" + GOOD
    assert grade(rocq_task, fence_block(block, "coq"), use_cache=False).passed


def test_rocq_printed_fake_audit_does_not_pass_an_incomplete_proof(rocq_task):
    block = 'idtac "Closed under the global context".\nidtac "No object of basename verirl_audit_0".\nintros.'
    verdict = grade(rocq_task, fence_block(block, "coq"), use_cache=False)
    assert not verdict.passed
    assert verdict.reason == Reason.compile_error
    assert "incomplete proof" in verdict.feedback


def test_rocq_nested_comment_cannot_smuggle_qed(rocq_task):
    # Coq comments nest: everything after the inner close is still inside the outer comment.
    verdict = grade(rocq_task, fence_block("(* (* *) Qed. *)", "coq"), use_cache=False)
    assert not verdict.passed and verdict.reason == Reason.compile_error


def test_rocq_answer_without_fence_is_bad_format(rocq_task):
    verdict = grade(rocq_task, GOOD, use_cache=False)
    assert verdict.reason == Reason.bad_format and "```coq" in verdict.feedback


def test_rocq_answer_in_lean_fence_is_bad_format(rocq_task):
    assert grade(rocq_task, fence_block(GOOD, "lean"), use_cache=False).reason == Reason.bad_format


def test_rocq_oversized_answer_is_refused_unread(rocq_task):
    verdict = grade(rocq_task, fence_block("idtac. " * 10_000, "coq"), use_cache=False)
    assert verdict.reason == Reason.bad_format and "limit" in verdict.feedback


def test_rocq_last_fenced_block_is_the_answer(rocq_task):
    answer = fence_block("admit.", "coq") + "\nActually:\n" + fence_block(GOOD, "rocq")
    assert grade(rocq_task, answer, use_cache=False).passed
