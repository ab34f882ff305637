"""The Judge tab: annotators label judged traces (StemBind: F items) stage by stage (SPEC §7, issue 8).

The stages, their names, the first-failure rule and the error-audit categories are those of the traces run's
family (`StageJudging`, core.families.stage_judging). When the header's benchmark is of a family without stage
judging and no benchmark of the store has any, the tab shows a one-line note instead of its controls
(`availability`).

- Identity: the signed-in user (`gr.Request.username`) when the app runs with --auth; otherwise the annotator
  types a name once (kept in the browser's localStorage) and the tab says it runs in unauthenticated mode.
- Queue: a frozen calibration sample or a filter over the run's F traces, with "trace i of N" and
  "k of N labeled by you".
- Blind mode (on by default) hides the judge's flags and other annotators' labels.
- Keyboard: 1-4 toggle S1-S4, Enter saves and moves on, S skips, U undoes the last save or skip (Escape leaves
  the note field). KEYS_JS queues the keys: one round trip at a time, a key typed meanwhile is held until the
  answer is on screen; each save / skip / undo carries the trace id on screen and a number the server echoes
  in #jd-cur. `on_action` refuses a save or skip for another trace than the current one.
- The handlers are module-level functions of the store, the --auth flag and plain values (tested without a
  browser in tests/ui/test_judge_handlers.py); `build_judge` lays the tab out and wires them (ui.handlers.bind).
- Every save is written at once by db.labels.save_label (one transaction with its audit row); the API
  endpoint `/save_label` (annotator, run, item_id, rotation, repeat, S1..S4, category, note) saves one label
  without the queue.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from core import families
from core.errors import CrosscheckError
from core.families.stage_judging import StageJudging
from core.schema import STAGES
from db import judging
from db import labels as dbl
from db.store import Store
from ui import trace_view
from ui.context import Ctx, keep, refreshed
from ui.handlers import bind, username
from ui.judge_keys import CSS, KEYS_JS
from ui.templating import macro, style

NO_CATEGORY = ("— no decisive error / not audited", "")


def category_choices(jd: StageJudging | None) -> list[tuple[str, str]]:
    """The error-audit categories of a family's stage judging, after the empty choice."""
    return [NO_CATEGORY] + [(c.replace("_", " "), c) for c in (jd.audit_categories if jd else ())]



def run_judging(store: Store, run: str | None) -> StageJudging | None:
    """The stage judging of `run`'s family; None without a run or for a family without it."""
    return families.judging_of(str(store.run(run)["family"])) if run else None


def availability(store: Store, bench: str | None) -> tuple[bool, str]:
    """Whether the Judge and Calibration controls show, and the one-line note above them: hidden when no
    benchmark of the store has a family with stage judging; shown with a note when the header's benchmark
    is of a family without it (the traces runs listed are then of the benchmarks that have it)."""
    judged = judging.judged_benchmarks(store)
    if not judged:
        return False, ("No benchmark in this store is of a family with stage-judged traces, so there is nothing to "
                       "judge or calibrate here.")
    if not bench or bench in judged:
        return True, ""
    fam = store.benchmark_family(bench)
    return True, (f"Benchmark {html.escape(bench)} ({html.escape(fam)}) has no stage-judged traces; the traces runs "
                  f"below are of {html.escape(', '.join(judged))}.")


def layout_judging(store: Store, run: str | None) -> StageJudging | None:
    """The stage judging the tab is laid out with (its stage names, its categories): the first traces run's
    family's, else the first judged benchmark's."""
    jd = run_judging(store, run)
    for bench in ([] if jd else judging.judged_benchmarks(store)[:1]):
        jd = families.judging_of(store.benchmark_family(bench))
    return jd


def on_availability(store: Store, bench: str | None) -> tuple[Any, Any]:
    """The note and the controls' visibility for the header's benchmark (`availability`)."""
    shown, note = availability(store, bench)
    return gr.update(value=note, visible=bool(note)), gr.update(visible=shown)


def _flags_of(values: list[Any], jd: StageJudging) -> dict[str, int | None]:
    return {s: (None if v is None else int(bool(v))) for s, v in zip(jd.stages, values, strict=False)}


def ff_html(values: list[Any], jd: StageJudging | None) -> str:
    if jd is None:
        return macro("judge.html", "first_failure")("", "")
    ff = jd.first_failure(bool(v) for v in values)
    return macro("judge.html", "first_failure")(ff, "" if ff == jd.no_failure else jd.stage_names[ff],
                                               ff == jd.no_failure)


