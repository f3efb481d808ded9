"""The `hf` engine: transformers + PEFT on the CPU, with continuous batching.

One background thread owns the model and runs the batching loop; the event loop only submits work
and awaits futures. Sequences are grouped by adapter (the base model is the group `None`); each
group keeps one left-padded batch with a KV cache. Every loop iteration, for each group:

1. requests that arrived since the last step are prefilled together (one row per request, then
   expanded to `n` rows), sample their first token, and their KV cache is merged into the batch;
2. one decode step runs for every row of the batch;
3. finished rows leave the batch, and cache columns no row needs any more are trimmed.

So a request that arrives while others are generating joins at the next step. Each sampled row has
its own `torch.Generator`, and its token depends only on its own logits, so a seeded request gives
the same tokens whatever else shares its batch.

Adapters are PEFT LoRA adapters injected into the one base model (`PeftModel.load_adapter`); the
base group runs with adapters disabled. Deleting or replacing an adapter waits until its group has
no rows, so a sequence never changes weights half-way; new requests for it wait meanwhile.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import random
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import torch

from services.sampler.engines import (
    Engine,
    EngineError,
    LogprobsMode,
    NotFound,
    Sample,
    SamplingParams,
    Unavailable,
)

log = logging.getLogger(__name__)

GREEDY_BELOW = 1e-5  # temperatures below this sample greedily, as in vLLM


@dataclass(eq=False)
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    group: str | None  # internal adapter name, None for the base model
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    samples: list[Sample] = field(default_factory=list)
    unfinished: int = 0
    aborted: bool = False


@dataclass(eq=False)
class _Row:
    """One sequence in a batch. `pending` is its last sampled token, not yet fed to the model."""

    request: _Request
    sample: Sample
    generator: torch.Generator
    pending: int = 0


@dataclass(eq=False)
class _Group:
    """The running batch of one adapter: rows, their KV cache and attention mask [rows, columns]."""

    waiting: list[_Request] = field(default_factory=list)
    rows: list[_Row] = field(default_factory=list)
    cache: object | None = None
    mask: torch.Tensor | None = None

    @property
    def idle(self) -> bool:
        return not self.rows and not self.waiting


@dataclass(eq=False)
class _Control:
    """An adapter change the loop applies between steps, once the adapter's group is idle."""

    kind: str  # "load" | "delete"
    slot: str
    path: str | None
    future: asyncio.Future | None
    loop: asyncio.AbstractEventLoop | None


