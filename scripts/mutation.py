"""`make mutation`: mutmut over the modules whose bugs hide best, one module at a time with its fast unit tests,
and the score (killed / mutants) per module (docs/TESTING.md).

Targets are globs, so a module split into several files (frameevidence/metrics.py and the outcomes, accuracy,
analyses, repeats and paired modules it was split into; db/importers.py and db/import_*.py; a package in place
of a module) stays covered; the modules split out of core/stats.py are targets of their own. Each target runs
in a fresh copy of the tracked files (the worktree is never mutated) under `--max-children` workers and a time
limit; browser tests never run here. A target may be scoped to some of its functions (mutmut's own mutant-name
filter: ssa-guard covers the SSA leakage guard of core/families/stembind/ssa_prompt.py, not the strategy's prompt
wording), and `--sample N` tests a fixed seeded sample of N mutants per target (default 150, seed 28: the whole
run fits in an hour on 2 cores; `--sample 0` tests all of them).

    python scripts/mutation.py [--only NAME ...] [--children N] [--limit SECONDS] [--sample N [--seed S]]
                               [--diffs DIR] [--json FILE] [--again FILE]
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name: (source globs, fast unit test files)
TARGETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # core/stats.py re-exports core/agreement.py, binomial.py and clustering.py (split out of it): one target
    # each, so each module gets its own score; their tests reach them through either name
    "stats": (("core/stats.py", "core/stats_*.py", "core/stats/*.py"),
              ("tests/test_stats.py", "tests/test_frameevidence_analyses.py", "tests/test_scoring_context.py")),
    "agreement": (("core/agreement.py",), ("tests/test_stats.py", "tests/test_calibration.py")),
    "binomial": (("core/binomial.py",), ("tests/test_stats.py",)),
    "clustering": (("core/clustering.py",), ("tests/test_stats.py", "tests/test_frameevidence_analyses.py")),
    "parsing": (("core/parsing.py", "core/parsing_*.py", "core/parsing/*.py"), ("tests/test_parsing.py",)),
    # metrics.py keeps score(); the rest moved to outcomes, accuracy, analyses, repeats, paired
    "frameevidence-metrics": (("core/families/frameevidence/metrics*.py", "core/families/frameevidence/outcomes.py",
                               "core/families/frameevidence/accuracy.py", "core/families/frameevidence/analyses.py",
                               "core/families/frameevidence/repeats.py", "core/families/frameevidence/paired.py"),
                              ("tests/test_frameevidence_metrics.py", "tests/test_frameevidence_analyses.py",
                               "tests/test_frameevidence_edges.py")),
    "stembind-metrics": (("core/families/stembind/metrics*.py", "core/families/stembind/outcomes.py",
                          "core/families/stembind/binding.py", "core/families/stembind/ssa.py",
                          "core/families/stembind/traces.py"), ("tests/test_stembind_metrics.py",)),
    "spur-metrics": (("core/families/spur/metrics*.py",), ("tests/test_spur_metrics.py",)),
    "generic-metrics": (("core/families/generic/metrics*.py",),
                        ("tests/test_common_metrics.py", "tests/test_generic_circular.py")),
    "frameevidence-validator": (("core/families/frameevidence/__init__.py",), ("tests/test_frameevidence_rules.py",)),
    "stembind-validator": (("core/families/stembind/__init__.py",), ("tests/test_import.py",)),
    "foreign": (("core/foreign/*.py",), ("tests/test_foreign_rows.py", "tests/test_import_foreign.py")),
    "ssa-guard": (("core/families/stembind/ssa_prompt.py",), ("tests/test_runners_prompts.py",)),
    # db/importers.py re-exports import_common, import_items, import_predictions and import_labels
    "importers": (("db/importers.py", "db/importers_*.py", "db/importers/*.py", "db/import_*.py"),
                  ("tests/test_import.py", "tests/test_import_errors.py", "tests/test_import_write.py",
                   "tests/test_import_edges.py")),
}
# targets scoped to some functions: mutmut mutant-name globs (module.x_function__mutmut_N); the rest of the
# module is neither mutated into the score nor run
SCOPES: dict[str, tuple[str, ...]] = {
    # the SSA leakage guard (core/families/stembind/ssa_prompt.py's "leakage guard" section); the strategy's
    # prompt wording is not what the issue asks to guard
    "ssa-guard": tuple(f"core.families.stembind.ssa_prompt.x_{f}__mutmut_*" for f in (
        "_noun_phrase_follows", "_letter_spans", "_merge", "_option_spans", "scrub_stage_text", "ssa_stage_texts",
        "ssa_guarded", "ssa_block", "ssa_guard_count", "irrelevant_s1_source")),
}
# tests left out of a target's run: they reach its code only through a `python app.py` subprocess, where mutmut
# records no call, so no mutant is tested by them and they only lengthen the set-up (mutmut runs the target's
# whole test list two or three times before the first mutant; this one is 53 s of each)
DESELECT: dict[str, tuple[str, ...]] = {
    name: ("tests/test_frameevidence_analyses.py::test_cli_score_cluster_flags",)
    for name in ("stats", "clustering", "frameevidence-metrics")
}
# `make mutation` tests a fixed seeded sample of at most SAMPLE mutants per target, so the whole run fits in an
# hour on 2 cores (docs/TESTING.md "Time"); `--sample 0` tests every mutant
SAMPLE = 150
SEED = 28
LIMIT = 240  # seconds per target: 14 targets stay under an hour even when the machine is slow (the tested part counts)
# mutmut's exit codes of a mutant's test run (mutmut.stats.status_by_exit_code); the score is mutmut's own:
# (killed + timeout) / (every mutant less the skipped and unchecked ones), so a mutant no test reaches counts
# against the module
KILLED = {1, 3, 36, 24, -24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}
NOT_COUNTED = {None, 2, 34}


def sources(patterns: tuple[str, ...]) -> list[str]:
    found = sorted({p for pat in patterns for p in glob.glob(pat, root_dir=ROOT)})
    return [p for p in found if p.endswith(".py")]


def copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        if rel.startswith(("docs/screenshots/", "assets/")):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    (dest / ".venv").symlink_to((ROOT / ".venv").resolve())


def importable(root: Path) -> list[str]:
    """The top-level packages and modules of the tracked tree (what mutmut copies next to the mutants): a
    package added on main (cli/, say) comes along without a change here."""
    files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    tops = {rel.split("/", 1)[0] for rel in files if rel.endswith(".py")}
    return sorted(t for t in tops if t.endswith(".py") or (root / t / "__init__.py").exists() or t == "tests")


# `mutmut show` for many mutants in one process (one `mutmut show` each costs a second of start-up)
SHOW = """import sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
with open(sys.argv[1], "w", encoding="utf-8") as out:
    for key in sys.argv[2:]:
        out.write(f"# {key}\\n{get_diff_for_mutant(key, path=find_mutant(key).path)}\\n")
