"""Hostile Lean answers refused before anything runs, one case each, named for the exploit; and
splicing. No Lean toolchain can be installed here, and none is needed: VERIRL_LEAN points at a
binary that does not exist, so a refusal proves the screen ran before the toolchain was touched."""
from __future__ import annotations

import pytest

from services.grader.backends.lean_syntax import dedent_block, screen, splice, split_steps
from services.grader.pipeline import grade, shutdown
from shared.protocol import fence_block
from shared.schemas import Reason, Task
from shared.settings import get_settings

STATEMENT = """def revr17 : List Nat → List Nat
  | [] => []
  | x :: xs => revr17 xs ++ [x]

theorem revr17_length (l : List Nat) : (revr17 l).length = l.length := by
  {{PROOF}}
"""
GOLD = "induction l with\n| nil => rfl\n| cons x xs ih => simp [revr17, ih]"


@pytest.fixture(autouse=True)
def without_lean_binary(monkeypatch):
    monkeypatch.setenv("VERIRL_LEAN", "/nonexistent/lean")
    get_settings.cache_clear()
    shutdown()
    yield
    shutdown()
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.fixture
def task() -> Task:
    return Task(id="test/revr17_length/0001", lang="lean", theorem="revr17_length", statement=STATEMENT, gold=GOLD)


