"""Sampler throughput: 16 concurrent requests through the service (hf engine, continuous batching)
against one request at a time with plain `model.generate` on the same model, side by side.

    python bench/sampler.py [--model DIR] [--requests 16] [--max-tokens 64] [--threads 1]

Without --model it builds the default small model (`verirl model init` sizes) in a temp dir.
Every request samples exactly --max-tokens tokens (EOS ignored) at temperature 1, so both sides
generate the same number of tokens. Both sides use the same number of torch threads (default 1:
on a shared 2-core machine, more threads than free cores slows torch down many times over).
Prints tokens/s for each and the ratio.
"""
from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

PROMPT = "Theorem add_0_r : forall n : nat, n + 0 = n.\nProof.\n"


def baseline(model_dir: Path, requests: int, max_tokens: int, threads: int) -> float:
    """Tokens/s of `model.generate`, one request after another."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    inputs = tokenizer(PROMPT, return_tensors="pt")
    settings = dict(do_sample=True, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=max_tokens,
                    min_new_tokens=max_tokens, pad_token_id=tokenizer.pad_token_id)
    with torch.inference_mode():
        model.generate(**inputs, **settings)  # warm-up
        start = time.perf_counter()
        produced = 0
        for _ in range(requests):
            out = model.generate(**inputs, **settings)
            produced += out.shape[1] - inputs.input_ids.shape[1]
        return produced / (time.perf_counter() - start)


async def through_service(url: str, requests: int, max_tokens: int) -> float:
    """Tokens/s of `requests` concurrent completions sent to the running service."""
    body = {"prompt": PROMPT, "max_tokens": max_tokens, "temperature": 1.0, "ignore_eos": True}
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        await client.post("/v1/completions", json={**body, "max_tokens": 4})  # warm-up
        start = time.perf_counter()
        replies = await asyncio.gather(*(client.post("/v1/completions", json=body) for _ in range(requests)))
        elapsed = time.perf_counter() - start
    for reply in replies:
        reply.raise_for_status()
    produced = sum(reply.json()["usage"]["completion_tokens"] for reply in replies)
    return produced / elapsed


def start_service(model_dir: Path, threads: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve", "sampler", "--model", str(model_dir), "--port", str(port),
         "--threads", str(threads)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            sys.exit(f"the sampler exited: {process.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            sys.exit("the sampler did not become healthy within 120 s")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="model directory (default: build the small model)")
    parser.add_argument("--requests", type=int, default=16, help="requests (concurrent for the service)")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens sampled per request")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, on both sides")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model
        if model_dir is None:
            from services.sampler.model_init import init_model

            model_dir = init_model(Path(tmp) / "model", [Path("data")])
        plain = baseline(model_dir, args.requests, args.max_tokens, args.threads)
        process, url = start_service(model_dir, args.threads)
        try:
            ours = asyncio.run(through_service(url, args.requests, args.max_tokens))
        finally:
            process.terminate()
            process.wait(timeout=30)
    print(f"{args.requests} requests x {args.max_tokens} tokens, {args.threads} torch thread(s)")
    print(f"{'model.generate, one request at a time:':42} {plain:8.1f} tokens/s")
    print(f"{f'sampler service, {args.requests} concurrent requests:':42} {ours:8.1f} tokens/s")
    print(f"ratio: {ours / plain:.1f}x")


if __name__ == "__main__":
    main()
