"""A tiny model built from scratch, a random LoRA adapter for it, and the real sampler service
(uvicorn on a free 127.0.0.1 port, in a thread of the test process) serving it with the hf engine."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

SERVED_NAME = "tiny"
CONTEXT = 256


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    from services.sampler.model_init import init_model

    return init_model(tmp_path_factory.mktemp("sampler") / "model", [], context=CONTEXT, seed=0)


@pytest.fixture(scope="session")
def tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def make_adapter(model_dir: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter with random, non-zero A and B, so it changes the model's outputs."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir)
    torch.manual_seed(seed)
    config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"],
                        init_lora_weights=False)
    get_peft_model(base, config).save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def adapter_dir(model_dir, tmp_path_factory) -> Path:
    return make_adapter(model_dir, tmp_path_factory.mktemp("sampler") / "adapter", seed=1)


@pytest.fixture(scope="session")
def reference(model_dir, adapter_dir):
    """Direct forward passes: `reference(token_ids, adapter=None)` -> raw log-softmax rows."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    with_adapter = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), adapter_dir).eval()

    def forward(token_ids: list[int], adapter: bool = False) -> torch.Tensor:
        model = with_adapter if adapter else base
        with torch.no_grad():
            logits = model(torch.tensor([token_ids])).logits[0].float()
        return torch.log_softmax(logits, dim=-1)

    return forward


@pytest.fixture(scope="session")
def server(model_dir):
    """Base URL of a running sampler; the service is stopped at the end of the session."""
    import uvicorn

    from services.sampler.app import create_app
    from services.sampler.engines.hf import HFEngine

    engine = HFEngine(str(model_dir), served_model_name=SERVED_NAME)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(engine), log_level="warning", lifespan="on")
    service = uvicorn.Server(config)
    thread = threading.Thread(target=service.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not service.started:
        assert thread.is_alive() and time.monotonic() < deadline, "sampler did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    service.should_exit = True
    thread.join(timeout=30)
    sock.close()


@pytest.fixture(scope="session")
def client(server):
    from openai import OpenAI

    return OpenAI(base_url=f"{server}/v1", api_key="unused", max_retries=0, timeout=60)
