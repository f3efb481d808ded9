"""The sampler's HTTP API: vLLM's OpenAI-compatible server in front of an `Engine`.

Routes: `POST /v1/completions`, `POST /v1/chat/completions`, `GET /v1/models`,
`POST /v1/load_lora_adapter`, `POST /v1/unload_lora_adapter`, `GET /health`, `GET /metrics`.
A loaded adapter is addressed by passing its name as `model`. Errors are vLLM's JSON
`{"error": {"message", "type", "param", "code"}}` with the HTTP status in `code`.

A client that disconnects cancels its request: the handler task is cancelled and the engine drops
the request's sequences (as vLLM's `with_cancellation` does).
"""
from __future__ import annotations

import asyncio
import functools
import logging
from contextlib import asynccontextmanager
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.exceptions import HTTPException as StarletteHTTPException

from services.sampler.engines import Engine, EngineError, NotFound, Sample, SamplingParams
from services.sampler.protocol import (
    ChatCompletionLogProb,
    ChatCompletionLogProbs,
    ChatCompletionLogProbsContent,
    ChatCompletionRequest,
    ChatCompletionResponse,
    ChatCompletionResponseChoice,
    ChatMessage,
    CompletionLogProbs,
    CompletionRequest,
    CompletionResponse,
    CompletionResponseChoice,
    ErrorInfo,
    ErrorResponse,
    LoadLoRAAdapterRequest,
    ModelCard,
    ModelList,
    ModelPermission,
    SamplingFields,
    UnloadLoRAAdapterRequest,
    UsageInfo,
)

log = logging.getLogger(__name__)

LOGPROB_FLOOR = -9999.0  # vLLM's floor, so -inf (a token outside top-p) stays valid JSON


def error_response(message: str, status: HTTPStatus, err_type: str, param: str | None = None) -> JSONResponse:
    body = ErrorResponse(error=ErrorInfo(message=message, type=err_type, param=param, code=status.value))
    return JSONResponse(body.model_dump(), status_code=status.value)


def _engine_error(exc: EngineError) -> JSONResponse:
    return error_response(str(exc), exc.status, exc.type, exc.param)


def with_cancellation(handler):
    """Run `handler` but cancel it as soon as the client disconnects; vLLM does the same."""

    @functools.wraps(handler)
    async def wrapper(body, raw_request: Request):
        work = asyncio.ensure_future(handler(body, raw_request))
        watch = asyncio.ensure_future(_wait_for_disconnect(raw_request))
        done, _ = await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            watch.cancel()
            return work.result()
        work.cancel()
        log.info("client disconnected; request cancelled")
        return Response(status_code=499)

    return wrapper


async def _wait_for_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