def parse_action(text: str | None) -> dict[str, Any]:
    """The keyboard queue's action: op (save / skip / undo), key (the trace on screen), flags (the four stage
    boxes as shown), seq (its number, echoed back). Anything malformed reads as op "unknown" or an action for no
    trace, which on_action refuses."""
    try:
        raw = json.loads(text or "{}")
    except json.JSONDecodeError:
        raw = {}
    raw = raw if isinstance(raw, dict) else {}
    op = raw.get("op") if raw.get("op") in ("save", "skip", "undo") else "unknown"
    key: tuple[str, int, int] | None = None
    try:
        k = json.loads(raw.get("key") or "null")
        if isinstance(k, list) and len(k) == 3:
            key = (str(k[0]), int(k[1]), int(k[2]))
    except (TypeError, ValueError):
        key = None
    flags = raw.get("flags")
    if not (isinstance(flags, list) and len(flags) == 4):
        flags = [True] * 4
    try:
        seq = int(raw.get("seq") or 0)
    except (TypeError, ValueError):
        seq = 0
    return {"op": op, "key": key, "flags": [bool(f) for f in flags], "seq": seq}


def _first_source(choices: list[tuple[str, str]]) -> str:
    return next((v for _, v in choices if v.startswith("sample:")), "filter:all")


class IdentityRefused(CrosscheckError, PermissionError):
    """No annotator name, or a typed name that is not the signed-in user's."""


def identity(auth: bool, typed: str | None, user: str | None) -> str:
    """Who saves: the signed-in user under --auth (a typed name must match it), else the typed name."""
    if auth:
        if not user:
            raise IdentityRefused("not signed in")
        if typed and typed.strip() and typed.strip() != user:
            raise IdentityRefused(f"signed in as {user}: you can only save your own labels")
        return user
    name = (typed or "").strip()
    if not name:
        raise IdentityRefused("type your annotator name first (unauthenticated mode)")
    return name


# --------------------------------------------------------------------------- what the tab shows


def run_choices(store: Store, bench: str | None = None) -> list[tuple[str, str]]:
    """Trace runs of every benchmark (only families with stage judging have them); the header's first."""
    runs = judging.trace_runs(store)
    runs.sort(key=lambda r: (r["benchmark"] != bench, r["benchmark"], r["id"]))
    several = len({r["benchmark"] for r in runs}) > 1
    return [(("[synthetic] " if r["synthetic"] else "") + r["name"]
             + (f" ({r['benchmark']})" if several else ""), r["name"]) for r in runs]


def source_choices(store: Store, run: str | None) -> list[tuple[str, str]]:
    out = []
    jd = run_judging(store, run)
    kind = f"{jd.judged_kind} " if jd else ""
    if run:
        out += [(f"calibration sample {s['name']} ({s['n']} traces)", f"sample:{s['name']}")
                for s in judging.samples(store, run)]
    out += [(f"all {kind}traces", "filter:all"), (f"{kind}traces answered wrong", "filter:wrong"),
            (f"{kind}traces I have not labeled", "filter:unlabeled")]
    return out


def queue_keys(store: Store, run_name: str, src: str, me: str) -> list[tuple[str, int, int]]:
    """The traces of a queue: a frozen sample in its order, or a filter over the run's judged traces."""
    if src.startswith("sample:"):
        sf = judging.sample_frame(store, src.split(":", 1)[1])
        return [(i, int(r), int(p)) for i, r, p in zip(sf["item_id"], sf["rotation"], sf["repeat"], strict=True)]
    recs = judging.trace_records(store, run_name)
    keys = [(i, int(r), int(p)) for i, r, p in zip(recs["item_id"], recs["rotation"], recs["repeat"], strict=True)]
    if src == "filter:wrong":
        wrong = {(i, int(r), int(p)) for i, r, p, st_, a, g in zip(
            recs["item_id"], recs["rotation"], recs["repeat"], recs["status"], recs["answer"],
            recs["gold"], strict=True) if not (st_ == "ok" and a == g)}
        keys = [k for k in keys if k in wrong]
    elif src == "filter:unlabeled":
        mine = dbl.labeled_keys(store, run_name, me)
        keys = [k for k in keys if k not in mine]
    return keys


