"""Extraction audit (issue 6, 14.3): list a run's invalid parses with their raw text, re-parse one with the other
parser or set a letter by hand. The change is an override laid over the imported prediction (db/overrides.py):
every score, Browse and export read it, without rerunning the model, and the imported row is never written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from core.errors import CrosscheckError
from db import browse as dbb
from db import foreign as dbf
from db import overrides as dbo
from db import predictions as dbp
from db.store import Store
from ui.context import Ctx
from ui.handlers import bind, username
from ui.links import landed
from ui.templating import macro
from ui.views.common import mark_of, text

METHOD_CHOICES = [("Letter parser (FrameEvidence style)", "parser:letter"),
                  ("Tag parser (StemBind <ANSWER> style)", "parser:tag"),
                  ("Manual letter", "manual")]
TEMPLATE = "audit.html"
STATUS_CHOICES = [("invalid", "invalid"), ("api_error", "api_error"), ("invalid and api_error", "both")]


def _statuses(which: str | None) -> tuple[str, ...]:
    return ("invalid", "api_error") if which == "both" else ((which,) if which else ("invalid",))


def key_of(row: dict[str, Any]) -> str:
    return f"{row['item_id']} · r{int(row['rotation'])}/rep{int(row['repeat'])}"


def parse_key(key: str) -> tuple[str, int, int]:
    item, _, rest = key.rpartition(" · ")
    r, _, rep = rest.partition("/")
    return item, int(r.lstrip("r")), int(rep.replace("rep", ""))


@dataclass(slots=True, frozen=True)
class ToolReading:
    """The importing tool's own reading of a response (VLMEvalKit's extracted letter and hit, lmms-eval's raw
    response), beside Crosscheck's parse: its name and whichever of extracted / hit / raw it kept."""

    tool: str
    extracted: str
    hit: str
    has_hit: bool
    raw: str


def _tool(src: dict[str, Any] | None) -> ToolReading | None:
    if not src:
        return None
    return ToolReading(text(src["tool"]), text(src.get("extracted")), text(src["hit"]) if "hit" in src else "",
                       "hit" in src, text(src.get("raw")))


def problems_html(store: Any, run: str | None, which: str | None) -> tuple[str, list[str]]:
    """The audit list (escaped raw text) and the prediction keys it holds."""
    if not run:
        return macro(TEMPLATE, "problems")(None), []
    df = dbp.problem_predictions(store, run, _statuses(which))
    counts = dbp.count_statuses(store, run)
    sources = dbf.prediction_sources(store, run) if not df.empty else {}  # what VLMEvalKit / lmms-eval kept
    records = df.to_dict("records")
    rows = [{"item_id": text(r["item_id"]), "group_id": text(r["group_id"]), "rot_rep": f'{int(r["rotation"])}/{int(r["repeat"])}',
             "mark": mark_of(r["status"]), "status": text(r["status"]), "response": text(r["response"]),
             "tool": _tool(sources.get(r["item_id"])), "gold": text(r["gold"])} for r in records]
    summary = {"total": sum(counts.values()), "ok": counts.get("ok", 0), "invalid": counts.get("invalid", 0),
               "api_error": counts.get("api_error", 0)}
    return macro(TEMPLATE, "problems")(summary, rows, bool(sources)), [key_of(r) for r in records]


def history_html(store: Any, run: str | None) -> str:
    if not run:
        return ""
    recs = dbo.overrides(store, run)
    return macro(TEMPLATE, "history")([{
        "id": int(o["id"]), "item_id": text(o["item_id"]), "rot_rep": f'{int(o["rotation"])}/{int(o["repeat"])}',
        "method": text(o["method"]), "was": f'{text(o["old_status"])} {text(o["old_answer"])}',
        "now": f'{text(o["new_status"])} {text(o["new_answer"])}', "by": text(o["by"]), "created": text(o["created"]),
        "state": _state(o)} for o in recs])


def _state(o: dict[str, Any]) -> tuple[str, str]:
    """An override's state (db/overrides.py `overrides`) and what the history says of it."""
    if o["state"] == "reverted":
        return "reverted", text(o["reverted"])
    if o["state"] in ("active", "superseded"):
        return str(o["state"]), ""
    return str(o["state"]), text(o.get("stale_reason") or "the prediction now has another raw response")


def state_text(o: dict[str, Any]) -> str:
    """An override's state as the history shows it."""
    return macro(TEMPLATE, "state")(*_state(o))


# --------------------------------------------------------------------------- handlers


def _picked(key: str | None) -> tuple[str, int, int]:
    if not key:
        raise CrosscheckError("pick a run and a prediction first")
    return parse_key(key)


def _listing(store: Store, run: str | None, which: str | None) -> tuple[str, dict[str, Any], str]:
    """The audit list, the prediction picker and the history, read again."""
    html, keys = problems_html(store, run, which)
    return html, gr.update(choices=keys, value=keys[0] if keys else None), history_html(store, run)


def on_bench_landing(store: Store, bench: str | None, runs: list[str] | None, request: gr.Request) -> dict[str, Any]:
    """on_bench at page load: for the benchmark of the page's link, if any (ui.links.landed)."""
    return on_bench(store, *landed(store, bench, runs, request))