class _EngineCollector:
    """Exposes `engine.stats()` as `verirl_sampler_*` metrics (names ending `_total` are counters)."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def collect(self):
        for name, value in sorted(self.engine.stats().items()):
            if name.endswith("_total"):
                yield CounterMetricFamily(f"verirl_sampler_{name[:-6]}", name.replace("_", " "), value=value)
            else:
                yield GaugeMetricFamily(f"verirl_sampler_{name}", name.replace("_", " "), value=value)


def create_app(engine: Engine) -> FastAPI:
    """The ASGI app serving `engine`; the engine is shut down with the app."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        yield
        await engine.shutdown()

    app = FastAPI(title="verirl sampler", lifespan=lifespan)
    app.state.engine = engine

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError):
        errors = exc.errors()
        where = errors[0]["loc"][1:] if errors else ()
        param = where[0] if where and isinstance(where[0], str) else None
        message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors) or str(exc)
        return error_response(message, HTTPStatus.BAD_REQUEST, HTTPStatus.BAD_REQUEST.phrase, param)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException):
        status = HTTPStatus(exc.status_code)
        return error_response(str(exc.detail), status, status.phrase)

    @app.exception_handler(EngineError)
    async def _refused(_request: Request, exc: EngineError):
        return _engine_error(exc)

    @app.exception_handler(Exception)
    async def _crashed(_request: Request, exc: Exception):
        log.exception("request failed")
        return error_response(str(exc) or type(exc).__name__, HTTPStatus.INTERNAL_SERVER_ERROR,
                              "InternalServerError")

    # ------------------------------------------------------------------------ housekeeping

    registry = CollectorRegistry()
    registry.register(_EngineCollector(engine))

    @app.get("/health")
    async def health():
        try:
            await engine.check_health()
        except Exception as exc:
            return error_response(f"The engine is not running: {exc}", HTTPStatus.SERVICE_UNAVAILABLE,
                                  "ServiceUnavailableError")
        return Response(status_code=200)

    @app.get("/metrics")
    async def metrics():
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/models")
    async def models() -> ModelList:
        cards = [
            ModelCard(id=engine.model_name, root=engine.model_path, max_model_len=engine.max_model_len,
                      permission=[ModelPermission()])
        ]
        cards += [
            ModelCard(id=name, root=path, parent=engine.model_name, permission=[ModelPermission()])
            for name, path in engine.adapters().items()
        ]
        return ModelList(data=cards)

    @app.post("/v1/load_lora_adapter")
    async def load_lora_adapter(body: LoadLoRAAdapterRequest):
        if not body.lora_name or not body.lora_path:
            return error_response("Both 'lora_name' and 'lora_path' must be provided.",
                                  HTTPStatus.BAD_REQUEST, "InvalidUserInput")
        try:
            await engine.load_adapter(body.lora_name, body.lora_path, body.load_inplace)
        except NotFound as exc:
            return _engine_error(exc)
        except EngineError as exc:
            return error_response(str(exc), HTTPStatus.BAD_REQUEST, "InvalidUserInput")
        return Response(f"Success: LoRA adapter '{body.lora_name}' added successfully.", status_code=200)

    @app.post("/v1/unload_lora_adapter")
    async def unload_lora_adapter(body: UnloadLoRAAdapterRequest):
        await engine.unload_adapter(body.lora_name)
        return Response(f"Success: LoRA adapter '{body.lora_name}' removed successfully.", status_code=200)

    # ------------------------------------------------------------------------ generation

    @app.post("/v1/completions")
    @with_cancellation
    async def completions(body: CompletionRequest, raw_request: Request):
        adapter = _resolve_model(engine, body)
        _refuse_unsupported(body)
        prompts = _completion_prompts(engine, body)
        params = [_sampling_params(engine, body, len(ids), body.max_tokens, body.logprobs) for ids in prompts]
        results = await asyncio.gather(*(engine.generate(ids, p, adapter) for ids, p in zip(prompts, params)))
        choices = []
        for prompt_ids, samples in zip(prompts, results):
            for sample in samples:
                choices.append(CompletionResponseChoice(
                    index=len(choices),
                    text=sample.text,
                    logprobs=_completion_logprobs(engine, sample, body) if body.logprobs is not None else None,
                    finish_reason=sample.finish_reason,
                    stop_reason=sample.stop_reason,
                    token_ids=sample.token_ids if body.return_token_ids else None,
                    prompt_token_ids=prompt_ids if body.return_token_ids else None,
                ))
        prompt_tokens = sum(len(ids) for ids in prompts)
        completion_tokens = sum(len(s.token_ids) for samples in results for s in samples)
        return CompletionResponse(
            model=body.model or engine.model_name,
            choices=choices,
            usage=UsageInfo(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                            total_tokens=prompt_tokens + completion_tokens),
        )

    @app.post("/v1/chat/completions")
    @with_cancellation
    async def chat_completions(body: ChatCompletionRequest, raw_request: Request):
        adapter = _resolve_model(engine, body)
        _refuse_unsupported(body)
        if body.top_logprobs and not body.logprobs:
            raise EngineError("when using `top_logprobs`, `logprobs` must be set to true.", param="top_logprobs")
        prompt_ids = _chat_prompt(engine, body)
        top = (body.top_logprobs or 0) if body.logprobs else None
        params = _sampling_params(engine, body, len(prompt_ids), body.max_completion_tokens or body.max_tokens, top)
        samples = await engine.generate(prompt_ids, params, adapter)
        choices = [
            ChatCompletionResponseChoice(
                index=sample.index,
                message=ChatMessage(role="assistant", content=sample.text),
                logprobs=_chat_logprobs(engine, sample, body) if body.logprobs else None,
                finish_reason=sample.finish_reason,
                stop_reason=sample.stop_reason,
                token_ids=sample.token_ids if body.return_token_ids else None,
            )
            for sample in samples
        ]
        completion_tokens = sum(len(s.token_ids) for s in samples)
        return ChatCompletionResponse(
            model=body.model or engine.model_name,
            choices=choices,
            usage=UsageInfo(prompt_tokens=len(prompt_ids), completion_tokens=completion_tokens,
                            total_tokens=len(prompt_ids) + completion_tokens),
            prompt_token_ids=prompt_ids if body.return_token_ids else None,
        )

    return app


# ---------------------------------------------------------------------------- request handling


def _resolve_model(engine: Engine, body: SamplingFields) -> str | None:
    """The adapter a request addresses (None for the base model); 404 for an unknown name."""
    if not body.model or body.model == engine.model_name:
        return None
    if body.model in engine.adapters():
        return body.model
    raise NotFound(f"The model `{body.model}` does not exist.", param="model")


def _refuse_unsupported(body: SamplingFields) -> None:
    if unsupported := body.unsupported():
        raise EngineError(f"`{unsupported}` is not supported by this server.", param=unsupported)