def others_of(store: Store, run_name: str, key: tuple[str, int, int], me: str) -> tuple[dict, dict]:
    """The judges' flags and the other annotators' labels of one trace (hidden in blind mode)."""
    stages = judging.stage_judging(store, run_name).stages
    judges: dict[str, dict[str, Any]] = {}
    jf = judging.judgements_frame(store, run_name)
    jf = jf[(jf["item_id"] == key[0]) & (jf["rotation"] == key[1]) & (jf["repeat"] == key[2])]
    for r in jf.to_dict("records"):
        judges[str(r["judge"])] = {"status": r["status"], **{s: r[s] for s in stages}}
    humans: dict[str, dict[str, Any]] = {}
    lf = dbl.labels_frame(store, run_name)
    lf = lf[(lf["item_id"] == key[0]) & (lf["rotation"] == key[1]) & (lf["repeat"] == key[2])]
    for r in lf.to_dict("records"):
        if r["labeler"] == me:
            continue
        target = judges if r["kind"] == "judge" else humans
        target[str(r["labeler"])] = {s: r[s] for s in stages}
    return judges, humans


def render_view(store: Store, st: dict[str, Any], me: str, blind_on: bool, values: list[Any]) -> str:
    queue = st.get("queue") or []
    pos = st.get("pos", 0)
    if not queue or pos >= len(queue):
        return trace_view.render(None)
    key = (str(queue[pos][0]), int(queue[pos][1]), int(queue[pos][2]))
    rec = judging.trace_record(store, st["run"], key)
    image = None
    if rec.get("images"):
        try:
            image = (store.thumbnail(rec["images"][0], 480), store.image_path(rec["images"][0]))
        except (CrosscheckError, OSError):
            image = None
    judges, humans = others_of(store, st["run"], key, me)
    synthetic = bool(store.run(st["run"])["synthetic"])
    jd = judging.stage_judging(store, st["run"])
    return trace_view.render(rec, own=_flags_of(values, jd), own_name=me or "you", judges=judges, humans=humans,
                             blind=blind_on, image=image, synthetic=synthetic, judging=jd)


def progress_html(store: Store, st: dict[str, Any], me: str, saved: dict[str, Any] | None = None, seq: int = 0,
                  ok: bool = True) -> str:
    """The position line; its #jd-cur marker names the trace on screen and echoes the last action's number
    (the keyboard queue in KEYS_JS waits for it)."""
    queue = st.get("queue") or []
    n = len(queue)
    pos = st.get("pos", 0)
    key = json.dumps(list(queue[pos])) if pos < n else ""
    mine = dbl.labeled_keys(store, st["run"], me) if me and n else set()
    return macro("judge.html", "progress")(
        key=key, seq=int(seq), ok=int(ok), n=n, pos=pos, done=sum(1 for k in queue if tuple(k) in mine),
        me=me or "you", saved=saved is not None)


def show(store: Store, st: dict[str, Any], me: str, blind_on: bool, msg: str = "", seq: int = 0,
         ok: bool = True) -> list[Any]:
    """Outputs: state, view, progress, the four stage boxes, ff, category, note, item, rotation, repeat, status."""
    queue = st.get("queue") or []
    pos = st.get("pos", 0)
    jd = run_judging(store, st.get("run"))
    if not queue or pos >= len(queue) or jd is None:
        return [st, render_view(store, st, me, blind_on, [True] * 4), progress_html(store, st, me, seq=seq, ok=ok),
                *[gr.update(value=True)] * 4, ff_html([True] * 4, jd), "", "", "", 0, 0, msg]
    key = (str(queue[pos][0]), int(queue[pos][1]), int(queue[pos][2]))
    saved = dbl.label_of(store, st["run"], key, me) if me else None
    if saved is not None and all(saved[s] is None for s in jd.stages):
        saved = None  # a cleared label counts as unlabeled
    values = [True] * 4 if saved is None else [bool(saved[s]) if saved[s] is not None else True for s in jd.stages]
    return [st, render_view(store, st, me, blind_on, values), progress_html(store, st, me, saved, seq=seq, ok=ok),
            *values, ff_html(values, jd), (saved or {}).get("category") or "", (saved or {}).get("note") or "", key[0],
            key[1], key[2], msg]


N_OUTPUTS = 14  # what `show` returns, in the order of the layout's outputs


# --------------------------------------------------------------------------- handlers


def on_run(store: Store, run_name: str | None) -> dict[str, Any]:
    choices = source_choices(store, run_name)
    return gr.update(choices=choices, value=_first_source(choices))


