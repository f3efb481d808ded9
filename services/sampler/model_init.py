"""Build a small causal LM from scratch: a byte-level BPE tokenizer trained on the task corpus and a
Llama-config transformer with random weights, saved so that `AutoTokenizer.from_pretrained(DIR)` and
`AutoModelForCausalLM.from_pretrained(DIR)` load it like any Hugging Face model.

The same `seed` and corpus give byte-identical files.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

BOS, EOS, PAD = "<bos>", "<eos>", "<pad>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")

# Each message is `<|role|>\n{content}<eos>\n`; generation starts after `<|assistant|>\n`, so a
# trained model ends its answer with <eos>, which is the stop token.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

# Used only when no task corpus exists yet: enough Rocq to give the tokenizer its common pieces.
BUILTIN_CORPUS = [
    "Require Import Arith Lia.\n\nTheorem add_0_r : forall n : nat, n + 0 = n.\nProof.\n  intros n. induction n as [| n IH].\n  - reflexivity.\n  - simpl. rewrite IH. reflexivity.\nQed.\n",
    "Theorem mul_comm_example : forall a b : nat, a * b = b * a.\nProof.\n  intros a b. lia.\nQed.\n",
    "Require Import List.\nImport ListNotations.\n\nLemma app_nil_r_example : forall (A : Type) (l : list A), l ++ [] = l.\nProof.\n  intros A l. induction l as [| x xs IH]; simpl.\n  - reflexivity.\n  - rewrite IH. reflexivity.\nQed.\n",
    "Definition square (n : nat) : nat := n * n.\n\nTheorem square_expand : forall x : nat, square (x + 1) = x * x + 2 * x + 1.\nProof.\n  intros x. unfold square. lia.\nQed.\n",
    "Fixpoint sum_to (n : nat) : nat :=\n  match n with\n  | 0 => 0\n  | S k => n + sum_to k\n  end.\n\nTheorem sum_to_closed : forall n, 2 * sum_to n = n * (n + 1).\nProof.\n  induction n as [| k IH]; simpl; lia.\nQed.\n",
    "Theorem and_swap : forall P Q : Prop, P /\\ Q -> Q /\\ P.\nProof.\n  intros P Q [HP HQ]. split.\n  - exact HQ.\n  - exact HP.\nQed.\n",
    "Theorem or_comm_example : forall P Q : Prop, P \\/ Q -> Q \\/ P.\nProof.\n  intros P Q [HP | HQ].\n  - right. assumption.\n  - left. assumption.\nQed.\n",
    "Lemma le_plus_example : forall n m : nat, n <= n + m.\nProof.\n  intros. lia.\nQed.\n",
    "Complete the proof. Reply with the tactics only, in a ```coq block.\n",
    "```coq\nintros n. induction n; simpl; auto.\n```\n",
]


def corpus_texts(paths: Iterable[Path]) -> list[str]:
    """The texts to train the tokenizer on, in a fixed order.

    A `.jsonl` file contributes the `prompt` and `gold` fields of each line; a directory
    contributes every `tasks.jsonl` below it; any other file contributes its whole text.
    Falls back to `BUILTIN_CORPUS` when the paths hold nothing.
    """
    texts: list[str] = []
    for path in paths:
        if path.is_dir():
            texts.extend(corpus_texts(sorted(path.rglob("tasks.jsonl"))))
        elif path.suffix == ".jsonl":
            texts.extend(_jsonl_texts(path))
        else:
            texts.append(path.read_text(encoding="utf-8"))
    return texts or list(BUILTIN_CORPUS)


def _jsonl_texts(path: Path) -> Iterator[str]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        for field in ("prompt", "gold"):
            if isinstance(row.get(field), str) and row[field]:
                yield row[field]


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (any text encodes, nothing is unknown) with <pad>, <bos>, <eos>
    and the chat role tokens; a BOS is prepended when `add_special_tokens` is on."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = [PAD, BOS, EOS, *ROLE_TOKENS]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, tokenizer.token_to_id(BOS))]
        ),
    ])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=list(ROLE_TOKENS),
        chat_template=CHAT_TEMPLATE,
        model_max_length=None,
    )


def init_model(
    out: Path,
    corpus: list[Path],
    *,
    vocab: int = 512,
    hidden: int = 128,
    layers: int = 4,
    heads: int = 4,
    context: int = 1024,
    seed: int = 0,
) -> Path:
    """Write tokenizer and randomly initialised model to `out`; returns `out`."""
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    if hidden % heads:
        raise ValueError(f"--hidden {hidden} is not divisible by --heads {heads}")
    tokenizer = train_tokenizer(corpus_texts(corpus), vocab)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=context,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