def _completion_prompts(engine: Engine, body: CompletionRequest) -> list[list[int]]:
    prompt = body.prompt
    if isinstance(prompt, str):
        prompt = [prompt]
    if not prompt:
        raise EngineError("Either prompt or prompt_embeds must be provided and non-empty.", param="prompt")
    if all(isinstance(p, int) for p in prompt):
        prompts = [list(prompt)]
    else:
        prompts = [
            engine.tokenizer(p, add_special_tokens=body.add_special_tokens).input_ids if isinstance(p, str) else list(p)
            for p in prompt
        ]
    vocab = len(engine.tokenizer)
    for ids in prompts:
        if not ids:
            raise EngineError("The prompt is empty.", param="prompt")
        if max(ids) >= vocab:
            raise EngineError(f"Token id {max(ids)} is out of vocabulary", param="prompt")
    return prompts


def _chat_prompt(engine: Engine, body: ChatCompletionRequest) -> list[int]:
    if body.add_generation_prompt and body.continue_final_message:
        raise EngineError("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
    messages = [{"role": m.role, "content": m.text()} for m in body.messages]
    try:
        text = engine.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=body.add_generation_prompt,
            continue_final_message=body.continue_final_message, **(body.chat_template_kwargs or {}),
        )
    except Exception as exc:  # a template error is the request's fault (jinja raises on bad input)
        raise EngineError(f"Chat template failed: {exc}", param="messages") from exc
    return engine.tokenizer(text, add_special_tokens=body.add_special_tokens).input_ids


def _sampling_params(engine: Engine, body: SamplingFields, prompt_len: int, max_tokens: int | None,
                     logprobs: int | None) -> SamplingParams:
    """vLLM's checks of context length and logprobs count, then the engine's sampling params."""
    limit = engine.max_model_len
    if prompt_len >= limit:
        raise EngineError(
            f"This model's maximum context length is {limit} tokens. However, your request has "
            f"{prompt_len} input tokens. Please reduce the length of the input messages.",
            param="input_tokens",
        )
    if max_tokens is None:
        max_tokens = limit - prompt_len
    elif prompt_len + max_tokens > limit:
        raise EngineError(
            f"'max_tokens' or 'max_completion_tokens' is too large: {max_tokens}. This model's maximum "
            f"context length is {limit} tokens and your request has {prompt_len} input tokens "
            f"({max_tokens} > {limit} - {prompt_len}).",
            param="max_tokens",
        )
    if logprobs is not None and logprobs > engine.max_logprobs:
        raise EngineError(
            f"Requested sample logprobs of {logprobs}, which is greater than max allowed: {engine.max_logprobs}",
            param="logprobs",
        )
    return SamplingParams(
        n=body.n,
        temperature=1.0 if body.temperature is None else body.temperature,
        top_p=1.0 if body.top_p is None else body.top_p,
        max_tokens=max_tokens,
        stop=body.stop_strings(),
        stop_token_ids=tuple(body.stop_token_ids or ()),
        ignore_eos=body.ignore_eos,
        include_stop_str_in_output=body.include_stop_str_in_output,
        seed=body.seed,
        logprobs=logprobs,
    )


# ---------------------------------------------------------------------------- logprobs rendering


def _token_text(engine: Engine, token_id: int, as_id: bool | None) -> str:
    return f"token_id:{token_id}" if as_id else engine.tokenizer.decode([token_id])


def _floor(logprob: float) -> float:
    return max(logprob, LOGPROB_FLOOR)


def _completion_logprobs(engine: Engine, sample: Sample, body: CompletionRequest) -> CompletionLogProbs:
    """vLLM's completion logprobs: per token its text, logprob and a dict of the sampled token plus
    the top `logprobs` alternatives."""
    as_id = body.return_tokens_as_token_ids
    out = CompletionLogProbs()
    offset = 0
    for i, (token_id, logprob) in enumerate(zip(sample.token_ids, sample.logprobs)):
        token = _token_text(engine, token_id, as_id)
        out.tokens.append(token)
        out.token_logprobs.append(_floor(logprob))
        out.text_offset.append(offset)
        offset += len(token)
        top = {token: _floor(logprob)}
        for alt_id, alt_logprob in sample.top_logprobs[i] if sample.top_logprobs else ():
            top.setdefault(_token_text(engine, alt_id, as_id), _floor(alt_logprob))
        out.top_logprobs.append(top)
    return out


def _chat_logprobs(engine: Engine, sample: Sample, body: ChatCompletionRequest) -> ChatCompletionLogProbs:
    as_id = body.return_tokens_as_token_ids

    def entry(token_id: int, logprob: float) -> ChatCompletionLogProb:
        token = _token_text(engine, token_id, as_id)
        return ChatCompletionLogProb(token=token, logprob=_floor(logprob),
                                     bytes=list(token.encode("utf-8", errors="replace")))

    content = []
    for i, (token_id, logprob) in enumerate(zip(sample.token_ids, sample.logprobs)):
        top = sample.top_logprobs[i] if sample.top_logprobs else []
        first = entry(token_id, logprob)
        content.append(ChatCompletionLogProbsContent(
            **first.model_dump(), top_logprobs=[entry(t, lp) for t, lp in top]
        ))
    return ChatCompletionLogProbs(content=content)