"""


def write_config(work: Path, files: list[str], tests: tuple[str, ...], deselect: tuple[str, ...] = ()) -> None:
    (work / "setup.cfg").write_text(  # mutmut reads lists one entry a line
        "[mutmut]\n"
        + "".join(f"{key} =\n" + "".join(f"    {v}\n" for v in values) for key, values in (
            ("source_paths", files), ("also_copy", importable(ROOT)),
            ("pytest_add_cli_args_test_selection", list(tests)),
            ("pytest_add_cli_args", ["-p", "no:cacheprovider", "-q", *(f"--deselect={t}" for t in deselect)]))),
        encoding="utf-8")


def exit_codes(work: Path) -> dict[str, int | None]:
    codes: dict[str, int | None] = {}
    for meta in (work / "mutants").rglob("*.meta"):
        codes.update(json.loads(meta.read_text()).get("exit_code_by_key", {}))
    return codes


def mutmut(work: Path, names: list[str], children: int, limit: float) -> subprocess.CompletedProcess[str] | None:
    """`mutmut run` over `names` (mutant names or globs; every mutant when empty); None when it ran past `limit`."""
    try:
        return subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(children), *names],
                              cwd=work, capture_output=True, text=True, timeout=max(1.0, limit))
    except subprocess.TimeoutExpired:
        return None


def sampled(names: list[str], sample: int, seed: int) -> list[str]:
    """A fixed seeded sample of `sample` mutant names (all of them when there are no more): the same source and
    seed always give the same sample."""
    if sample <= 0 or len(names) <= sample:
        return names
    return sorted(random.Random(seed).sample(sorted(names), sample))


def digest(files: list[str]) -> str:
    """The sources' sha256: mutant names are stable only while the mutated sources stay as they were."""
    h = hashlib.sha256()
    for f in files:
        h.update(f.encode() + b"\0" + (ROOT / f).read_bytes() + b"\0")
    return h.hexdigest()


