"""The `run` subcommand's flags; app.py calls `add_arguments(parser)` then `engine.run_from_args(store, args)`."""

from __future__ import annotations

import argparse

from core import prompts
from core.runners.baselines import BASELINES
from core.runners.engine import DEFAULT_SEED, RUNNERS
from core.schema import INPUT_MODES


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the run flags (app.py adds --db and -v itself)."""
    p.add_argument("--benchmark", required=True, help="the benchmark to run on")
    p.add_argument("--run", required=True, help="the run's name; the same name and settings resume it")
    p.add_argument("--runner", required=True, choices=RUNNERS)
    p.add_argument("--model", help=f"baseline name ({', '.join(BASELINES)}), local checkpoint folder "
                   "(transformers) or model id (openai)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="name of the environment variable holding the API key (the key is never stored)")
    p.add_argument("--strategy", default="direct", choices=prompts.STRATEGIES)
    p.add_argument("--ssa-level", choices=prompts.SSA_LEVELS, help="with --strategy ssa: H0..H4 or irrelevant")
    p.add_argument("--shots", type=int, default=0, choices=range(prompts.MAX_SHOTS + 1), help="k-shot demos, 0..3")
    p.add_argument("--input-mode", default="all", choices=INPUT_MODES)
    p.add_argument("--rotations", type=int, default=1, choices=range(1, 5),
                   help="cyclic option rotations 0..N-1 (SPEC §3)")
    p.add_argument("--repeats", type=int, default=1, help="same-order repeats per rotation")
    p.add_argument("--concurrency", type=int, default=8, help="openai: requests in flight at most")
    p.add_argument("--batch-size", type=int, default=8, help="transformers: prompts per generate call")
    p.add_argument("--max-tokens", type=int, help="output token cap (default: 64 direct, 1024-2048 reasoning)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random baseline, demo pool, irrelevant-S1")
    p.add_argument("--split", default="test")
    p.add_argument("--probs", action="store_true", help="transformers: store option-letter probabilities")
    p.add_argument("--chat-template", metavar="FILE",
                   help="transformers: a Jinja chat template overriding the checkpoint's (recorded by sha256)")
    p.add_argument("--timeout", type=float, default=120.0, help="openai: seconds per request")
    p.add_argument("--max-retries", type=int, default=5, help="openai: retries on 429 / 5xx / timeouts")
    p.add_argument("--backoff", type=float, default=1.0, help="openai: first retry delay in seconds (doubles)")
    p.add_argument("--retry-errors", action="store_true", help="re-send only the keys stored as api_error")
    p.add_argument("--limit", type=int, help="only the first N items of the split (a quick look)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
