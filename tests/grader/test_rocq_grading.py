"""The Rocq backend end to end on real coqc/coqtop: correct and wrong proofs, resource bombs,
warm sessions agreeing with fresh processes, concurrency, a checker killed mid-answer."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from services.grader import pipeline
from services.grader.backends.rocq import RocqBackend
from services.grader.backends.rocq_syntax import split_statement
from services.grader.pool import LocalPool
from services.grader.sandbox import kill_group
from shared.protocol import fence_block
from shared.schemas import Reason, Task

GOOD = "induction n as [|k IH]; simpl.\n- reflexivity.\n- rewrite IH. lia."


@pytest.fixture(autouse=True)
def fresh_backends():
    yield
    pipeline.shutdown()


def answer(block: str) -> str:
    return fence_block(block, "coq")


def test_rocq_correct_proof_passes_with_clean_audit(rocq_task):
    verdict = pipeline.grade(rocq_task, answer(GOOD), use_cache=False)
    assert verdict.passed and verdict.reason == Reason.ok
    assert verdict.axioms == [] and verdict.backend == "rocq"
    assert verdict.backend_version.startswith("coqc 8.")


def test_rocq_wrong_proof_fails_with_checker_message_and_block_line(rocq_task):
    verdict = pipeline.grade(rocq_task, answer("induction n; simpl.\n- reflexivity.\n- rewrite IHm. lia."),
                             use_cache=False)
    assert verdict.reason == Reason.compile_error
    assert verdict.feedback.startswith("Error at line 3 of your proof:")
    assert "The reference IHm was not found" in verdict.feedback
    assert "File " not in verdict.feedback  # no host paths, only what the model can act on


def test_rocq_incomplete_proof_names_the_end_of_the_proof(rocq_task):
    verdict = pipeline.grade(rocq_task, answer("intros n."), use_cache=False)
    assert verdict.reason == Reason.compile_error
    assert "end of your proof" in verdict.feedback and "incomplete proof" in verdict.feedback


def test_rocq_feedback_is_bounded(rocq_task, monkeypatch):
    monkeypatch.setenv("VERIRL_FEEDBACK_CHARS", "80")
    pipeline.get_settings.cache_clear()
    try:
        verdict = RocqBackend(warm=False).check(rocq_task, "induction n; simpl.\n- exact I.")
    finally:
        pipeline.get_settings.cache_clear()
    assert verdict.reason == Reason.compile_error and len(verdict.feedback) <= 80


@pytest.fixture
def tight_limits(monkeypatch):
    monkeypatch.setenv("VERIRL_GRADE_MEMORY_MB", "768")
    monkeypatch.setenv("VERIRL_GRADE_OUTPUT_BYTES", "200000")
    pipeline.get_settings.cache_clear()
    pipeline.shutdown()
    yield
    pipeline.shutdown()
    pipeline.get_settings.cache_clear()


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
@pytest.mark.parametrize("block,reason,wall_s", [
    pytest.param("do 100000000 idtac.", Reason.timeout, 4, id="nonterminating_tactic_loop"),
    pytest.param("intros. pose (x := Nat.pow 10 9). vm_compute in x. lia.", Reason.resource, 120,
                 id="memory_bomb_huge_unary_number"),
    pytest.param("let rec f x := f x in f 0.", Reason.resource, 120, id="runaway_recursion_in_ltac"),
    pytest.param('do 100000 idtac "' + "a" * 60 + '". ' + GOOD, Reason.resource, 120, id="output_flood_from_idtac"),
])
def test_rocq_resource_bomb_is_killed_and_next_grade_works(rocq_task, tight_limits, warm, block, reason, wall_s):
    backend = RocqBackend(warm=warm)
    backend.limits = backend.limits.scaled(wall_s=wall_s)
    try:
        bomb = backend.check(rocq_task, block)
        # The point is that the same backend still grades afterwards, so give it room.
        backend.limits = backend.limits.scaled(wall_s=120)
        after = backend.check(rocq_task, GOOD)
    finally:
        backend.close()
    assert bomb.reason == reason and not bomb.passed, bomb.feedback
    assert after.passed, after.feedback


def test_rocq_warm_session_does_not_leak_state_between_answers():
    # Two tasks that define the same name differently: a session reset between them must forget
    # the first definition, or the second task would fail with "already exists".
    first = Task(id="t/leak/1", lang="rocq", theorem="leak_a", statement=(
        "Definition shared_name := 1.\nTheorem leak_a : shared_name = 1.\nProof.\n{{PROOF}}\nQed.\n"))
    second = Task(id="t/leak/2", lang="rocq", theorem="leak_a", statement=(
        "Definition shared_name := 2.\nTheorem leak_a : shared_name = 2.\nProof.\n{{PROOF}}\nQed.\n"))
    backend = RocqBackend(warm=True)
    try:
        failed = backend.check(first, "simpl. exact I.")  # fails mid-proof, leaving a proof open
        ok_first = backend.check(first, "reflexivity.")
        ok_second = backend.check(second, "reflexivity.")
        assert backend.pool.created == 1  # one session served all three
    finally:
        backend.close()
    assert failed.reason == Reason.compile_error
    assert ok_first.passed and ok_second.passed, ok_second.feedback


def test_rocq_steps_mode_reports_each_tactic_with_goals(rocq_task):
    verdict = pipeline.grade(rocq_task, answer("intros n.\ninduction n as [|k IH].\n- reflexivity.\n- simpl. lia."),
                             mode="steps", use_cache=False)
    assert verdict.passed
    assert [s.ok for s in verdict.steps] == [True] * 5
    assert "dblq7 n = 2 * n" in verdict.steps[0].goals


def test_rocq_steps_mode_marks_the_failing_step(rocq_task):
    verdict = pipeline.grade(rocq_task, answer("intros n.\nexact I.\nreflexivity."), mode="steps", use_cache=False)
    assert not verdict.passed
    assert [s.ok for s in verdict.steps] == [True, False]
    assert "exact I" in verdict.steps[1].text and verdict.steps[1].message


# --- warm sessions agree with fresh processes --------------------------------------------------

NO_IMPORT_TASKS = [
    Task(id=f"t/corpus/{i}", lang="rocq", theorem=f"corpus_{i}", statement=statement)
    for i, statement in enumerate([
        "Fixpoint addz (a b : nat) : nat := match a with 0 => b | S k => S (addz k b) end.\n"
        "Theorem corpus_0 : forall n, addz n 0 = n.\nProof.\n{{PROOF}}\nQed.\n",
        "Definition twice (f : nat -> nat) (x : nat) := f (f x).\n"
        "Theorem corpus_1 : twice S 3 = 5.\nProof.\n{{PROOF}}\nQed.\n",
        "Inductive tr := Lf | Nd (l : tr) (r : tr).\n"
        "Fixpoint mir (t : tr) := match t with Lf => Lf | Nd l r => Nd (mir r) (mir l) end.\n"
        "Theorem corpus_2 : forall t, mir (mir t) = t.\nProof.\n{{PROOF}}\nQed.\n",
    ])
]
CORPUS_BLOCKS = [
    "induction n as [|k IH]; simpl; [reflexivity | rewrite IH; reflexivity].",  # passes task 0
    "reflexivity.",  # passes task 1 only
    "induction t as [|l IHl r IHr]; simpl; [reflexivity | rewrite IHl, IHr; reflexivity].",  # task 2
    "intros. reflexivity.",
    "induction n; simpl.\n- reflexivity.\n- rewrite IHn.\n  reflexivity.",
    "simpl. exact eq_refl.",
    "intros t. destruct t; simpl; auto.",
    "auto.",
    "apply foo.",
    "(* nothing *)",
    "intros n. induction n as [|k IH].\n+ reflexivity.\n+ simpl. f_equal. exact IH.",
    "admit.",
    "Qed.",
    "split.",
    "intros. { reflexivity. }",
]


def corpus(n: int) -> list[tuple[Task, str]]:
    jobs = []
    for i in range(n):
        task = NO_IMPORT_TASKS[i % len(NO_IMPORT_TASKS)]
        block = CORPUS_BLOCKS[(i // len(NO_IMPORT_TASKS) + i) % len(CORPUS_BLOCKS)]
        jobs.append((task, answer(block) if i % 17 else block))  # every 17th lacks its fence
    return jobs


def test_rocq_200_answers_8_at_a_time_through_warm_pool_equal_fresh_one_at_a_time():
    jobs = corpus(200)
    fresh_backend = RocqBackend(warm=False)
    fresh = []
    for task, raw in jobs:
        block = fresh_backend.extract(raw)
        fresh.append(block if not isinstance(block, str) else fresh_backend.check(task, block))
    with LocalPool(workers=8) as pool:  # the pipeline's backend: warm sessions (the default)
        warm = [v for v in pool.grade_many(jobs)]
    assert pipeline.get_backend("rocq").warm
    key = lambda v: (v.passed, v.reason, v.feedback, v.axioms)  # noqa: E731
    assert [key(v) for v in warm] == [key(v) for v in fresh]
    assert sum(v.passed for v in fresh) >= 20 and sum(not v.passed for v in fresh) >= 100


def test_rocq_checker_killed_mid_answer_is_replaced_and_answer_regraded(rocq_task):
    backend = RocqBackend(warm=True)
    slow_but_correct = "do 3000000 idtac.\n" + GOOD
    killed = []

    def kill_when_busy():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            for session in list(backend.pool.leased):
                kill_group(session._proc)
                killed.append(session)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    try:
        verdict = backend.check(rocq_task, slow_but_correct)
        after = backend.check(rocq_task, GOOD)
    finally:
        killer.join()
        backend.close()
    assert killed, "the checker was never seen busy"
    assert killed[0].broken
    assert verdict.passed, verdict.feedback  # regraded on the fresh path
    assert after.passed and backend.pool.created >= 2  # a new session replaced the dead one


def test_rocq_concurrent_threads_share_one_backend_safely(rocq_task):
    with ThreadPoolExecutor(4) as ex:
        verdicts = list(ex.map(lambda b: pipeline.grade(rocq_task, answer(b), use_cache=False),
                               [GOOD, "intros.", GOOD, "apply nope."] * 3))
    assert [v.passed for v in verdicts] == [True, False, True, False] * 3


def test_rocq_statement_split_keeps_imports_as_session_prelude(rocq_task):
    spliced = split_statement(rocq_task.statement)
    assert spliced.prelude.strip() == "Require Import Arith Lia."
    assert spliced.before.rstrip().endswith("Proof.") and spliced.after.strip() == "Qed."
    assert spliced.with_block("X").splitlines()[spliced.hole_line - 1] == "X"


# --- the verdict cache -----------------------------------------------------------------------

def test_rocq_verdict_cache_answers_identical_requests(rocq_task):
    first = pipeline.grade(rocq_task, answer(GOOD))
    second = pipeline.grade(rocq_task, answer(GOOD))
    other = pipeline.grade(rocq_task.model_copy(update={"id": "test/double/0002"}), answer(GOOD))
    assert not first.cached and second.cached and not other.cached
    assert second.model_dump(exclude={"cached", "elapsed_s"}) == first.model_dump(exclude={"cached", "elapsed_s"})


def test_rocq_verdict_cache_on_disk_survives_a_new_process_cache(rocq_task, tmp_path):
    from services.grader.cache import VerdictCache, cache_key

    key = cache_key(rocq_task, answer(GOOD), "whole", "coqc test")
    verdict = pipeline.grade(rocq_task, answer(GOOD), use_cache=False)
    VerdictCache(tmp_path).put(key, verdict)
    hit = VerdictCache(tmp_path).get(key)
    assert hit is not None and hit.cached and hit.passed