def run_target(name: str, children: int, limit: int, sample: int = 0, seed: int = 0,
               diffs: Path | None = None, again: dict | None = None) -> dict:
    """Mutate `name`'s sources and run its tests against each mutant. `again`: this target's result of an earlier
    run over the same sources; only its survivors (and mutants no test reached) are tested again, the rest keep
    their verdict (a test added since can kill a survivor, never revive a killed mutant)."""
    patterns, tests = TARGETS[name]
    files = sources(patterns)
    if not files:
        return {"module": name, "error": "no source file matches " + ", ".join(patterns)}
    sha = digest(files)  # of the sources as they are copied now (an edit while the run goes on changes nothing)
    if again is not None and again.get("sha256") != sha:
        return {"module": name, "error": "the sources changed since the earlier run: run the target in full"}
    scope = tuple(again["survived"] + again["no_tests"]) if again is not None else SCOPES.get(name, ())
    if again is not None and not scope:
        return again
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"mutation-{name}-") as tmp:
        work = Path(tmp)
        copy_tree(work)
        write_config(work, files, tests, DESELECT.get(name, ()))
        names = list(scope)
        if sample:  # generate the mutants (and the test map) first; the filter matching none stops mutmut there
            mutmut(work, ["no-such-mutant"], children, limit)
            every = [k for k in exit_codes(work) if not scope or any(fnmatch.fnmatch(k, g) for g in scope)]
            names = sampled(every, sample, seed)
            # mutmut looks a named mutant's tests up without a default: leave out (and report as "no test
            # reaches") the sampled mutants of functions no test calls
            reached = json.loads((work / "mutants" / "mutmut-stats.json").read_text())["tests_by_mangled_function_name"]
            unreached = [k for k in names if not reached.get(k.partition("__mutmut_")[0])]
            names = [k for k in names if k not in unreached]
        else:
            unreached = []
        proc = mutmut(work, names, children, limit - (time.monotonic() - started)) if names or not sample else None
        codes = {k: c for k, c in exit_codes(work).items()
                 if not names or any(k == g or fnmatch.fnmatch(k, g) for g in names)}
        codes.update({k: 33 for k in unreached})
        survivors = sorted(k for k, c in codes.items() if c in SURVIVED)
        untested = sorted(k for k, c in codes.items() if c in NO_TESTS)
        done = {k: c for k, c in codes.items() if c not in NOT_COUNTED}
        killed = sum(1 for c in done.values() if c in KILLED)
        seconds = round(time.monotonic() - started)
        if again is not None:  # the earlier verdicts of the mutants not tested again
            killed, done_n, total, scope = again["killed"] + killed, again["tested"], again["mutants"], again["scope"]
            seconds, sample = again["seconds"] + seconds, again.get("sample") or 0
        else:
            done_n, total = len(done), len(codes)
        out = {"module": name, "files": files, "sha256": sha, "scope": list(scope), "sample": sample or None,
               "mutants": total, "tested": done_n, "killed": killed, "survived": survivors,
               "no_tests": untested, "score": round(100 * killed / done_n, 1) if done_n else None,
               "timed_out": proc is None and bool(names or not sample), "seconds": seconds,
               "again": len(done) if again is not None else None}
        if proc is not None and (proc.returncode not in (0, 1) or not done):  # nothing tested: say why
            out["error"] = (proc.stderr or proc.stdout)[-2000:]
        if diffs is not None and survivors + untested:  # each survivor's diff (mutmut show), to read after
            diffs.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-c", SHOW, str((diffs / f"{name}.diff").resolve()), *survivors, *untested],
                           cwd=work, capture_output=True, text=True)
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=sorted(TARGETS), help="these targets only")
    ap.add_argument("--children", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--limit", type=int, default=LIMIT, help=f"seconds per target (default {LIMIT})")
    ap.add_argument("--sample", type=int, default=SAMPLE,
                    help=f"test a fixed seeded sample of this many mutants per target (default {SAMPLE}; 0: all)")
    ap.add_argument("--seed", type=int, default=SEED, help=f"the sample's seed (default {SEED})")
    ap.add_argument("--diffs", type=Path, help="write each target's survivors' diffs here (NAME.diff)")
    ap.add_argument("--again", type=Path, help="an earlier --json result: test only its survivors again (same "
                    "sources), adding the earlier verdicts of the rest")
    ap.add_argument("--json", type=Path, help="write the results here as JSON")
    args = ap.parse_args(argv)
    earlier = {r["module"]: r for r in json.loads(args.again.read_text())} if args.again else {}
    results = []
    for name in args.only or list(TARGETS):
        if args.again and name not in earlier:
            print(f"{name:26} not in {args.again}: skipped")
            continue
        res = run_target(name, args.children, args.limit, args.sample, args.seed, args.diffs, earlier.get(name))
        results.append(res)
        score = "n/a" if res.get("score") is None else f"{res['score']}%"
        print(f"{name:26} {score:>7}  killed {res.get('killed', 0)} of {res.get('tested', 0)} tested"
              f" ({res.get('mutants', 0)} mutants{', sampled' if res.get('sample') else ''}, {res.get('seconds', 0)} s)"
              f"{'  TIMED OUT' if res.get('timed_out') else ''}", flush=True)
        for key in res.get("survived", []):
            print(f"    survived: {key}")
        for key in res.get("no_tests", []):
            print(f"    no test reaches: {key}")
        if res.get("error"):
            print(f"    error: {res['error']}")
        if args.json:  # after each target, so a stopped run keeps what it measured
            args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
