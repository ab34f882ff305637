"""The options of each command of `python app.py` (cli.parser adds --db and -v to every one).

Each function fills one command's parser when that command is parsed (cli.parser.LazyParser): a module an
option's choices come from is imported inside its function, so only that command pays for it.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: %(default)s; "
                   "0.0.0.0 for every interface, then pass --auth)")
    p.add_argument("--port", type=int, default=7860, help="the port (default: %(default)s); 0 takes a free one, printed once it listens")
    p.add_argument("--auth", type=Path, help="file of user:password-hash lines; turns on login")
    p.add_argument("--no-demo", action="store_true", help="do not build the demo store when the store is empty")


def hash_password(p: argparse.ArgumentParser) -> None:
    p.add_argument("user")
    p.add_argument("--stdin", action="store_true", help="read the password from the first line of stdin")


def import_items(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path)
    p.add_argument("--name", help="the benchmark's name (default: the file name without extension)")
    p.add_argument("--format", choices=("auto", "jsonl", "vlmevalkit", "hf", "inspect"), default="auto",
                   help="auto: .tsv is VLMEvalKit; .parquet, .arrow or a folder is Hugging Face; an .eval (or an "
                   "Inspect .json log) is Inspect AI's log; else JSONL")
    p.add_argument("--family", help="VLMEvalKit / Hugging Face files: the family (default: generic)")
    p.add_argument("--map", help="Hugging Face files: FIELD=COLUMN,... (see docs/FORMATS.md)")
    p.add_argument("--preset", help="Hugging Face files: force a known layout (mmmu, blink, muirbench, mmbench)")
    p.add_argument("--group-by", metavar="FIELD", help="Inspect logs: the sample metadata field naming each item's "
                   "group (default: metadata group_id or group, else one group per sample)")


def open_paths(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files, folders or zipped folders: Inspect "
                   "logs, VLMEvalKit outputs, lmms-eval output folders, items and predictions files (none: serve the "
                   "store, with the demo when it is empty)")
    p.add_argument("--data", action="append", type=Path, metavar="DIR", default=[],
                   help="a folder of VLMEvalKit dataset TSVs (<dataset>.tsv; $LMUData is searched too)")
    p.add_argument("--group-by", metavar="FIELD", help="Inspect logs: the sample metadata field naming each item's "
                   "group (default: metadata group_id or group, else one group per sample)")
    p.add_argument("--family", help="the family of the benchmarks made from dataset TSVs and logs (default: generic)")
    p.add_argument("--no-serve", action="store_true", help="stop after the import (default: serve the UI on it)")
    p.add_argument("--json", action="store_true", help='print one object {"benchmarks", "runs", "skipped", '
                   '"refused"}; implies --no-serve')
    serve(p)


def import_predictions(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path)
    p.add_argument("--run", required=True)
    p.add_argument("--model", help="the model id to record with the run")
    p.add_argument("--benchmark", help="the benchmark (default: the run's, or the one holding the items)")
    p.add_argument("--config", help="run settings as a JSON object (e.g. '{\"input_mode\": \"text\"}')")
    p.add_argument("--replace", action="store_true", help="overwrite predictions that differ from stored ones")
    p.add_argument("--format", choices=("auto", "jsonl", "csv", "vlmevalkit", "lmms-eval", "inspect"), default="auto",
                   help="auto: by extension and columns (VLMEvalKit .xlsx/.tsv/.json, lmms-eval samples JSONL, "
                   "Inspect AI .eval / .json logs)")
    p.add_argument("--key", help="lmms-eval: the sample field naming the item (default: doc.index, doc.idx, "
                   "doc.id, doc.question_id, else doc_id as a position)")


def import_labels(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=Path)
    p.add_argument("--run", required=True)


def score(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run")
    p.add_argument("--all", action="store_true", help="score every run (of --benchmark, or of all benchmarks); "
                   "with --json, one JSON line per run")
    p.add_argument("--benchmark", help="with --all: only this benchmark's runs")
    p.add_argument("--jobs", type=int, help="with --all: worker processes (default: one per CPU)")
    p.add_argument("--json", action="store_true", help="print {benchmark, run, metrics} as JSON")
    p.add_argument("--compact", action="store_true", help="one-line JSON")
    p.add_argument("--compare", metavar="OTHER_RUN", help="add paired differences with bootstrap CIs")
    p.add_argument("--split", help="the split to score, every family (default: test; 'all': every split)")
    p.add_argument("--cluster", metavar="NAME[,NAME]", help="FrameEvidence: bootstrap clusterings, side by side "
                   "in repeat_intervals (Table 13), the first also for --compare: group (matched groups), image "
                   "(exact-image components: groups sharing an image by content hash), scene (groups sharing a "
                   "--cluster-field value, 000 §6.3), union (groups linked by a shared image or a shared "
                   "--cluster-field value); default group,union (--compare: group)")
    p.add_argument("--cluster-field", metavar="FIELD[,FIELD]", help="the meta field(s) whose shared values link "
                   "groups in the scene and union clusterings (default: scene), e.g. scene,template")
    p.add_argument("--judge", metavar="JUDGE_RUN", help="StemBind: the judge run whose trace judgements feed L2 "
                   "StepAcc (default: the most recent one)")
    p.add_argument("--shortcut-model", metavar="ID", help="SPUR: the text-only model (config model) whose "
                   "randomized trials flag shortcut items (001 §2.3; default: the only one)")
    p.add_argument("--shortcut-pool", action="store_true", help="SPUR: pool every text-only model's trials "
                   "(labelled as pooled)")
    p.add_argument("--set-aside-marked", action="store_true", help="leave out the groups of the items reviewers "
                   "marked 'gold is wrong' (Browse, Item health); the JSON says what was set aside")


def export(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=("items", "predictions", "leaderboard"))
    p.add_argument("--run")
    p.add_argument("--benchmark")
    # no default here: it depends on what is exported (cli.commands.export_format)
    p.add_argument("--format", choices=("jsonl", "csv", "vlmevalkit", "xlsx"),
                   help="items / predictions: jsonl (default), csv, or vlmevalkit (a dataset TSV or a prediction "
                   "TSV VLMEvalKit loads); leaderboard: csv (default) or xlsx")
    p.add_argument("--split", help="leaderboard: the split to score, as score --split (default: test)")


def report(p: argparse.ArgumentParser) -> None:
    # a constant: ui.report imports nothing heavy until a report is written
    from ui.report import GROUP_CHOICES

    p.add_argument("--benchmark", required=True)
    p.add_argument("--runs", help="RUN1,RUN2,... (default: every run of the benchmark)")
    p.add_argument("--split", help="the split to score, as score --split (default: test; 'all': every split)")
    p.add_argument("--groups", default="failing", help=f"the groups the file holds: {GROUP_CHOICES} "
                   "(failing ones first; default: failing)")
    p.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    p.add_argument("--set-aside-marked", action="store_true", help="score without the groups of the items "
                   "reviewers marked 'gold is wrong' (the file says so)")


def demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0)


def list_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print {benchmarks: [...], runs: [...]} as one JSON object")


def judge(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True, help="the run whose F-item traces are judged")
    p.add_argument("--judge-runner", required=True, choices=("lexical", "openai", "transformers"))
    p.add_argument("--judge-run", required=True, help="name of the judge's own run (its judgements)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    p.add_argument("--model", help="judge model id (openai) or local checkpoint directory (transformers)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="name of the environment variable holding the API key (the key is never stored)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=8, help="transformers batch size")
    p.add_argument("--chat-template", metavar="FILE",
                   help="transformers: a Jinja chat template overriding the checkpoint's (recorded by sha256)")
    p.add_argument("--threshold", type=float, default=0.5, help="lexical judge: token-recall threshold")
    p.add_argument("--sample", help="judge only the traces of this calibration sample")
    p.add_argument("--limit", type=int, help="judge at most this many traces (the first by item order)")
    p.add_argument("--timeout", type=float, default=120.0, help="openai: seconds per request")
    p.add_argument("--max-retries", type=int, default=5, help="openai: retries of 429 / 5xx / timeouts")


def calibration(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True, help="the run whose traces were judged and labeled")
    p.add_argument("--sample", help="restrict to this calibration sample")
    p.add_argument("--judge", help="the primary judge run (default: the first judge of the run)")
    p.add_argument("--second-judge", help="a second judge run: kappa vs the first, Spearman rho, weakest stage")
    p.add_argument("--ceiling", metavar="NAME,NAME[;NAME,NAME...]",
                   help="the annotator pair(s) whose kappa is the human ceiling (002 C.3: A2,A3); default every "
                        "annotator pair")
    p.add_argument("--consensus", metavar="NAME,...", help="the annotators whose majority is the human consensus "
                   "for the first-failure comparison (002 C.3: A2,A3); default every annotator")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--draw-sample", metavar="NAME", help="draw and freeze a stratified sample of the run's F traces")
    p.add_argument("--per-operation", type=int, default=20, help="traces per operation when drawing (002 C.3: 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample draw")


def run(p: argparse.ArgumentParser) -> None:
    """The run flags (options whose choices are the prompt strategies, runners and baselines)."""
    from core import prompts
    from core.runners.baselines import BASELINES
    from core.runners.engine import DEFAULT_SEED, RUNNERS
    from core.schema import INPUT_MODES

    p.add_argument("--benchmark", required=True, help="the benchmark to run on")
    p.add_argument("--run", required=True, help="the run's name; the same name and settings resume it")
    p.add_argument("--runner", required=True, choices=RUNNERS)
    p.add_argument("--model", help=f"baseline name ({', '.join(BASELINES)}), local checkpoint folder "
                   "(transformers) or model id (openai)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY",
                   help="name of the environment variable holding the API key (the key is never stored)")
    strategies = prompts.strategies()  # the built-in ones and every family's own
    p.add_argument("--strategy", default="direct", choices=[s.name for s in strategies])
    for s in strategies:
        if s.option is not None:  # a family strategy's own option (its StrategyOption's flag)
            p.add_argument(s.option.flag, dest=s.option.key, choices=s.option.choices,
                           help=f"with --strategy {s.name}: {s.option.help or ', '.join(s.option.choices)}")
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


def slices(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True)
    p.add_argument("--benchmark", help="check that the run is of this benchmark")
    p.add_argument("--compare", metavar="OTHER_RUN", help="rank the slices where --run lost most against OTHER_RUN "
                   "(paired, on the items both answered)")
    p.add_argument("--by", metavar="FIELD[,FIELD]", help="only these fields (default: kind, variant, n_images, "
                   "every meta field with 2-50 values and each tag as tag:NAME)")
    p.add_argument("--depth", type=int, choices=(1, 2), default=1, help="2 adds two-field slices (q over all)")
    p.add_argument("--min-groups", type=int, default=5, help="skip slices (and rests) of fewer groups (default 5)")
    p.add_argument("--split", help="the split (default: test; 'all': every split)")
    p.add_argument("--draws", type=int, default=2000, help="bootstrap draws (default 2000: the first 2000 of the "
                   "stream every interval uses)")
    p.add_argument("--json", action="store_true", help="print {slices: [...]} as JSON")


def failure_modes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", required=True)
    p.add_argument("--benchmark", help="check that the run is of this benchmark")
    p.add_argument("--compare", metavar="OTHER_RUN", help="the modes of the items --run got wrong and OTHER_RUN "
                   "right (the groups it lost)")
    p.add_argument("--split", help="the split (default: test; 'all': every split)")
    p.add_argument("--json", action="store_true", help="print {modes: [...], terms: [...]} as JSON "
                   "(docs/FORMATS.md)")


def item_health(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmark", required=True)
    p.add_argument("--split", help="the split whose accuracies are shown with and without the suspects (default: "
                   "test; 'all': every split); the lists read every split")
    p.add_argument("--json", action="store_true", help="print {suspect_gold, unstable, ambiguous, "
                   "negative_discrimination, duplicates, accuracy_without_suspects, ...} as JSON (docs/FORMATS.md)")
    p.add_argument("--top", type=int, default=10, help="rows listed per section without --json (default 10)")


def search(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--benchmark", help="only this benchmark")
    p.add_argument("--run", action="append", metavar="RUN[,RUN]", help="only these runs' responses, traces and "
                   "label notes (repeatable; item fields are searched all the same)")
    p.add_argument("--in", dest="fields", metavar="FIELD[,FIELD]", help="the fields to search: response, trace, "
                   "question, options, meta, notes (default: all)")
    p.add_argument("--limit", type=int, default=200, help="at most this many hits (0: all; default 200)")
    p.add_argument("--json", action="store_true", help="one JSON line per hit: benchmark, group_id, item_id, run, "
                   "field, snippet (matches marked « »)")


def tag(p: argparse.ArgumentParser) -> None:
    p.add_argument("tag", nargs="?")
    p.add_argument("--benchmark", required=True)
    p.add_argument("--group", help="the group's id")
    p.add_argument("--note")
    p.add_argument("--by", help="who tags (default: cli)")
    p.add_argument("--remove", action="store_true", help="take the tag off")
    p.add_argument("--list", action="store_true", help="list the benchmark's tags (group, tag, note, by, when)")