def on_start(store: Store, auth: bool, run_name: str | None, src: str | None, typed: str | None, blind_on: bool,
             request: gr.Request | None = None) -> list[Any]:
    """Load a queue and show its first trace the annotator has not labeled yet."""
    try:
        me = identity(auth, typed, username(request))
    except IdentityRefused as exc:
        return [gr.update()] * (N_OUTPUTS - 1) + [f"**{html.escape(str(exc))}**"]
    if not run_name:
        return [gr.update()] * (N_OUTPUTS - 1) + ["**Choose a traces run first.**"]
    keys = queue_keys(store, run_name, src or "filter:all", me)
    mine = dbl.labeled_keys(store, run_name, me)
    pos = next((i for i, k in enumerate(keys) if k not in mine), 0)
    st = {"run": run_name, "queue": [list(k) for k in keys], "pos": pos, "history": []}
    return show(store, st, me, blind_on, f"Queue of {len(keys)} traces loaded for **{html.escape(me)}**.")


def save_label_api(store: Store, auth: bool, annotator: str, run: str, item_id: str, rotation: int, repeat: int,
                   S1: bool, S2: bool, S3: bool, S4: bool, category: str, note: str,
                   request: gr.Request | None = None) -> str:
    """Save one label of one trace at once (with its audit row); returns what happened."""
    me = identity(auth, annotator, username(request))
    if not run or not item_id:
        raise IdentityRefused("name the run and the trace (item_id, rotation, repeat)")
    res = dbl.save_label(store, run, (item_id, int(rotation or 0), int(repeat or 0)), me,
                         _flags_of([S1, S2, S3, S4], judging.stage_judging(store, run)),
                         category=category or None, note=note, changed_by=me)
    word = "Saved" if res["status"] == "saved" else "Unchanged"
    return f"{word}: {html.escape(item_id)} (first failure {res['first_failure']})."


def on_action(store: Store, auth: bool, st: dict[str, Any], typed: str | None, blind_on: bool,
              action_json: str | None, cat: str | None, note_text: str | None,
              request: gr.Request | None = None) -> list[Any]:
    """Save, skip or undo, for the trace the action names (the one on screen when its key was applied).

    A save or skip for any other trace than the current one is refused and nothing moves, so a label
    never lands on another trace and no trace is passed over without a save or a skip."""
    act = parse_action(action_json)
    seq = act["seq"]
    try:
        me = identity(auth, typed, username(request))
    except IdentityRefused as exc:
        return show(store, st, "", blind_on, f"**{html.escape(str(exc))}**", seq=seq, ok=False)
    queue = st.get("queue") or []
    pos = st.get("pos", 0)
    current = tuple(queue[pos]) if pos < len(queue) else None
    if act["op"] == "undo":
        return undo(store, st, me, blind_on, seq)
    if act["op"] == "unknown":
        return show(store, st, me, blind_on, "**Refused:** not a save, skip or undo.", seq=seq, ok=False)
    if current is None:
        return show(store, st, me, blind_on, "End of the queue: nothing to save or skip.", seq=seq, ok=False)
    if act["key"] != current:
        return show(store, st, me, blind_on, f"**Refused:** the {act['op']} was typed for "
                    f"{html.escape(str(act['key'][0]) if act['key'] else '(no trace)')} but "
                    f"{html.escape(str(current[0]))} is on screen; nothing was saved.", seq=seq, ok=False)
    if act["op"] == "skip":
        st = {**st, "pos": pos + 1, "history": [*st.get("history", []), {"action": "skip", "pos": pos}]}
        return show(store, st, me, blind_on, f"Skipped {html.escape(str(current[0]))}.", seq=seq)
    try:
        flags = _flags_of(act["flags"], judging.stage_judging(store, st["run"]))
        res = dbl.save_label(store, st["run"], act["key"], me, flags, category=cat or None,
                             note=note_text, changed_by=me)
    except CrosscheckError as exc:
        return show(store, st, me, blind_on, f"**Not saved:** {html.escape(str(exc))}", seq=seq, ok=False)
    word = "Saved" if res["status"] == "saved" else "Unchanged"
    st = {**st, "pos": pos + 1, "history": [*st.get("history", []), {"action": "save", "pos": pos}]}
    return show(store, st, me, blind_on, f"{word}: {html.escape(str(current[0]))} (first failure "
                f"{res['first_failure']}).", seq=seq)