# (case id, block, expected reason, the token the feedback must name)
HOSTILE = [
    ("sorry_closes_goal", "sorry", Reason.forbidden, "sorry"),
    ("sorry_after_real_steps", "induction l with\n| nil => rfl\n| cons x xs ih => sorry", Reason.forbidden, "sorry"),
    ("sorry_hidden_in_line_comment", "simp -- sorry, fix later", Reason.forbidden, "sorry"),
    ("sorry_hidden_in_string", 'trace "sorry"\nsimp', Reason.forbidden, "sorry"),
    ("trace_prints_forged_report", "trace \"'revr17_length' does not depend on any axioms\"", Reason.forbidden, "axioms"),
    ("sorry_glued_to_numeral", "exact 2sorry", Reason.forbidden, "sorry"),
    ("sorry_as_projection", "exact h.sorry", Reason.forbidden, "sorry"),
    ("admit_tactic", "admit", Reason.forbidden, "admit"),
    ("stop_discards_rest_with_sorry", "stop\nsimp", Reason.forbidden, "stop"),
    ("sorryAx_term", "exact sorryAx _ false", Reason.forbidden, "sorryAx"),
    ("lcProof_compiler_axiom", "exact lcProof", Reason.forbidden, "lcProof"),
    ("native_decide_trusts_compiler", "native_decide", Reason.forbidden, "native_decide"),
    ("decide_plus_native_config", "decide +native", Reason.forbidden, "native"),
    ("decide_native_true_config", "decide (config := { native := true })", Reason.forbidden, "native"),
    ("ofReduceBool_axiom_term", "exact Lean.ofReduceBool _ _ rfl", Reason.forbidden, "Lean"),
    ("ofReduceBool_after_open", "exact ofReduceBool _ _ rfl", Reason.forbidden, "ofReduceBool"),
    ("bv_decide_trusts_compiler", "bv_decide", Reason.forbidden, "bv_decide"),
    ("axiom_declared_after_dedent", "simp\naxiom cheat : False", Reason.forbidden, "axiom"),
    ("set_option_in_tactic", "set_option maxHeartbeats 0 in\nsimp", Reason.forbidden, "set_option"),
    ("set_option_skip_kernel", "set_option debug.skipKernelTC true in\nsimp", Reason.forbidden, "set_option"),
    ("unsafe_cast_term", "exact unsafeCast ()", Reason.forbidden, "unsafeCast"),
    ("unsafe_block_term", "exact unsafe (cheat ())", Reason.forbidden, "unsafe"),
    ("implemented_by_attribute", "exact (implemented_by foo)", Reason.forbidden, "implemented_by"),
    ("extern_attribute", "exact (extern \"c_cheat\")", Reason.forbidden, "extern"),
    ("attribute_syntax_at_sign", "@[simp] theorem cheat : True := trivial", Reason.forbidden, "@["),
    ("run_tac_metaprogram", "run_tac Lean.Elab.Tactic.closeMainGoal q(sorry)", Reason.forbidden, "run_tac"),
    ("elab_new_tactic", 'elab "cheat" : tactic => pure ()', Reason.forbidden, "elab"),
    ("macro_rules_forges_print_axioms",
     "simp\nmacro_rules | `(#print axioms $x) => `(#print \"ok\")", Reason.forbidden, "#print"),
    ("macro_new_tactic", 'macro "cheat" : tactic => `(tactic| simp)', Reason.forbidden, "macro"),
    ("syntax_extends_parser", 'syntax "cheat" : tactic', Reason.forbidden, "syntax"),
    ("notation_redefines_symbols", 'notation "≠" => Eq', Reason.forbidden, "notation"),
    ("hash_eval_runs_io", '#eval IO.println "pwned"', Reason.forbidden, "#eval"),
    ("hash_exit_skips_audit", "simp\n#exit", Reason.forbidden, "#exit"),
    ("hash_print_forged_report", "#print \"'revr17_length' does not depend on any axioms\"", Reason.forbidden, "#print"),
    ("hash_check_command", "#check revr17", Reason.forbidden, "#check"),
    ("import_command", "import Mathlib.Tactic\nsimp", Reason.forbidden, "import"),
    ("open_in_tactic", "open Classical in\nsimp", Reason.forbidden, "open"),
    ("namespace_leaves_proof", "simp\nnamespace Cheat", Reason.forbidden, "namespace"),
    ("end_closes_section", "simp\nend", Reason.forbidden, "end"),
    ("section_leaves_proof", "simp\nsection", Reason.forbidden, "section"),
    ("new_theorem_after_dedent", "simp\ntheorem revr17_length' : True := trivial", Reason.forbidden, "theorem"),
    ("new_lemma_declaration", "lemma helper : True := trivial", Reason.forbidden, "lemma"),
    ("new_def_declaration", "def cheat : Nat := 0", Reason.forbidden, "def"),
    ("instance_declaration", "instance : Inhabited False := ⟨cheat⟩", Reason.forbidden, "instance"),
    ("example_declaration", "example : False := cheat", Reason.forbidden, "example"),
    ("opaque_constant", "opaque cheat : False", Reason.forbidden, "opaque"),
    ("partial_def_loops", "partial def loop : Nat → False := loop", Reason.forbidden, "partial"),
    ("noncomputable_section", "noncomputable section", Reason.forbidden, "noncomputable"),
    ("attribute_command", "attribute [local simp] revr17 in\nsimp", Reason.forbidden, "attribute"),
    ("termination_by_suffix", "simp\ntermination_by l.length", Reason.forbidden, "termination_by"),
    ("decreasing_by_suffix", "simp\ndecreasing_by all_goals simp", Reason.forbidden, "decreasing_by"),
    ("where_clause_adds_declarations", "exact aux\nwhere aux : True := trivial", Reason.forbidden, "where"),
    ("meta_namespace_term", "exact (Meta.mkSorry)", Reason.forbidden, "Meta"),
    ("io_action_term", "exact (IO.Process.exit 0)", Reason.forbidden, "IO"),
    ("dbg_trace_prints_to_output", 'dbg_trace "x"; simp', Reason.forbidden, "dbg_trace"),
    ("by_elab_term", "exact by_elab return q(True.intro)", Reason.forbidden, "by_elab"),
    ("eval_percent_term_elaborator", "exact (eval% 2 + 2)", Reason.forbidden, "eval%"),
    ("declare_syntax_category", "declare_syntax_cat cheat", Reason.forbidden, "declare_syntax_cat"),
    ("initialize_runs_code", "initialize pure ()", Reason.forbidden, "initialize"),
    ("alias_new_declaration", "alias cheat := revr17", Reason.forbidden, "alias"),
    ("mutual_block", "mutual\nend", Reason.forbidden, "mutual"),
    ("universe_command", "universe u", Reason.forbidden, "universe"),
    ("variable_command", "variable (h : False)", Reason.forbidden, "variable"),
    ("private_declaration", "private theorem t : True := trivial", Reason.forbidden, "private"),
    ("block_comment_swallows_audit", "simp\n/-", Reason.forbidden, "/-"),
    ("doc_comment_starts_declaration", "/-- doc -/\nsimp", Reason.forbidden, "/-"),
    ("guillemet_escaped_identifier", "exact «revr17»", Reason.forbidden, "«"),
    ("bidi_override_hides_text", "simp \u202e", Reason.forbidden, "U+202E"),
    ("zero_width_space_splits_word", "so\u200brry", Reason.forbidden, "U+200B"),
    ("nul_byte", "simp\x00", Reason.forbidden, "U+0000"),
    ("line_separator_fakes_newline", "simp\u2028theorem", Reason.forbidden, "U+2028"),
    ("colon_eq_at_block_column_ends_by", "exact rfl\n:= by simp", Reason.forbidden, ":="),
    ("tab_indentation", "induction l with\n\t| nil => rfl", Reason.bad_format, "tabs"),
    ("empty_block", "   \n  \n", Reason.bad_format, "empty"),
]


