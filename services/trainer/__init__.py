"""The trainer: multi-turn GRPO with LoRA against the sampler and the API.

`loop.py` is the algorithm, top to bottom; `rollouts.py` plays episodes and keeps the provenance
of every token; `losses.py` turns episodes into advantages and the policy-gradient loss;
`checkpoints.py` saves and restores the whole training state; `sft.py` is the supervised warm
start; `app.py` runs training jobs behind HTTP; `demo.py` is the one-command demo.
"""
