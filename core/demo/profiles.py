"""Synthetic model profiles: predictions with controlled error patterns and free-text traces (demo only).

Every run written here is synthetic (config `synthetic: true`, run name prefixed `synth-`, model id
`synthetic/...`). A profile decides, per item, whether it "knows" the answer from latent skills drawn with a
string-seeded RNG (so every run is reproducible), then writes a response in the family's answer style under the
run's rotation: shown letter j = (i + r) mod n for original index i (SPEC §3). Responses include invalid ones
(no letter / conflicting letters) and a few empty `api_error` rows. StemBind F responses carry S1-S4 traces
whose stage errors follow the profile (e.g. perceives and states the rule but maps it to the wrong cell).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.demo.common import rng_for
from core.demo.frameevidence import AXIAL, QUADRANT, relation_in_frame
from core.families.stembind.vocab import KINDS, SSA_CHOICES


@dataclass(slots=True)
class RunSpec:
    """One demo run: its name, benchmark, config and prediction rows (SPEC §3 predictions JSONL fields)."""

    name: str
    benchmark: str
    config: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)


def _config(model: str, **kw: Any) -> dict[str, Any]:
    cfg = {"runner": "synthetic", "model": f"synthetic/{model}", "strategy": "direct", "shots": 0,
           "input_mode": "all", "rotations": 1, "repeats": 1, "seed": 0, "split": "test", "synthetic": True,
           "max_tokens": 1024}
    cfg.update(kw)
    return cfg


def shown_letter(original: str, letters: str, rotation: int) -> str:
    return letters[(letters.index(original) + rotation) % len(letters)]


def _row(item: dict[str, Any], letter: str | None, rotation: int, repeat: int, mode: str, rng, style: str,
         p_invalid: float, p_api: float, trace: str | None = None, tokens: int | None = None,
         say: str | None = None) -> dict[str, Any]:
    """A prediction row; `letter` is the ORIGINAL letter the profile means (or None = no decision)."""
    letters = "".join(item["options"])
    base = {"item_id": item["item_id"], "rotation": rotation, "repeat": repeat, "input_mode": mode}
    u = rng.random()
    if u < p_api:
        return {**base, "response": "", "status": "api_error", "tokens": 0}
    if letter is None or u < p_api + p_invalid:
        a, b = rng.sample(letters, 2)
        bad = rng.choice([
            "无法从图片中确定。" if style == "zh" else "I cannot determine this from the image.",
            f"{a} 或 {b}" if style == "zh" else f"It is either {a} or {b}.",
            "<ANSWER></ANSWER>" if style == "tag" else "The answer depends on the viewpoint.",
        ])
        row = {**base, "response": (trace + "\n" + bad) if trace else bad, "status": "invalid",
               "tokens": tokens or len(bad)}
        if trace:
            row["trace"] = trace
        return row
    shown = shown_letter(letter, letters, rotation)
    text = say or ""
    if style == "zh":
        resp = rng.choice([f"答案：{shown}", f"{text}因此选择 {shown}。" if text else f"选 {shown}", f"{shown}"])
    elif style == "tag":
        resp = (trace + "\n" if trace else "") + f"<ANSWER>{shown}</ANSWER>"
    else:
        resp = rng.choice([f"Answer: {shown}", f"The correct option is {shown}.", f"{shown}"])
    row = {**base, "response": resp, "answer": shown, "status": "ok", "tokens": tokens or max(4, len(resp) // 2)}
    if trace:
        row["trace"] = trace
    return row


def _wrong(rng, item: dict[str, Any], avoid: set[str]) -> str:
    choices = [k for k in item["options"] if k not in avoid] or list(item["options"])
    return rng.choice(choices)


# ---------------------------------------------------------------- FrameEvidence


def _fe_direction(item: dict[str, Any], frame: str) -> str | None:
    """The option letter the geometry gives when the question is read in `frame` (used by frame-biased profiles)."""
    m = item["meta"]
    objs = {o["name"]: o for o in m["objects"]}
    T, R = objs[m["target"]], objs[m["relatum"]]
    if frame == "cam":
        views = m["views"]
        heading = views[min(len(views), m.get("camera_ordinal") or 1) - 1]["heading"]
    elif frame == "scene":
        heading = m["landmark"]["heading"]
    else:
        heading = objs[m["anchor"]]["facing"] if m.get("anchor") else m["landmark"]["heading"]
    zh, _ = relation_in_frame((T["x"], T["y"]), (R["x"], R["y"]), heading, m["relation"])
    return next((k for k, v in item["options"].items() if v == zh), None)


FE_PROFILES: dict[str, dict[str, Any]] = {
    # skill per variant, position bias when unsure, invalid and api_error rates
    "frameaware-v1": {"cam": 0.8, "obj": 0.55, "scene": 0.62, "mss": 0.62, "del": 0.5, "add": 0.52,
                      "bias": 0.35, "invalid": 0.02, "api": 0.004, "camera_default": 0.5},
    "camera-default-v1": {"cam": 0.7, "obj": 0.08, "scene": 0.1, "mss": 0.5, "del": 0.08, "add": 0.45,
                          "bias": 0.2, "invalid": 0.01, "api": 0.0, "camera_default": 1.0},
}


def _fe_answer(item: dict[str, Any], prof: dict[str, Any], rng, mode: str) -> str | None:
    var, gold = item["variant"], item["answer"]
    p = prof[var]
    n_img = len(item["images"])
    ins = item["meta"].get("insufficient_option")
    if mode == "text":
        return _blind_guess(item, prof, rng)
    if mode == "first" and n_img > 1:
        p = p * (0.55 if item["kind"] == "FQ1" else 0.3)
    if rng.random() < p:
        return gold
    # wrong: camera-frame default, insufficient when evidence looks thin, or a position-biased guess
    if item["kind"] == "FQ1" and var != "cam" and mode != "text" and rng.random() < prof["camera_default"]:
        cam = _fe_direction(item, "cam")
        if cam and cam != gold:
            return cam
    if ins and mode == "first" and rng.random() < 0.6:
        return ins if ins != gold else _wrong(rng, item, {gold})
    if rng.random() < prof["bias"]:
        return "A" if gold != "A" else "B"
    return _wrong(rng, item, {gold})


def _blind_guess(item: dict[str, Any], prof: dict[str, Any], rng) -> str:
    """What a model that cannot see the images answers (text-only input, 000 VG): near chance, never a skill.
    With the profile's position bias it says A; on an FQ2 item it sometimes says the insufficient-evidence option
    (sensible without any image); else any option uniformly, the gold one included."""
    ins = item["meta"].get("insufficient_option")
    u = rng.random()
    if u < prof["bias"] / 2:
        return "A"
    if ins and u < prof["bias"] / 2 + 0.2:
        return str(ins)
    return rng.choice(list(item["options"]))


def frameevidence_runs(items: list[dict[str, Any]], seed: int = 0) -> list[RunSpec]:
    test = [it for it in items if it["split"] == "test"]
    runs: list[RunSpec] = []

    def build(name: str, model: str, mode: str, rotations: int, repeats: int, **cfg: Any) -> RunSpec:
        prof = FE_PROFILES[model]
        spec = RunSpec(name, "frameevidence", _config(model, input_mode=mode, rotations=rotations, repeats=repeats,
                                                       seed=seed, **cfg))
        for it in test:
            for r in range(rotations):
                for rep in range(repeats if r == 0 else 1):
                    key_rng = rng_for(name if rep == 0 or rng_for(name, it["item_id"], "stay").random() > 0.2 else
                                      name + "#rep", it["item_id"], r)
                    letter = _fe_answer(it, prof, key_rng, mode)
                    spec.rows.append(_row(it, letter, r, rep, mode, rng_for(name, it["item_id"], r, rep, "io"), "zh",
                                          prof["invalid"], prof["api"], say=None))
        return spec

    runs.append(build("synth-fe-frameaware", "frameaware-v1", "all", 4, 2))
    runs.append(build("synth-fe-frameaware-text", "frameaware-v1", "text", 1, 1))
    runs.append(build("synth-fe-frameaware-first", "frameaware-v1", "first", 1, 1))
    runs.append(build("synth-fe-camera-default", "camera-default-v1", "all", 1, 1))
    return runs


# ---------------------------------------------------------------- StemBind


SB_PROFILES: dict[str, dict[str, float]] = {
    # see: perceives the stem; rule: states the rule; bind: maps rule to the right cell given see & rule
    "binder-weak-v1": {"see": 0.85, "rule": 0.85, "bind": 0.35, "invalid": 0.02, "api": 0.003},
    "balanced-v1": {"see": 0.7, "rule": 0.62, "bind": 0.7, "invalid": 0.03, "api": 0.003},
    "balanced-v1-thinking": {"see": 0.7, "rule": 0.66, "bind": 0.6, "invalid": 0.05, "api": 0.006},
}
SSA_BOOST = {"H0": {}, "H1": {"see": 1.0}, "H2": {"see": 1.0, "rule": 1.0},
             "H3": {"see": 1.0, "rule": 1.0, "bind": 0.75}, "H4": {"see": 1.0, "rule": 1.0, "bind": 0.88},
             "irrelevant": {"see": -0.05}}


def _latent(model: str, stem: str, skill: str, p: float, seed: int) -> bool:
    return rng_for("latent", model.replace("-thinking", ""), stem, skill, seed).random() < p


def _sb_trace(item: dict[str, Any], flags: dict[str, bool], chosen: str, rng, long: bool) -> str:
    st = item["stages"]
    meta = item["meta"]
    lines = []
    s1 = st["S1"] if flags["S1"] else _corrupt(st["S1"], rng)
    lines.append("First, the panels. " + s1)
    if flags["S2"]:
        lines.append("Rule: " + st["S2"])
    else:
        lines.append("Rule: " + rng.choice([
            "the pattern seems to alternate between two states.", "each cell copies the one on its left.",
            "the count of elements stays constant within each row.", "everything rotates by 90 degrees."]))
    if flags["S3"]:
        lines.append("Mapping: " + st["S3"])
    else:
        where = "row 2, column 3" if meta["layout"] == "3x3" else "the second panel"
        lines.append(f"Mapping: I apply the rule to {where} instead of the missing cell, so the answer should look "
                     "like that cell.")
    if long:
        lines.append("Let me double-check each candidate against the rule. " + " ".join(
            f"Candidate {k} {'fits' if k == chosen else 'does not fit'}." for k in item["options"]))
    lines.append(f"Therefore the answer is {chosen}.")
    return "\n".join(lines)


def _corrupt(text: str, rng) -> str:
    swaps = [("red", "green"), ("blue", "purple"), ("circle", "square"), ("triangle", "diamond"), ("2 ", "3 "),
             ("left", "right"), ("top", "bottom"), ("solid", "outline"), ("90", "45")]
    rng.shuffle(swaps)
    for a, b in swaps:
        if a in text:
            return text.replace(a, b, 1)
    return text + " (the last row looks identical to the first)"


def _skill(k: str, prof: dict[str, float], mode: str, boost: dict[str, float], model: str, stem: str,
           seed: int) -> bool:
    p = prof[k] if mode == "all" else {"see": 0.0, "rule": 0.35, "bind": 0.1}[k]
    b = boost.get(k)
    if b is not None:
        p = min(1.0, max(0.0, b if b > 0 else p + b))
    return _latent(model, stem, k, p, seed)


def _sb_rows(items: list[dict[str, Any]], name: str, model: str, prof: dict[str, float], mode: str, seed: int,
             boost: dict[str, float], long: bool, kinds: tuple[str, ...] = KINDS) -> list[dict[str, Any]]:
    rows = []
    for it in items:
        if it["kind"] not in kinds:
            continue
        stem = it["group_id"]
        rng = rng_for(name, it["item_id"], "answer")

        see, rule, bind = (_skill(k, prof, mode, boost, model, stem, seed) for k in ("see", "rule", "bind"))
        gold = it["answer"]
        trace = None
        tokens = None
        if mode == "text" and it["kind"] != "F":  # cannot see the stem: a blind guess, near chance
            letter = rng.choice(list(it["options"]))
        elif it["kind"] == "P":
            p_ok = 0.94 if see else 0.45
            letter = gold if rng.random() < p_ok else _wrong(rng, it, {gold})
        elif it["kind"] == "R":
            p_ok = 0.93 if rule else 0.3
            letter = gold if rng.random() < p_ok else _wrong(rng, it, {gold})
        else:
            solved = see and rule and bind
            lucky = not solved and rng.random() < 1.0 / len(it["options"])
            letter = gold if (solved or lucky) else _wrong(rng, it, {gold})
            flags = {"S1": see, "S2": rule, "S3": see and rule and bind, "S4": letter == gold}
            trace = _sb_trace(it, flags, shown_letter(letter, "".join(it["options"]), 0), rng, long)
            tokens = int(len(trace.split()) * 1.4 * (2.6 if long else 1.0)) + rng.randint(0, 40)
            if long and rng.random() < 0.05:
                tokens = 4096  # hit the cap
        rows.append(_row(it, letter, 0, 0, mode, rng_for(name, it["item_id"], "io"), "tag", prof["invalid"],
                         prof["api"], trace=trace, tokens=tokens))
    return rows


def stembind_runs(items: list[dict[str, Any]], seed: int = 0) -> list[RunSpec]:
    runs = []
    for name, model, mode, strat, long in (
            ("synth-sb-binder-weak", "binder-weak-v1", "all", "thinking", True),
            ("synth-sb-balanced-direct", "balanced-v1", "all", "direct", False),
            ("synth-sb-balanced-thinking", "balanced-v1-thinking", "all", "thinking", True),
            ("synth-sb-balanced-text", "balanced-v1", "text", "direct", False)):
        cfg = _config(model.replace("-thinking", ""), strategy=strat, input_mode=mode, seed=seed,
                      max_tokens=4096 if long else 1024)
        runs.append(RunSpec(name, "stembind", cfg,
                            _sb_rows(items, name, model, SB_PROFILES[model], mode, seed, {}, long)))
    for level in SSA_CHOICES:
        name = f"synth-sb-binder-ssa-{level}"
        cfg = _config("binder-weak-v1", strategy="ssa", ssa_level=level, seed=seed, max_tokens=4096)
        cfg["ssa_guard"] = _ssa_guard(items, name, level, seed)
        runs.append(RunSpec(name, "stembind", cfg, _sb_rows(items, name, "binder-weak-v1", SB_PROFILES["binder-weak-v1"],
                                                            "all", seed, SSA_BOOST[level], True, kinds=("F",))))
    name = "synth-sb-mirror-repeats"  # failure modes in its words and unstable items (issue #38): _sb_mirror_rows
    runs.append(RunSpec(name, "stembind", _config("mirror-v1", strategy="thinking", repeats=3, seed=seed),
                        _sb_mirror_rows(items, name, seed)))
    return runs


MIRROR_SAYS = ("The image looks mirrored, so what sits on the left belongs on the right; reading it flipped.",
               "Seen in a mirror the panels swap sides, so the left cell is really the right one.")
COUNT_SAYS = ("Counting the shapes one by one I get one fewer than the row needs, so the count is off by one.",
              "I count the elements again and keep finding one too few in the last panel.")
PLAIN_SAYS = ("Reading the panels in order, the shapes follow the grid as drawn.",
              "Checking each cell row by row against the question.", "The panels are clear enough to read.")


def _sb_mirror_rows(items: list[dict[str, Any]], name: str, seed: int) -> list[dict[str, Any]]:
    """A run of three repeats whose answers say why they fail: in about a fifth of the stems the model reads the
    image as mirrored, in another fifth it miscounts, and its failing answers there say so (two failure modes in its
    words, docs/METRICS.md "Failure modes"); on about one item in thirty its letter changes from repeat to repeat
    (unstable items, "Item health"). Its passing answers, and its failures elsewhere, say plain things."""
    rows = []
    for it in items:
        stem = it["group_id"]
        pick = rng_for(name, stem, "trouble", seed).random()
        trouble = "mirror" if pick < 0.2 else "count" if pick < 0.4 else None
        rng = rng_for(name, it["item_id"], "answer", seed)
        fails = rng.random() < (0.8 if trouble else 0.12)
        letter = _wrong(rng, it, {it["answer"]}) if fails else it["answer"]
        flips = rng_for(name, it["item_id"], "flip", seed).random() < 0.035
        says = (MIRROR_SAYS if trouble == "mirror" else COUNT_SAYS) if fails and trouble else PLAIN_SAYS
        for rep in range(3):
            chosen = rng_for(name, it["item_id"], "repeat", rep).choice(list(it["options"])) if flips else letter
            text = rng_for(name, it["item_id"], "says", rep).choice(says)
            rows.append(_row(it, chosen, 0, rep, "all", rng_for(name, it["item_id"], "io", rep), "tag", 0.01, 0.0,
                             trace=text))
    return rows


def _ssa_guard(items: list[dict[str, Any]], name: str, level: str, seed: int) -> dict[str, Any]:
    """The leakage-guard count the runner would record for this SSA run (the strategy's run_config)."""
    import pandas as pd

    from core.families.stembind.ssa_prompt import guard_record
    from core.runners.engine import make_view

    frame = pd.DataFrame(items)
    views = [make_view(row, str) for _, row in frame[(frame["split"] == "test") & (frame["kind"] == "F")].iterrows()]
    return guard_record(frame, views, level, seed)["ssa_guard"]


# ---------------------------------------------------------------- SPUR


SPUR_PROFILES: dict[str, dict[str, float]] = {
    "generalist-v1": {"NP": 0.55, "MP": 0.72, "IL": 0.82, "TA": 0.38, "HI": 0.7, "Qual": 0.62, "Quant": 0.4,
                      "invalid": 0.02, "api": 0.005},
    "generalist-v1-ddcot": {"NP": 0.5, "MP": 0.7, "IL": 0.8, "TA": 0.42, "HI": 0.72, "Qual": 0.6, "Quant": 0.45,
                            "invalid": 0.03, "api": 0.005},
}


def spur_runs(items: list[dict[str, Any]], seed: int = 0) -> list[RunSpec]:
    runs = []
    by_fig: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        by_fig.setdefault(it["group_id"], []).append(it)
    for name, model, strat in (("synth-spur-generalist", "generalist-v1", "direct"),
                               ("synth-spur-generalist-ddcot", "generalist-v1-ddcot", "ddcot")):
        prof = SPUR_PROFILES[model]
        spec = RunSpec(name, "spur", _config("generalist-v1", strategy=strat, seed=seed, profile=model))
        for fig, its in by_fig.items():
            seen = rng_for(model, fig, "perception").random() < 0.6  # figure-level perception latent
            for it in its:
                rng = rng_for(name, it["item_id"])
                p = prof[it["kind"]]
                if it["meta"]["stage"] == "reasoning":
                    p = min(1.0, p + (0.18 if seen else -0.15))
                elif it["meta"]["stage"] == "perception":
                    p = min(1.0, p + (0.1 if seen else -0.1))
                letter = it["answer"] if rng.random() < p else _wrong(rng, it, {it["answer"]})
                spec.rows.append(_row(it, letter, 0, 0, "all", rng_for(name, it["item_id"], "io"), "en",
                                      prof["invalid"], prof["api"]))
        runs.append(spec)
    # randomized text-only runs for the shortcut filter (001 §2.3): a few items leak their answer through text
    for k in range(3):
        name = f"synth-spur-textonly-s{k + 1}"
        spec = RunSpec(name, "spur", _config("generalist-v1", input_mode="text", seed=seed + k + 1))
        for it in items:
            leak = rng_for("leak", it["item_id"], seed).random() < 0.12
            rng = rng_for(name, it["item_id"])
            letter = it["answer"] if rng.random() < (0.85 if leak else 0.25) else _wrong(rng, it, {it["answer"]})
            spec.rows.append(_row(it, letter, 0, 0, "text", rng_for(name, it["item_id"], "io"), "en", 0.02, 0.0))
        runs.append(spec)
    return runs


RUN_BUILDERS: dict[str, Callable[[list[dict[str, Any]], int], list[RunSpec]]] = {
    "frameevidence": frameevidence_runs, "stembind": stembind_runs, "spur": spur_runs,
}
del math, AXIAL, QUADRANT