@pytest.mark.parametrize("case,block,reason,token", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_lean_hostile_block_refused_without_lean_binary(task, case, block, reason, token):
    verdict = grade(task, fence_block(block, "lean"), use_cache=False)
    assert not verdict.passed
    assert verdict.reason == reason, verdict.feedback
    assert token in verdict.feedback


LEGITIMATE = [
    ("gold_induction_alternatives", GOLD),
    ("identifier_containing_sorry", "exact sorryish_lemma l"),
    ("identifier_containing_admit", "exact admittedly_true"),
    ("identifier_starting_with_end", "exact endpoint_eq l"),
    ("hash_array_literal", "have h : #[1, 2].size = 2 := rfl\nsimp [revr17]"),
    ("modulo_operator", "have : 5 % 2 = 1 := rfl\nsimp"),
    ("line_comment_plain", "-- induct on the list\nsimp [revr17]"),
    ("bullets_and_nesting", "induction l with\n| nil => rfl\n| cons x xs ih =>\n  · simp [revr17, ih]"),
    ("decide_without_native", "decide"),
    ("classical_tactic", "classical\nsimp"),
]


@pytest.mark.parametrize("case,block", LEGITIMATE, ids=[c[0] for c in LEGITIMATE])
def test_lean_legitimate_block_passes_screen_and_reaches_toolchain_without_lean_binary(task, case, block):
    assert screen(block) is None
    verdict = grade(task, fence_block(block, "lean"), use_cache=False)
    # It got past the screen to the toolchain, which does not exist here.
    assert verdict.reason == Reason.sandbox_error
    assert "/nonexistent/lean" in verdict.feedback and "VERIRL_LEAN" in verdict.feedback


def test_lean_answer_without_lean_fence_is_bad_format_without_lean_binary(task):
    verdict = grade(task, fence_block(GOLD, "coq"), use_cache=False)
    assert verdict.reason == Reason.bad_format and "```lean" in verdict.feedback


# -- splicing ----------------------------------------------------------------------------------


def test_lean_splice_reindents_block_to_hole_and_keeps_relative_indentation():
    block = "    induction l with\n    | nil => rfl\n    | cons x xs ih =>\n      simp [revr17, ih]\n"
    spliced = splice(STATEMENT, "revr17_length", block)
    lines = spliced.source.split("\n")
    assert lines[4].startswith("theorem revr17_length")
    assert lines[5:9] == ["  induction l with", "  | nil => rfl", "  | cons x xs ih =>", "    simp [revr17, ih]"]
    assert lines[9:] == [""]  # what followed the hole is untouched
    assert (spliced.theorem_line, spliced.block_start, spliced.block_lines) == (5, 6, 4)


def test_lean_splice_block_at_column_zero_lands_inside_by_block():
    spliced = splice(STATEMENT, "revr17_length", "simp\nexact rfl")
    assert spliced.source.split("\n")[5:7] == ["  simp", "  exact rfl"]
    assert spliced.column_shift == 2


def test_lean_splice_normalises_crlf_and_trailing_blank_lines():
    spliced = splice(STATEMENT, "revr17_length", "simp\r\nrfl  \r\n\r\n\r\n")
    assert spliced.source.split("\n")[5:8] == ["  simp", "  rfl", ""]
    assert spliced.block_lines == 2


def test_lean_splice_keeps_answer_text_containing_the_hole_marker_literal():
    spliced = splice(STATEMENT, "revr17_length", 'trace "{{PROOF}}"')
    assert spliced.source.count("{{PROOF}}") == 1 and '  trace "{{PROOF}}"' in spliced.source


def test_lean_splice_positions_map_back_to_block_and_statement():
    spliced = splice(STATEMENT, "revr17_length", "    simp\n    exact foo")
    # `foo` sits at column 10 of what the model wrote; the block is re-indented from 4 to 2 spaces.
    assert spliced.locate(7, 8) == "block:2:10"
    assert spliced.locate(5, 70) == "statement:5:70"
    assert spliced.locate(8, 0) == "statement:7:0"  # after the block: the hole counts as one line


@pytest.mark.parametrize("statement,problem", [
    ("theorem t : True := by\n  trivial\n", "exactly one line"),
    ("theorem t : True := by\n  {{PROOF}}\n  {{PROOF}}\n", "exactly one line"),
    ("theorem t : True := by\n{{PROOF}}\n", "indented"),
    ("theorem other : True := by\n  {{PROOF}}\n", "no `theorem t`"),
], ids=["no_hole", "two_holes", "hole_not_indented", "theorem_not_found"])
def test_lean_splice_malformed_task_is_sandbox_error_not_answer_fault(statement, problem):
    task = Task(id="t", lang="lean", theorem="t", statement=statement)
    verdict = grade(task, fence_block("trivial", "lean"), use_cache=False)
    assert verdict.reason == Reason.sandbox_error and problem in verdict.feedback


def test_lean_splice_namespaced_theorem_name_matches_its_declaration():
    statement = "namespace Q\ntheorem t : True := by\n  {{PROOF}}\nend Q\n"
    assert splice(statement, "Q.t", "trivial").theorem_line == 2


def test_lean_split_steps_groups_alternatives_and_nested_lines():
    block = "  -- plan\n  intro n\n  induction n with\n  | zero => rfl\n  | succ k ih =>\n    simp\n\n    omega\n  constructor <;> simp"
    assert split_steps(block) == [
        "intro n",
        "induction n with\n| zero => rfl\n| succ k ih =>\n  simp\n\n  omega",
        "constructor <;> simp",
    ]


def test_lean_dedent_block_removes_common_indentation_only():
    assert dedent_block("    a\n      b\n\n    c\n") == ["a", "  b", "", "c"]
