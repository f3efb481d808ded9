"""`verirl model init`: a tokenizer and a from-scratch model any Hugging Face loader accepts."""
from __future__ import annotations

import json

from services.cli import main


def test_model_init_writes_a_loadable_model_deterministically(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    corpus = tmp_path / "tasks.jsonl"
    corpus.write_text("\n".join(json.dumps({"prompt": f"Theorem t{i} : {i} + 0 = {i}.", "gold": "lia."})
                                for i in range(50)))
    args = ["model", "init", "--corpus", str(corpus), "--vocab", "300", "--hidden", "32", "--layers", "2",
            "--heads", "2", "--context", "128", "--seed", "4"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name

    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "a")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "a")
    assert len(tokenizer) <= 300 and model.config.vocab_size == len(tokenizer)
    assert model.config.hidden_size == 32 and model.config.num_hidden_layers == 2
    assert model.config.max_position_embeddings == 128
    ids = tokenizer("Theorem t7 : 7 + 0 = 7.").input_ids
    assert ids[0] == tokenizer.bos_token_id
    assert tokenizer.decode(ids, skip_special_tokens=True) == "Theorem t7 : 7 + 0 = 7."
    # Every byte has a token, so no text is unknown.
    assert tokenizer.decode(tokenizer("∀ é 🙂").input_ids, skip_special_tokens=True) == "∀ é 🙂"
    chat = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False,
                                         add_generation_prompt=True)
    assert chat == "<bos><|user|>\nhi<eos>\n<|assistant|>\n"

    assert main([*args[:-1], "5", "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "model.safetensors").read_bytes() != (tmp_path / "a" / "model.safetensors").read_bytes()


def test_model_init_falls_back_to_a_builtin_corpus(tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.chdir(tmp_path)  # no data/ here
    assert main(["model", "init", "--out", "m", "--hidden", "16", "--layers", "1", "--heads", "2"]) == 0
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "m")
    assert len(tokenizer("Require Import Arith Lia.").input_ids) < 10


def test_model_init_refuses_bad_sizes(tmp_path, capsys):
    assert main(["model", "init", "--out", str(tmp_path / "m"), "--hidden", "30", "--heads", "4"]) == 2
    assert "not divisible" in capsys.readouterr().err
    assert main(["model", "init", "--out", str(tmp_path / "m"), "--corpus", str(tmp_path / "missing")]) == 2