def undo(store: Store, st: dict[str, Any], me: str, blind_on: bool, seq: int) -> list[Any]:
    """Back to the last saved or skipped trace; an undone save restores the annotator's previous label."""
    history = list(st.get("history") or [])
    if not history:
        return show(store, st, me, blind_on, "Nothing to undo.", seq=seq)
    last = history.pop()
    pos = int(last["pos"])
    key = (str(st["queue"][pos][0]), int(st["queue"][pos][1]), int(st["queue"][pos][2]))
    msg = f"Back to {html.escape(key[0])}."
    if last["action"] == "save":
        audit = dbl.audit_frame(store, st["run"], me)
        audit = audit[(audit["item_id"] == key[0]) & (audit["rotation"] == key[1]) & (audit["repeat"] == key[2])
                      & (audit["changed_by"] == me)]
        if len(audit):
            old = audit.iloc[-1]["old"] or {}
            try:
                dbl.save_label(store, st["run"], key, me, {s: old.get(s) for s in STAGES},
                               category=old.get("category"), note=old.get("note"), changed_by=me)
            except CrosscheckError as exc:
                return show(store, st, me, blind_on, f"**Not undone:** {html.escape(str(exc))}", seq=seq, ok=False)
            msg = f"Undid the save of {html.escape(key[0])} (the audit keeps both versions)."
    return show(store, {**st, "pos": pos, "history": history}, me, blind_on, msg, seq=seq)


def on_toggle(store: Store, auth: bool, st: dict[str, Any], typed: str | None, blind_on: bool, s1: bool, s2: bool,
              s3: bool, s4: bool, request: gr.Request | None = None) -> tuple[str, str]:
    """The trace view and first-failure box for the flags as ticked (nothing is saved)."""
    values = [s1, s2, s3, s4]
    try:
        me = identity(auth, typed, username(request))
    except IdentityRefused:
        me = ""
    return render_view(store, st, me, blind_on, values), ff_html(values, run_judging(store, st.get("run")))


def refresh_pickers(store: Store, bench: str | None, current: str | None, src: str | None) -> tuple[Any, Any]:
    runs = run_choices(store, bench)
    r = keep(current, runs, runs[0][1] if runs else None)
    sources = source_choices(store, r)
    return (refreshed(current, runs, r),
            refreshed(src if r == current else None, sources, keep(src, sources, _first_source(sources))))


def fill_user(request: gr.Request) -> str:
    return username(request) or ""


# --------------------------------------------------------------------------- the layout


@dataclass
class _Parts:
    who: Any
    run: Any
    source: Any
    start: Any
    blind: Any
    boxes: list[Any]
    buttons: dict[str, Any]
    outputs: list[Any]
    action_inputs: list[Any]
    availability: list[Any] = field(default_factory=list)  # the note and the controls' column


def build_judge(ctx: Ctx) -> None:
    with gr.Column(elem_id="jd-root"):
        parts = _layout(ctx)
    _wire(ctx, parts)


def _layout(ctx: Ctx) -> _Parts:
    gr.HTML(style(CSS), js_on_load=KEYS_JS, elem_id="jd-js")
    shown, note = availability(ctx.store, ctx.benchmark.value)
    avail = gr.Markdown(note, visible=bool(note), elem_id="jd-availability")
    with gr.Column(visible=shown, elem_id="jd-controls") as controls:
        parts = _controls(ctx)
    parts.availability = [avail, controls]
    return parts