class HFEngine(Engine):
    """See the module docstring. `max_num_seqs` bounds the rows of one group's batch."""

    def __init__(
        self,
        model: str,
        *,
        served_model_name: str | None = None,
        max_model_len: int | None = None,
        max_num_seqs: int = 256,
        logprobs_mode: LogprobsMode = "raw_logprobs",
        max_logprobs: int = 20,
        threads: int | None = None,
    ):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.model_path = str(model)
        self.model_name = served_model_name or self.model_path
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self._model = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
        context = getattr(self._model.config, "max_position_embeddings", None) or 2048
        self.max_model_len = min(max_model_len or context, context)
        self.max_num_seqs = max_num_seqs
        self.logprobs_mode = logprobs_mode
        self.max_logprobs = max_logprobs
        self._eos = self.tokenizer.eos_token_id
        self._peft = None  # the PeftModel, once the first adapter is loaded
        self._active: str | None = None
        self._slots = itertools.count(1)
        self._adapters: dict[str, tuple[str, str]] = {}  # name -> (slot, path)
        self._adapter_locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._groups: dict[str | None, _Group] = {}
        self._controls: list[_Control] = []
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._dead = False
        self._counters = {"requests_total": 0, "requests_aborted_total": 0, "generation_tokens_total": 0}
        self._thread = threading.Thread(target=self._run, name="hf-engine", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- event-loop side

    async def generate(self, prompt_token_ids, params, adapter):
        if adapter is not None and adapter not in self._adapters:
            raise NotFound(f"The model `{adapter}` does not exist.", param="model")
        if not prompt_token_ids:
            raise EngineError("The prompt is empty.", param="prompt")
        loop = asyncio.get_running_loop()
        slot = self._adapters[adapter][0] if adapter is not None else None
        request = _Request(list(prompt_token_ids), params, slot, loop.create_future(), loop)
        self._inbox.put(("submit", request))
        if self._dead:  # the loop stopped before it could take the request
            raise Unavailable("The engine has stopped.")
        try:
            return await request.future
        except asyncio.CancelledError:
            self._inbox.put(("abort", request))
            raise

    async def load_adapter(self, name, path, load_inplace=False):
        async with self._adapter_locks[name]:  # one change per name at a time, as in vLLM
            await self._load_adapter(name, path, load_inplace)

    async def _load_adapter(self, name, path, load_inplace):
        if name in self._adapters and not load_inplace:
            raise EngineError(
                f"The lora adapter '{name}' has already been loaded. If you want to load the "
                "adapter in place, set 'load_inplace' to True."
            )
        if not (Path(path) / "adapter_config.json").is_file():
            raise NotFound(f"Loading lora {name} failed: No adapter found for {path}")
        slot = self._adapters[name][0] if name in self._adapters else f"slot{next(self._slots)}"
        loop = asyncio.get_running_loop()
        control = _Control("load", slot, str(path), loop.create_future(), loop)
        self._inbox.put(("control", control))
        try:
            await control.future
        except Unavailable:
            raise
        except Exception as exc:  # a broken or mismatched adapter is the caller's input
            raise EngineError(f"Loading lora {name} failed: {exc}") from exc
        self._adapters[name] = (slot, str(path))

    async def unload_adapter(self, name):
        async with self._adapter_locks[name]:
            if name not in self._adapters:
                raise NotFound(f"The lora adapter '{name}' cannot be found.")
            slot, _ = self._adapters.pop(name)
            # New requests for `name` now fail; the weights go once its running sequences finish.
            self._inbox.put(("control", _Control("delete", slot, None, None, None)))

    def adapters(self):
        return {name: path for name, (_, path) in self._adapters.items()}

    async def check_health(self):
        if not self._thread.is_alive():
            raise RuntimeError("the batching loop has stopped")

    def stats(self):
        groups = list(self._groups.values())
        return {
            **self._counters,
            "running_sequences": sum(len(g.rows) for g in groups),
            "waiting_requests": sum(len(g.waiting) for g in groups),
        }

    async def shutdown(self):
        self._inbox.put(("stop", None))
        await asyncio.to_thread(self._thread.join, 30)

    # ---------------------------------------------------------------- engine thread

    def _run(self) -> None:
        try:
            while True:
                busy = any(not g.idle for g in self._groups.values()) or bool(self._controls)
                if not self._drain_inbox(block=not busy):
                    break
                blocked = self._apply_controls()
                for slot, group in list(self._groups.items()):
                    with torch.inference_mode():
                        self._step(slot, group, admit=slot not in blocked)
                    if group.idle:
                        del self._groups[slot]
        except Exception:  # a bug must fail requests loudly, not hang them
            log.exception("hf engine loop crashed")
            raise
        finally:
            self._dead = True
            self._fail_all(Unavailable("The engine has stopped."))

    def _drain_inbox(self, block: bool) -> bool:
        """Take every message waiting (waiting for one if `block`); False once told to stop."""
        while True:
            try:
                kind, item = self._inbox.get(timeout=None) if block else self._inbox.get_nowait()
            except queue.Empty:
                return True
            block = False
            if kind == "stop":
                return False
            if kind == "submit":
                self._counters["requests_total"] += 1
                item.unfinished = item.params.n
                item.samples = [Sample(index=i) for i in range(item.params.n)]
                self._groups.setdefault(item.group, _Group()).waiting.append(item)
            elif kind == "abort":
                if not item.aborted and item.unfinished:
                    item.aborted = True
                    self._counters["requests_aborted_total"] += 1
            elif kind == "control":
                self._controls.append(item)

    def _apply_controls(self) -> set[str]:
        """Apply the adapter changes that are ready, in order per adapter; returns the adapters
        whose new requests must wait. A load (or in-place reload) waits until no row of its group
        runs and holds back new rows meanwhile; a delete waits until the group has drained, which
        it does on its own since the adapter's name is no longer served."""
        held: set[str] = set()  # adapters with an earlier change still pending
        blocking: set[str] = set()
        for control in list(self._controls):
            group = self._groups.get(control.slot)
            busy = group is not None and (group.rows if control.kind == "load" else not group.idle)
            if control.slot in held or busy:
                held.add(control.slot)
                if control.kind == "load":
                    blocking.add(control.slot)
                continue
            self._controls.remove(control)
            error = None
            try:
                if control.kind == "load":
                    self._load(control.slot, control.path)
                else:
                    self._peft.delete_adapter(control.slot)
                    self._active = None
            except Exception as exc:
                log.warning("adapter %s from %s failed: %s", control.kind, control.path, exc)
                error = exc
            if control.future is not None:
                _resolve(control.loop, control.future, None, error)
        return blocking

    def _load(self, slot: str, path: str) -> None:
        from peft import PeftConfig, PeftModel

        self._active = None
        if self._peft is None:
            # The first adapter wraps the base model; the LoRA layers go in before the weights load,
            # so a failed load must take them out again.
            peft = PeftModel(self._model, PeftConfig.from_pretrained(path), adapter_name=slot)
            try:
                peft.load_adapter(path, adapter_name=slot)
            except Exception:
                peft.base_model.unload()
                raise
            self._peft = peft.eval()
            return
        if slot in self._peft.peft_config:
            self._peft.delete_adapter(slot)
        try:
            self._peft.load_adapter(path, adapter_name=slot)
        except Exception:
            if slot in self._peft.peft_config:  # leave no half-loaded adapter behind
                self._peft.delete_adapter(slot)
            raise
        self._peft.eval()

    def _forward(self, slot: str | None, **inputs):
        """Run the base model with `slot`'s adapter active (none for the base group)."""
        if self._peft is None:
            return self._model(**inputs)
        if slot is None:
            if not self._peft.peft_config:  # every adapter deleted: the LoRA layers are empty
                return self._model(**inputs)
            self._peft.base_model.disable_adapter_layers()
            try:
                return self._model(**inputs)
            finally:
                self._peft.base_model.enable_adapter_layers()
        if self._active != slot:
            self._peft.set_adapter(slot)
            self._active = slot
        return self._model(**inputs)

    def _step(self, slot: str | None, group: _Group, admit: bool) -> None:
        self._drop_aborted(group)
        if admit and group.waiting:
            self._prefill(slot, group)
        if group.rows:
            self._decode(slot, group)

    def _drop_aborted(self, group: _Group) -> None:
        group.waiting = [r for r in group.waiting if not r.aborted]
        self._keep_rows(group, [i for i, row in enumerate(group.rows) if not row.request.aborted])

    def _prefill(self, slot: str | None, group: _Group) -> None:
        from transformers import DynamicCache

        admitted: list[_Request] = []
        room = self.max_num_seqs - len(group.rows)
        while group.waiting and (group.waiting[0].params.n <= room or not admitted and not group.rows):
            request = group.waiting.pop(0)
            admitted.append(request)
            room -= request.params.n
        width = max(len(r.prompt_ids) for r in admitted)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.tensor([[pad] * (width - len(r.prompt_ids)) + r.prompt_ids for r in admitted])
        mask = torch.tensor([[0] * (width - len(r.prompt_ids)) + [1] * len(r.prompt_ids) for r in admitted])
        cache = DynamicCache()
        out = self._forward(
            slot, input_ids=input_ids, attention_mask=mask, position_ids=_positions(mask),
            cache=cache, use_cache=True, logits_to_keep=1,
        )
        # One prefill row per request, expanded to one row per sample.
        expand = torch.tensor([i for i, r in enumerate(admitted) for _ in range(r.params.n)])
        cache.batch_select_indices(expand)
        new_rows = [
            _Row(r, r.samples[i], _generator(r.params.seed, i)) for r in admitted for i in range(r.params.n)
        ]
        self._merge(group, new_rows, cache, mask[expand])
        first = len(group.rows) - len(new_rows)
        self._sample(group, out.logits[expand, -1, :], range(first, len(group.rows)))

    def _decode(self, slot: str | None, group: _Group) -> None:
        input_ids = torch.tensor([[row.pending] for row in group.rows])
        mask = torch.cat([group.mask, torch.ones(len(group.rows), 1, dtype=group.mask.dtype)], dim=1)
        position_ids = group.mask.sum(dim=1, keepdim=True)
        out = self._forward(
            slot, input_ids=input_ids, attention_mask=mask, position_ids=position_ids,
            cache=group.cache, use_cache=True,
        )
        group.mask = mask
        self._sample(group, out.logits[:, -1, :], range(len(group.rows)))

    def _merge(self, group: _Group, rows: list[_Row], cache, mask: torch.Tensor) -> None:
        """Append rows with their cache to the batch, left-padding whichever side is shorter."""
        from transformers import DynamicCache

        if not group.rows:
            group.rows, group.cache, group.mask = rows, cache, mask
            return
        width = max(group.mask.shape[1], mask.shape[1])
        layers = []
        for old, new in zip(group.cache.layers, cache.layers):
            keys = torch.cat([_left_pad(old.keys, width), _left_pad(new.keys, width)])
            values = torch.cat([_left_pad(old.values, width), _left_pad(new.values, width)])
            layers.append((keys, values))
        group.cache = DynamicCache(layers)
        group.mask = torch.cat([_left_pad(group.mask, width), _left_pad(mask, width)])
        group.rows = group.rows + rows

    def _sample(self, group: _Group, logits: torch.Tensor, indices: range) -> None:
        """Sample the next token of `group.rows[indices]` from `logits` [len(indices), vocab]."""
        rows = [group.rows[i] for i in indices]
        logits = logits.float()
        raw = torch.log_softmax(logits, dim=-1)
        temperature = torch.tensor([[max(r.request.params.temperature, GREEDY_BELOW)] for r in rows])
        top_p = torch.tensor([[r.request.params.top_p] for r in rows])
        processed = torch.log_softmax(_top_p_mask(logits / temperature, top_p), dim=-1)
        # Inverse-CDF sampling with one uniform draw from each row's own generator.
        uniform = torch.cat([torch.rand(1, generator=r.generator, dtype=torch.float64) for r in rows])
        cdf = processed.double().exp().cumsum(dim=-1)
        sampled = torch.searchsorted(cdf, (uniform * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
        sampled = sampled.clamp(max=logits.shape[-1] - 1)
        greedy = torch.tensor([r.request.params.temperature < GREEDY_BELOW for r in rows])
        tokens = torch.where(greedy, raw.argmax(dim=-1), sampled)
        reported = raw if self.logprobs_mode == "raw_logprobs" else torch.where(greedy.unsqueeze(1), raw, processed)
        chosen = reported.gather(1, tokens.unsqueeze(1)).squeeze(1)
        finished = []
        for k, (row, token) in enumerate(zip(rows, tokens.tolist())):
            sample, params = row.sample, row.request.params
            sample.token_ids.append(token)
            sample.logprobs.append(float(chosen[k]))
            if params.logprobs:
                top = reported[k].topk(params.logprobs)
                sample.top_logprobs.append(list(zip(top.indices.tolist(), top.values.tolist())))
            row.pending = token
            self._counters["generation_tokens_total"] += 1
            if self._finish_if_done(row, token):
                finished.append(indices[k])
        if finished:
            done = set(finished)
            self._keep_rows(group, [i for i in range(len(group.rows)) if i not in done])

    def _finish_if_done(self, row: _Row, token: int) -> bool:
        sample, params = row.sample, row.request.params
        reason: str | None = None
        if token in params.stop_token_ids:
            reason, sample.stop_reason = "stop", token
        elif token == self._eos and not params.ignore_eos:
            reason = "stop"
        text = None
        if reason is None and params.stop:
            text = self.tokenizer.decode(sample.token_ids, skip_special_tokens=True)
            hits = [(text.find(s), s) for s in params.stop if s in text]
            if hits:
                at, stop = min(hits)
                reason, sample.stop_reason = "stop", stop
                text = text[: at + len(stop)] if params.include_stop_str_in_output else text[:at]
        if reason is None and len(sample.token_ids) >= params.max_tokens:
            reason = "length"
        if reason is None:
            return False
        sample.finish_reason = reason
        sample.text = text if text is not None else self.tokenizer.decode(sample.token_ids, skip_special_tokens=True)
        request = row.request
        request.unfinished -= 1
        if request.unfinished == 0:
            _resolve(request.loop, request.future, request.samples, None)
        return True

    def _keep_rows(self, group: _Group, keep: list[int]) -> None:
        """Keep only rows `keep`, then drop the leading cache columns no remaining row attends to."""
        if len(keep) == len(group.rows):
            return
        group.rows = [group.rows[i] for i in keep]
        if not group.rows:
            group.cache = group.mask = None
            return
        index = torch.tensor(keep)
        group.cache.batch_select_indices(index)
        group.mask = group.mask[index]
        start = int(group.mask.any(dim=0).int().argmax())
        if start:
            from transformers import DynamicCache

            group.mask = group.mask[:, start:]
            group.cache = DynamicCache(
                [(layer.keys[:, :, start:], layer.values[:, :, start:]) for layer in group.cache.layers]
            )

    def _fail_all(self, exc: Exception) -> None:
        while True:
            try:
                kind, item = self._inbox.get_nowait()
            except queue.Empty:
                break
            if kind == "submit":
                _resolve(item.loop, item.future, None, exc)
            elif kind == "control":
                self._controls.append(item)
        for group in self._groups.values():
            for request in group.waiting + [row.request for row in group.rows]:
                _resolve(request.loop, request.future, None, exc)
        self._groups.clear()
        for control in self._controls:
            if control.future is not None:
                _resolve(control.loop, control.future, None, exc)


def _resolve(loop, future: asyncio.Future, result, error: Exception | None) -> None:
    def settle():
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the event loop has closed; nobody is waiting any more
        pass


def _generator(seed: int | None, index: int) -> torch.Generator:
    """Sample `index` of a seeded request draws from its own stream derived from (seed, index)."""
    generator = torch.Generator()
    if seed is None:
        generator.manual_seed(random.SystemRandom().getrandbits(63))
    else:
        generator.manual_seed((seed * 0x9E3779B97F4A7C15 + index) % (1 << 63))
    return generator


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.cumsum(dim=1) - 1).clamp(min=0)


def _left_pad(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """Pad the sequence axis (dim 2 for a cache tensor, dim 1 for a mask) on the left with zeros."""
    axis = 2 if tensor.dim() == 4 else 1
    missing = width - tensor.shape[axis]
    if missing == 0:
        return tensor
    shape = list(tensor.shape)
    shape[axis] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim=axis)


def _top_p_mask(logits: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Set to -inf the tokens outside each row's nucleus: the smallest set of most likely tokens
    whose probability reaches `top_p` (the most likely token is always kept)."""
    if bool((top_p >= 1.0).all()):
        return logits
    ordered, order = logits.sort(dim=-1, descending=True)
    probs = ordered.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # mass of the tokens ranked above each one
    drop_sorted = before >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))
