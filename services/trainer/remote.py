"""The trainer's view of the other services: the sampler through vLLM's OpenAI-compatible HTTP API
(so it works the same against `verirl serve sampler` and a stock `vllm serve --enable-lora`), and
the API for grading and run records."""
from __future__ import annotations

from collections.abc import Sequence

import httpx

from services.trainer.rollouts import Sample
from shared.clients import APIClient, grade_item
from shared.metrics import TaskEval
from shared.schemas import Task, Verdict


class SamplerError(RuntimeError):
    """The sampler answered with an error (its message included)."""


def _check(response: httpx.Response) -> httpx.Response:
    """The response if it succeeded (vLLM answers adapter loads in plain text, so no JSON here)."""
    if response.status_code >= 400:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text[:500]
        raise SamplerError(f"sampler {response.request.url.path}: HTTP {response.status_code}: {message}")
    return response


class OpenAISampler:
    """Completions over token ids with the sampled token ids and their logprobs, and LoRA
    adapter loading by name (vLLM's `/v1/load_lora_adapter`)."""

    def __init__(self, url: str, timeout_s: float = 600.0):
        self.url = url.rstrip("/")
        self.timeout = httpx.Timeout(timeout_s, connect=10.0)

    def load_adapter(self, name: str, path: str) -> None:
        _check(httpx.post(f"{self.url}/v1/load_lora_adapter",
                          json={"lora_name": name, "lora_path": path, "load_inplace": True}, timeout=self.timeout))

    def unload_adapter(self, name: str) -> None:
        _check(httpx.post(f"{self.url}/v1/unload_lora_adapter", json={"lora_name": name}, timeout=self.timeout))

    async def complete(self, model, prompt_ids, *, n, seed, temperature, max_tokens) -> list[Sample]:
        body = {
            "model": model, "prompt": list(prompt_ids), "n": n, "seed": seed, "temperature": temperature,
            "max_tokens": max_tokens, "logprobs": 0, "return_token_ids": True,
        }
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            data = _check(await client.post(f"{self.url}/v1/completions", json=body)).json()
        choices = sorted(data["choices"], key=lambda c: c["index"])
        return [
            Sample(c["token_ids"], [float(x) for x in c["logprobs"]["token_logprobs"]], c["text"], c.get("finish_reason"))
            for c in choices
        ]


class ApiGrader:
    """Grading through the API's `/grade/batch` (Celery workers or the API's local pool)."""

    def __init__(self, api: APIClient):
        self.api = api

    def grade(self, items: Sequence[tuple[Task, str]]) -> list[Verdict]:
        return self.api.grade_batch([grade_item(task, answer) for task, answer in items]) if items else []


class ApiRecorder:
    """Run records in the API: the run with its config, iteration metrics, held-out evals and
    episodes (the API's episode shape: turns without token ids)."""

    def __init__(self, api: APIClient):
        self.api = api

    def start_run(self, name: str, config: dict) -> int:
        return self.api.create_run(name, config, status="running")["id"]

    def log_iteration(self, run_id: int, iteration: int, metrics: dict) -> None:
        self.api.post_iteration(run_id, iteration, metrics)
        self.api.update_run(run_id, phase=str(metrics["phase"]))

    def log_evals(self, run_id: int, iteration: int, evals: Sequence[TaskEval]) -> None:
        self.api.post_evals(run_id, iteration, [
            {"task_id": e.task_id, "family": e.family, "n": e.n, "passed_by_turn": list(e.passed_by_turn)}
            for e in evals
        ])

    def log_episodes(self, run_id: int, records: Sequence[dict]) -> None:
        turn_fields = ("completion", "sampled_tokens", "passed", "reason", "feedback")
        self.api.post_episodes(run_id, [
            {
                **{k: r[k] for k in ("iteration", "task_id", "index", "split", "family", "prompt", "reward",
                                     "policy_version")},
                "turns": [{k: (t[k] or None) if k == "reason" else t[k] for k in turn_fields} for t in r["turns"]],
            }
            for r in records
        ])

    def finish_run(self, run_id: int, status: str) -> None:
        self.api.update_run(run_id, status=status)
