"""The `vllm` engine: a thin wrapper over vLLM's `AsyncLLMEngine` with LoRA enabled, for GPUs.

vLLM does the batching, KV cache, sampling and adapter management; this class only translates
between the `Engine` interface and vLLM's documented objects (`AsyncEngineArgs`, `SamplingParams`,
`TokensPrompt`, `LoRARequest`, `RequestOutput`). vLLM is imported only when this engine is built.
"""
from __future__ import annotations

import itertools
import uuid
from pathlib import Path

from services.sampler.engines import Engine, EngineError, LogprobsMode, NotFound, Sample, SamplingParams


class VLLMEngine(Engine):
    def __init__(
        self,
        model: str,
        *,
        served_model_name: str | None = None,
        max_model_len: int | None = None,
        max_num_seqs: int = 256,
        logprobs_mode: LogprobsMode = "raw_logprobs",
        max_logprobs: int = 20,
        max_lora_rank: int = 64,
        max_loras: int = 4,
    ):
        try:
            import vllm
        except ImportError as exc:
            raise ImportError(
                "the vllm engine needs the `vllm` package, which runs only on a CUDA GPU "
                "(pip install vllm there); on this machine use --engine hf"
            ) from exc
        from transformers import AutoTokenizer

        self._vllm = vllm
        self.model_path = str(model)
        self.model_name = served_model_name or self.model_path
        self.logprobs_mode = logprobs_mode
        self.max_logprobs = max_logprobs
        args = vllm.AsyncEngineArgs(
            model=self.model_path,
            served_model_name=self.model_name,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            max_logprobs=max_logprobs,
            logprobs_mode=logprobs_mode,
            enable_lora=True,
            max_lora_rank=max_lora_rank,
            max_loras=max_loras,
        )
        self._engine = vllm.AsyncLLMEngine.from_engine_args(args)
        self.max_model_len = self._engine.model_config.max_model_len
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self._lora_ids = itertools.count(1)
        self._loras: dict[str, object] = {}  # name -> vllm LoRARequest

    async def generate(self, prompt_token_ids, params, adapter):
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        if adapter is not None and adapter not in self._loras:
            raise NotFound(f"The model `{adapter}` does not exist.", param="model")
        sampling = self._vllm.SamplingParams(
            n=params.n,
            temperature=params.temperature,
            top_p=params.top_p,
            max_tokens=params.max_tokens,
            stop=list(params.stop),
            stop_token_ids=list(params.stop_token_ids),
            ignore_eos=params.ignore_eos,
            include_stop_str_in_output=params.include_stop_str_in_output,
            seed=params.seed,
            logprobs=params.logprobs or 0,  # 0: the sampled token's logprob only
            output_kind=RequestOutputKind.FINAL_ONLY,
        )
        final = None
        # AsyncLLMEngine.generate aborts the request itself when this task is cancelled.
        async for output in self._engine.generate(
            TokensPrompt(prompt_token_ids=list(prompt_token_ids)),
            sampling,
            f"cmpl-{uuid.uuid4().hex}",
            lora_request=self._loras.get(adapter) if adapter else None,
        ):
            final = output
        return [self._sample(completion, params) for completion in final.outputs]

    @staticmethod
    def _sample(completion, params: SamplingParams) -> Sample:
        steps = completion.logprobs or []
        top = []
        if params.logprobs:
            for step in steps:
                ranked = sorted((lp.rank, token_id, lp.logprob) for token_id, lp in step.items() if lp.rank)
                top.append([(token_id, logprob) for rank, token_id, logprob in ranked if rank <= params.logprobs])
        return Sample(
            index=completion.index,
            token_ids=list(completion.token_ids),
            logprobs=[step[token_id].logprob for step, token_id in zip(steps, completion.token_ids)],
            top_logprobs=top,
            text=completion.text,
            finish_reason=completion.finish_reason,
            stop_reason=completion.stop_reason,
        )

    async def load_adapter(self, name, path, load_inplace=False):
        from vllm.lora.request import LoRARequest

        if name in self._loras and not load_inplace:
            raise EngineError(
                f"The lora adapter '{name}' has already been loaded. If you want to load the "
                "adapter in place, set 'load_inplace' to True."
            )
        if not (Path(path) / "adapter_config.json").is_file():
            raise NotFound(f"Loading lora {name} failed: No adapter found for {path}")
        # A fresh id for every load, so an in-place reload is never answered from vLLM's adapter cache.
        request = LoRARequest(lora_name=name, lora_int_id=next(self._lora_ids), lora_path=str(path))
        await self._engine.add_lora(request)
        if name in self._loras:
            await self._engine.remove_lora(self._loras[name].lora_int_id)
        self._loras[name] = request

    async def unload_adapter(self, name):
        if name not in self._loras:
            raise NotFound(f"The lora adapter '{name}' cannot be found.")
        request = self._loras.pop(name)
        await self._engine.remove_lora(request.lora_int_id)

    def adapters(self):
        return {name: request.lora_path for name, request in self._loras.items()}

    async def check_health(self):
        await self._engine.check_health()

    async def shutdown(self):
        self._engine.shutdown()
