"""The sampler: vLLM's OpenAI-compatible HTTP API in front of a generation engine.

`app.py` speaks the protocol; `engines/` hold the engines (`hf`: transformers + PEFT on the CPU,
`vllm`: vLLM's async engine on a GPU); `model_init.py` builds the small from-scratch model that
tests, the demo and CPU runs use.
"""