def _controls(ctx: Ctx) -> _Parts:
    with gr.Row(equal_height=True):
        who = gr.Textbox(label="Annotator", placeholder="type your name once", scale=2, elem_id="jd-who",
                         interactive=not ctx.auth_enabled, max_lines=1)
        runs0 = run_choices(ctx.store)
        jd0 = layout_judging(ctx.store, runs0[0][1] if runs0 else None)
        run = gr.Dropdown(runs0, value=runs0[0][1] if runs0 else None, scale=3, elem_id="jd-run",
                          label=f"Traces run ({jd0.judged_kind} items)" if jd0 else "Traces run")
        src0 = source_choices(ctx.store, runs0[0][1] if runs0 else None)
        source = gr.Dropdown(src0, value=_first_source(src0), label="Queue", scale=3, elem_id="jd-source")
        start = gr.Button("Start queue", variant="primary", scale=1, elem_id="jd-start")
    with gr.Row(equal_height=True):
        gr.HTML(macro("judge.html", "mode")(ctx.auth_enabled), elem_id="jd-mode")
        blind = gr.Checkbox(value=True, label="Blind mode: hide the judge and other annotators", scale=0,
                            min_width=360, elem_id="jd-blind")
    progress = gr.HTML(macro("judge.html", "waiting")(), elem_id="jd-progress")
    with gr.Row():
        with gr.Column(scale=4):
            view = gr.HTML(trace_view.render(None), elem_id="jd-view")
        with gr.Column(scale=1, min_width=260, elem_id="jd-panel"):
            names = dict(jd0.stage_names) if jd0 else {s: "stage" for s in STAGES}
            boxes = [gr.Checkbox(value=True, label=f"{s} {names[s]} correct  [{i + 1}]", elem_id=f"jd-s{i + 1}")
                     for i, s in enumerate(jd0.stages if jd0 else STAGES)]
            ff = gr.HTML(ff_html([True] * 4, jd0), elem_id="jd-ff")
            category = gr.Dropdown(category_choices(jd0), value="", label="Error-audit category (002 D.4)",
                                   elem_id="jd-category")
            note = gr.Textbox(label="Note", lines=2, max_lines=6, elem_id="jd-note")
            with gr.Row():
                save = gr.Button("Save & next [Enter]", variant="primary", elem_id="jd-save")
            with gr.Row():
                skip = gr.Button("Skip [S]", size="sm", elem_id="jd-skip")
                undo_btn = gr.Button("Undo [U]", size="sm", elem_id="jd-undo")
            status = gr.Markdown("", elem_id="jd-status")
            gr.HTML(macro("judge.html", "keys_help")())
    item = gr.Textbox(visible=False, elem_id="jd-item")
    action = gr.Textbox(visible=False, elem_id="jd-action")  # filled by the keyboard queue's pre-js
    rotation = gr.Number(value=0, precision=0, visible=False)
    repeat = gr.Number(value=0, precision=0, visible=False)
    state = gr.State({"run": None, "queue": [], "pos": 0, "history": []})
    outputs = [state, view, progress, *boxes, ff, category, note, item, rotation, repeat, status]
    return _Parts(who, run, source, start, blind, boxes, {"save": save, "skip": skip, "undo": undo_btn},
                  outputs, [state, who, blind, action, category, note])


def _wire(ctx: Ctx, p: _Parts) -> None:
    store, auth = ctx.store, ctx.auth_enabled
    view, ff = p.outputs[1], p.outputs[7]
    ctx.on_refresh(bind(refresh_pickers, store), [ctx.benchmark, p.run, p.source], [p.run, p.source])
    ctx.on_refresh(bind(on_availability, store), [ctx.benchmark], p.availability)
    ctx.benchmark.change(bind(on_availability, store), ctx.benchmark, p.availability, api_visibility="private",
                         show_progress="hidden", queue=False)
    p.run.change(bind(on_run, store), p.run, p.source, api_visibility="private")
    p.start.click(bind(on_start, store, auth), [p.run, p.source, p.who, p.blind], p.outputs).then(
        None, js="() => window.__ccJudge.reset()")
    gr.api(bind(save_label_api, store, auth), api_name="save_label")
    end_js = "() => window.__ccJudge.end()"
    n_in = len(p.action_inputs)
    for op, button in p.buttons.items():
        pre = f"(...a) => {{ a = a.slice(0, {n_in}); a[3] = window.__ccJudge.take('{op}'); return a; }}"
        button.click(bind(on_action, store, auth), p.action_inputs, p.outputs, js=pre, api_visibility="private",
                     concurrency_id="judge-action", concurrency_limit=None).then(None, js=end_js)
    toggle_inputs = [p.outputs[0], p.who, p.blind, *p.boxes]
    toggle_pre = f"(...a) => {{ window.__ccJudge.begin(); return a.slice(0, {len(toggle_inputs)}); }}"
    for box in p.boxes:
        box.input(bind(on_toggle, store, auth), toggle_inputs, [view, ff], api_visibility="private",
                  show_progress="hidden", js=toggle_pre, concurrency_id="judge-toggle",
                  concurrency_limit=None).then(None, js=end_js)
    p.blind.change(bind(on_toggle, store, auth), toggle_inputs, [view, ff], api_visibility="private",
                   show_progress="hidden")
    root = ctx.page
    if auth:
        root.load(fill_user, None, p.who, api_visibility="private")
    else:
        root.load(None, None, p.who, js="() => { try { return localStorage.getItem('cc-annotator') || ''; }"
                                        " catch (e) { return ''; } }")
        p.who.change(None, p.who, None, js="(v) => { try { localStorage.setItem('cc-annotator', v || ''); }"
                                           " catch (e) {} }")
