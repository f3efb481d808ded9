"""`verirl model init` (build the small from-scratch model) and `verirl serve sampler`."""
from __future__ import annotations

from pathlib import Path

from services.cli import UsageError, command_group


def register(sub) -> None:
    model = command_group(sub, "model", "build and inspect models")
    p = model.add_parser("init", help="train a tokenizer on the task corpus and write a small randomly "
                                      "initialised causal LM (Hugging Face format)")
    p.add_argument("--out", type=Path, required=True, help="directory to write the model to")
    p.add_argument("--corpus", type=Path, nargs="+", default=[Path("data")],
                   help="task files (tasks.jsonl: prompt and gold fields), directories searched for "
                        "tasks.jsonl, or text files (default: data/; a built-in Rocq corpus if empty)")
    p.add_argument("--vocab", type=int, default=512, help="tokenizer vocabulary size")
    p.add_argument("--hidden", type=int, default=128, help="hidden size")
    p.add_argument("--layers", type=int, default=4, help="transformer layers")
    p.add_argument("--heads", type=int, default=4, help="attention heads")
    p.add_argument("--context", type=int, default=1024, help="maximum sequence length in tokens")
    p.add_argument("--seed", type=int, default=0, help="seed of the weight initialisation")
    p.set_defaults(handler=init)

    serve = command_group(sub, "serve", "run a service")
    p = serve.add_parser("sampler", help="serve vLLM's OpenAI-compatible API (completions, chat, LoRA "
                                         "adapters) for a model directory")
    p.add_argument("--model", required=True, help="model directory (Hugging Face format)")
    p.add_argument("--engine", choices=["hf", "vllm"], default="hf",
                   help="hf: transformers + PEFT on the CPU; vllm: vLLM on a GPU")
    p.add_argument("--host", default="127.0.0.1", help="address to bind")
    p.add_argument("--port", type=int, default=8001, help="port to bind")
    p.add_argument("--served-model-name", help="model id clients use (default: the --model value)")
    p.add_argument("--max-model-len", type=int, help="context limit (default: the model's)")
    p.add_argument("--max-num-seqs", type=int, default=256, help="most sequences in one batch")
    p.add_argument("--logprobs-mode", choices=["raw_logprobs", "processed_logprobs"], default="raw_logprobs",
                   help="raw: logprobs of the model's distribution (vLLM's default); processed: after "
                        "temperature and top-p")
    p.add_argument("--max-lora-rank", type=int, default=64, help="vllm engine: largest LoRA rank")
    p.add_argument("--max-loras", type=int, default=4, help="vllm engine: adapters in one batch")
    p.add_argument("--threads", type=int, help="hf engine: torch CPU threads")
    p.set_defaults(handler=serve_sampler)


def init(args) -> int:
    from services.sampler.model_init import init_model

    for path in args.corpus:
        if not path.exists() and path != Path("data"):
            raise UsageError(f"no such corpus file or directory: {path}")
    for name in ("vocab", "hidden", "layers", "heads", "context"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be positive")
    if args.hidden % args.heads:
        raise UsageError(f"--hidden {args.hidden} is not divisible by --heads {args.heads}")
    corpus = [path for path in args.corpus if path.exists()]
    try:
        init_model(args.out, corpus, vocab=args.vocab, hidden=args.hidden, layers=args.layers,
                   heads=args.heads, context=args.context, seed=args.seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(args.out)
    return 0


def serve_sampler(args) -> int:
    import uvicorn

    from services.sampler.app import create_app
    from services.sampler.engines import create_engine

    if not Path(args.model, "config.json").is_file():
        raise UsageError(f"{args.model} is not a model directory (no config.json)")
    options = dict(served_model_name=args.served_model_name, max_model_len=args.max_model_len,
                   max_num_seqs=args.max_num_seqs, logprobs_mode=args.logprobs_mode)
    if args.engine == "hf":
        options["threads"] = args.threads
    else:
        options.update(max_lora_rank=args.max_lora_rank, max_loras=args.max_loras)
    try:
        engine = create_engine(args.engine, args.model, **options)
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    uvicorn.run(create_app(engine), host=args.host, port=args.port, log_level="info")
    return 0
