"""The engine interface the HTTP layer drives, and the engine registry.

An engine owns one base model, its tokenizer and any loaded LoRA adapters. It turns a prompt (token
ids) into `n` sampled continuations, each with the exact sampled token ids and their logprobs.
Engines are created once per server and live for its lifetime.
"""
from __future__ import annotations

import abc
import importlib
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

# vLLM's default: logprobs of the raw model distribution, before temperature and top-p.
LogprobsMode = Literal["raw_logprobs", "processed_logprobs"]


class EngineError(Exception):
    """A request the engine refuses; the HTTP layer turns it into vLLM's error JSON."""

    status = HTTPStatus.BAD_REQUEST
    type = "BadRequestError"

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class NotFound(EngineError):
    status = HTTPStatus.NOT_FOUND
    type = "NotFoundError"


class Unavailable(EngineError):
    status = HTTPStatus.SERVICE_UNAVAILABLE
    type = "ServiceUnavailableError"


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. `seed` makes the result reproducible whatever else is batched with it;
    sample i of a seeded request uses its own generator seeded from (seed, i)."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    seed: int | None = None
    logprobs: int | None = None  # None: none asked for; k >= 0: the sampled token's plus the top k


@dataclass
class Sample:
    """One sampled continuation. `token_ids` are all sampled tokens (a stop string cuts only `text`;
    an EOS token is kept); `logprobs[i]` is the logprob of `token_ids[i]`; `top_logprobs[i]` the top-k
    (token id, logprob) pairs at step i when k was asked for."""

    index: int
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[list[tuple[int, float]]] = field(default_factory=list)
    text: str = ""
    finish_reason: Literal["stop", "length", "abort"] | None = None
    stop_reason: str | int | None = None


class Engine(abc.ABC):
    """A generation engine. Attributes: `model_name` (the id served in `/v1/models`), `model_path`,
    `max_model_len` (prompt + completion tokens), `tokenizer` (a Hugging Face tokenizer),
    `logprobs_mode`, `max_logprobs`."""

    model_name: str
    model_path: str
    max_model_len: int
    tokenizer: Any
    logprobs_mode: LogprobsMode = "raw_logprobs"
    max_logprobs: int = 20

    @abc.abstractmethod
    async def generate(
        self, prompt_token_ids: list[int], params: SamplingParams, adapter: str | None
    ) -> list[Sample]:
        """Sample `params.n` continuations of the prompt with the base model (`adapter=None`) or a
        loaded adapter. Cancelling the awaiting task aborts its sequences."""

    @abc.abstractmethod
    async def load_adapter(self, name: str, path: str, load_inplace: bool = False) -> None:
        """Load a PEFT LoRA adapter from `path` under `name` without reloading the base model.
        Raises EngineError if the name is taken (unless `load_inplace`), NotFound if `path` holds
        no adapter."""

    @abc.abstractmethod
    async def unload_adapter(self, name: str) -> None:
        """Forget an adapter; raises NotFound if no adapter has that name."""

    @abc.abstractmethod
    def adapters(self) -> dict[str, str]:
        """Loaded adapters: name -> path."""

    async def check_health(self) -> None:
        """Raise if the engine can no longer serve requests."""

    def stats(self) -> dict[str, float]:
        """Counters and gauges for `/metrics` (name -> value)."""
        return {}

    async def shutdown(self) -> None:
        """Stop background work; pending requests fail."""


ENGINES = {"hf": "services.sampler.engines.hf:HFEngine", "vllm": "services.sampler.engines.vllm:VLLMEngine"}


def create_engine(kind: str, model: str, **options: Any) -> Engine:
    """Import and build the engine named `kind` ("hf" or "vllm") for the model at `model`."""
    if kind not in ENGINES:
        raise ValueError(f"unknown engine {kind!r}; choose one of {', '.join(ENGINES)}")
    module, _, name = ENGINES[kind].partition(":")
    return getattr(importlib.import_module(module), name)(model, **options)
