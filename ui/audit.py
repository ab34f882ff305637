"""Extraction audit (issue 6, 14.3): list a run's invalid parses with their raw text, re-parse one with the other
parser or set a letter by hand. The change is an override laid over the imported prediction (db/overrides.py):
every score, Browse and export read it, without rerunning the model, and the imported row is never written."""

from __future__ import annotations

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
from ui.views.common import esc, mark, synthetic_badge

METHOD_CHOICES = [("Letter parser (FrameEvidence style)", "parser:letter"),
                  ("Tag parser (StemBind <ANSWER> style)", "parser:tag"),
                  ("Manual letter", "manual")]
STATUS_CHOICES = [("invalid", "invalid"), ("api_error", "api_error"), ("invalid and api_error", "both")]


def _statuses(which: str | None) -> tuple[str, ...]:
    return ("invalid", "api_error") if which == "both" else ((which,) if which else ("invalid",))


def key_of(row: dict[str, Any]) -> str:
    return f"{row['item_id']} · r{int(row['rotation'])}/rep{int(row['repeat'])}"


def parse_key(key: str) -> tuple[str, int, int]:
    item, _, rest = key.rpartition(" · ")
    r, _, rep = rest.partition("/")
    return item, int(r.lstrip("r")), int(rep.replace("rep", ""))


def _tool_cell(src: dict[str, Any] | None) -> str:
    """The importing tool's own reading of a response (VLMEvalKit's extracted letter and hit, lmms-eval's raw
    response), beside Crosscheck's parse."""
    if not src:
        return '<td><span class="cc-muted">—</span></td>'
    parts = []
    if src.get("extracted"):
        parts.append(f'{esc(src["tool"])} extracted <b class="cc-letter">{esc(src["extracted"])}</b>')
    if "hit" in src:
        parts.append(f'hit {esc(src["hit"])}')
    if src.get("raw"):
        parts.append(f'raw: <span class="cc-resp">{esc(src["raw"])}</span>')
    return f'<td>{"<br>".join(parts) or esc(src["tool"])}</td>'


def problems_html(store: Any, run: str | None, which: str | None) -> tuple[str, list[str]]:
    """The audit list (escaped raw text) and the prediction keys it holds."""
    if not run:
        return '<div class="cc-muted">pick a run</div>', []
    df = dbp.problem_predictions(store, run, _statuses(which))
    counts = dbp.count_statuses(store, run)
    head = (f'<div class="cc-summary">{sum(counts.values())} predictions: {counts.get("ok", 0)} ok, '
            f'{counts.get("invalid", 0)} invalid, {counts.get("api_error", 0)} api_error</div>')
    if df.empty:
        return head + '<div class="cc-muted">nothing to audit for this status</div>', []
    rows = []
    keys = []
    sources = dbf.prediction_sources(store, run)  # what VLMEvalKit / lmms-eval kept beside the raw response
    for r in df.to_dict("records"):
        keys.append(key_of(r))
        tool = _tool_cell(sources.get(r["item_id"])) if sources else ""
        rows.append(f'<tr><td>{esc(r["item_id"])}</td><td>{esc(r["group_id"])}</td><td>{int(r["rotation"])}/'
                    f'{int(r["repeat"])}</td><td>{mark(r["status"])} {esc(r["status"])}</td>'
                    f'<td class="cc-resp">{esc(r["response"]) or "<span class=cc-muted>(empty)</span>"}</td>{tool}'
                    f'<td><b class="cc-letter">{esc(r["gold"])}</b></td></tr>')
    tool_head = "<th>the tool's answer</th>" if sources else ""
    table = ('<div class="cc-table-wrap cc-scroll"><table class="cc-answers-table cc-audit-table"><thead><tr><th>item</th>'
             f'<th>group</th><th>rot/rep</th><th>status</th><th>raw response</th>{tool_head}<th>gold</th></tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table></div>')
    return head + table, keys


def history_html(store: Any, run: str | None) -> str:
    if not run:
        return ""
    recs = dbo.overrides(store, run)
    if not recs:
        return '<div class="cc-muted">no re-parse or manual answer recorded for this run</div>'
    rows = "".join(
        f'<tr><td>{int(o["id"])}</td><td>{esc(o["item_id"])}</td><td>{int(o["rotation"])}/{int(o["repeat"])}</td>'
        f'<td>{esc(o["method"])}</td><td>{esc(o["old_status"])} {esc(o["old_answer"] or "")}</td>'
        f'<td>{esc(o["new_status"])} {esc(o["new_answer"] or "")}</td><td>{esc(o["by"])}</td><td>{esc(o["created"])}</td>'
        f'<td class="cc-override-{esc(o["state"])}">{state_text(o)}</td></tr>' for o in recs)
    return ('<div class="cc-table-wrap"><table class="cc-answers-table cc-audit-history"><thead><tr><th>id</th>'
            '<th>item</th><th>rot/rep</th><th>method</th><th>was</th><th>now</th><th>by</th><th>when</th>'
            '<th>state</th></tr></thead>'
            f'<tbody>{rows}</tbody></table></div>')


def state_text(o: dict[str, Any]) -> str:
    """An override's state as the history shows it (db/overrides.py `overrides`)."""
    if o["state"] == "active":
        return "<b>active</b>: scores read it"
    if o["state"] == "superseded":
        return "superseded by a newer override"
    if o["state"] == "reverted":
        return f"reverted {esc(o['reverted'])}"
    why = o.get("stale_reason") or "the prediction now has another raw response"
    return f"<b>stale</b>, inactive: {esc(why)}"


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
    verb = "Applied" if applied else "Preview"
    new = f"{res['status']} {res['answer'] or ''}"
    old = f"{res['old_status']} {res['old_answer'] or ''}"
    tail = f" (override #{res['id']})" if applied else " (nothing written yet)"
    return (f'<div class="cc-callout">{verb}: {esc(run_v)}{synthetic_badge(bool(rec.get("synthetic")))} '
            f'was <b>{esc(old)}</b>, now <b>{esc(new)}</b>{esc(tail)}</div>')


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
    return (f'<div class="cc-callout">Reverted override #{int(rid)}.</div>', *_listing(store, run_v, which_v))


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