def on_bench(store: Store, bench: str | None, runs: list[str] | None) -> dict[str, Any]:
    """The audit's run picker for the header's benchmark; the first header run of it is picked."""
    recs = dbb.run_records(store, bench) if bench else []
    choices = [(r["name"] + (" (synthetic)" if r["synthetic"] else ""), r["name"]) for r in recs]
    names = [r["name"] for r in recs]
    first = next((r for r in (runs or []) if r in names), names[0] if names else None)
    return gr.update(choices=choices, value=first)


def do_list(store: Store, run_v: str | None, which_v: str | None) -> tuple[str, dict[str, Any], str]:
    return _listing(store, run_v, which_v)


def describe(store: Store, run_v: str, res: dict[str, Any], applied: bool) -> str:
    rec = next((r for r in dbb.run_records(store, store.run(run_v)["benchmark"]) if r["name"] == run_v), {})
    return macro(TEMPLATE, "described")(
        verb="Applied" if applied else "Preview", run=run_v, synthetic=bool(rec.get("synthetic")),
        old=f"{res['old_status']} {res['old_answer'] or ''}", new=f"{res['status']} {res['answer'] or ''}",
        tail=f" (override #{res['id']})" if applied else " (nothing written yet)")


def do_preview(store: Store, run_v: str | None, key_v: str | None, method_v: str, letter_v: str | None) -> str:
    """What an override would make of the prediction; nothing is written."""
    item, rot, rep = _picked(key_v if run_v else None)
    res = dbo.preview(store, str(run_v), item, rot, rep, method_v, letter_v)
    return describe(store, str(run_v), res, applied=False)


def do_apply(store: Store, run_v: str | None, key_v: str | None, method_v: str, letter_v: str | None,
             which_v: str | None, request: gr.Request | None = None) -> tuple[str, str, dict[str, Any], str]:
    """Record the override (by the signed-in user, else "local"); returns the result and the lists again."""
    item, rot, rep = _picked(key_v if run_v else None)
    res = dbo.apply(store, str(run_v), item, rot, rep, method_v, letter_v, by=username(request) or "local")
    return (describe(store, str(run_v), res, applied=True), *_listing(store, run_v, which_v))


def do_revert(store: Store, run_v: str | None, rid: float | None, which_v: str | None,
              request: gr.Request | None = None) -> tuple[str, str, dict[str, Any], str]:
    if not rid:
        raise CrosscheckError("enter the id of an override (see the history below)")
    dbo.revert(store, int(rid), by=username(request) or "local")
    return (macro(TEMPLATE, "reverted")(int(rid)), *_listing(store, run_v, which_v))


# --------------------------------------------------------------------------- the layout


def build_audit(ctx: Ctx) -> None:
    gr.Markdown("A response the parser could not read stays **invalid** (never a guess). Here you can re-read it "
                "with the other parser or set the letter by hand. The change is an override laid over the "
                "prediction as imported (which is never rewritten): it is recorded with its method and author, "
                "scores, Browse and export read it at once, and it can be reverted. An import with `--replace` "
                "that gives the prediction another raw response makes it stale (listed below).",
                elem_classes=["cc-muted"])
    with gr.Row():
        run = gr.Dropdown(label="Run", choices=[], scale=3, elem_id="cc-audit-run")
        which = gr.Dropdown(label="Status", choices=STATUS_CHOICES, value="invalid", scale=1,
                            elem_id="cc-audit-status")
        list_btn = gr.Button("List", scale=0, elem_id="cc-audit-list-btn")
    listing = gr.HTML(elem_id="cc-audit-list")
    with gr.Row():
        key = gr.Dropdown(label="Prediction", choices=[], scale=3, elem_id="cc-audit-key")
        method = gr.Dropdown(label="Method", choices=METHOD_CHOICES, value="parser:letter", scale=2,
                             elem_id="cc-audit-method")
        letter = gr.Textbox(label="Manual letter", max_lines=1, scale=1, elem_id="cc-audit-letter")
        preview_btn = gr.Button("Preview", scale=0, elem_id="cc-audit-preview")
        apply_btn = gr.Button("Apply", variant="primary", scale=0, elem_id="cc-audit-apply")
    result = gr.HTML(elem_id="cc-audit-result")
    with gr.Row():
        revert_id = gr.Number(label="Override id to revert", precision=0, scale=1, elem_id="cc-audit-revert-id")
        revert_btn = gr.Button("Revert", scale=0, elem_id="cc-audit-revert")
    history = gr.HTML(elem_id="cc-audit-history")

    store = ctx.store
    header = [ctx.benchmark, ctx.runs]
    ctx.benchmark.change(bind(on_bench, store), header, run, api_visibility="private")
    ctx.refresh.click(bind(on_bench, store), header, run, api_visibility="private")
    ctx.page.load(bind(on_bench_landing, store), header, run, api_visibility="private")
    lists = [listing, key, history]
    list_btn.click(bind(do_list, store), [run, which], lists, api_visibility="private")  # scripts: ui.api
    run.input(bind(do_list, store), [run, which], lists, api_visibility="private")
    which.input(bind(do_list, store), [run, which], lists, api_visibility="private")
    preview_btn.click(bind(do_preview, store), [run, key, method, letter], result, api_visibility="private")
    apply_btn.click(bind(do_apply, store), [run, key, method, letter, which], [result, *lists],
                    api_visibility="private")  # scripts: ui.api
    revert_btn.click(bind(do_revert, store), [run, revert_id, which], [result, *lists], api_visibility="private")
