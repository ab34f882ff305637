"""The Calibration tab (paper 002 App. C.3, C.4, D.4): draw a frozen stratified sample; Cohen's kappa and raw
agreement per stage for every pair of labelers, the annotator-pair kappa as the human ceiling, the
first-failure distribution under the judge vs the human consensus, the second judge, and error-audit
summaries. The numbers come from db.judging.calibration_report (core.calibration); this module only lays
them out; the stage keys and names come from the run's family's `StageJudging`. An undefined kappa shows its
reason, never 0. Like the Judge tab, the tab shows a one-line note instead of its controls when no benchmark of
the store is of a family with stage judging (ui.judge.availability). *Run a judge* (ui/judge_job.py) starts the
lexical or an endpoint judge on the picked traces run and scope as a background job with progress, and shows its
agreement here when it ends. The handlers are module-level functions of the store and plain values
(tests/ui/test_calibration_handlers.py); `build_calibration` lays out and wires them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from core import stats
from core.errors import CrosscheckError
from core.families.stage_judging import StageJudging
from core.report_tables import signed_interval
from core.schema import to_jsonable
from db import judging
from db import labels as dbl
from db.catalog import catalog_signature
from db.judge_runs import draw_sample
from db.store import Store
from ui import judge_job
from ui.context import Ctx, keep, refreshed
from ui.handlers import bind
from ui.jobs import JOBS, Jobs
from ui.judge import availability, on_availability, run_judging
from ui.templating import macro, style

TEMPLATE = "calibration.html"
CSS = """
.cb-table{border-collapse:collapse;width:100%;font-size:13px;margin:4px 0 12px 0;table-layout:fixed}
.cb-table th:first-child,.cb-table td:first-child{width:260px}
.cb-table th,.cb-table td{border-bottom:1px solid var(--border-color-primary);padding:4px 8px;text-align:left;
 vertical-align:top}
.cb-table td.num{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.cb-table tr.cb-ceiling td{font-weight:600;background:rgba(59,130,246,.08)}
.cb-na{color:#6b7280;font-style:italic}
.cb-kind{font-size:11px;color:#6b7280}
.cb-k{display:inline-block;min-width:46px;padding:0 4px;border-radius:4px}
.cb-sub{color:#6b7280;font-size:12px}
.cb-h{font-weight:600;font-size:15px;margin:14px 0 4px 0}
"""


@dataclass(slots=True, frozen=True)
class Kappa:
    """One kappa as its cell shows it: the value shaded green (red below 0), its interval, prevalence, the small-n
    note and the note saying when the kappa is not to be trusted, agreement and n; `na`: the reason it is
    undefined (None when it is not)."""

    na: str | None
    kappa: str = ""
    bg: str = ""
    ci: str = ""
    seed: int = stats.DEFAULT_SEED
    prevalence: str = ""
    small_n: str = ""
    note: str = ""  # when the kappa or its interval is not to be trusted, said plainly (core.calibration)
    agree: str = ""
    n: str = ""


def _kappa_cell(p: dict[str, Any]) -> Kappa:
    if p.get("kappa") is None:
        return Kappa(str(p.get("reason") or ""))
    k = float(p["kappa"])
    shade = max(0.0, min(1.0, k))
    ci = p.get("kappa_ci")
    return Kappa(None, f"{k:.3f}", f"rgba(34,197,94,{0.08 + 0.35 * shade:.2f})" if k >= 0 else "rgba(239,68,68,.18)",
                 signed_interval(ci, scale=1, digits=3) if ci else "",
                 prevalence="" if p.get("prevalence") is None else f"{100 * p['prevalence']:.0f}%",
                 small_n=str(p.get("small_n") or ""), note=str(p.get("kappa_note") or ""),
                 agree="" if p.get("agreement") is None else f"agree {100 * p['agreement']:.0f}% · ", n=str(p["n"]))


def pairs_table(rep: dict[str, Any], jd: StageJudging) -> str:
    pairs = rep.get("pairs") or []
    if not pairs:
        return macro(TEMPLATE, "pairs")(None)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for p in pairs:
        rows.setdefault((p["a"], p["b"]), {"kind": p["pair_kind"]})[p["stage"]] = p
    order = sorted(rows, key=lambda ab: (["judge-human", "human-human", "judge-judge"].index(rows[ab]["kind"])
                                         if rows[ab]["kind"] in ("judge-human", "human-human", "judge-judge") else 9,
                                         ab))
    stages = jd.stages
    ceil = rep.get("human_ceiling") or {}
    ceiling = [_kappa_cell({"kappa": c.get("kappa"), "reason": c.get("reason"), "agreement": None,
                            "n": f"{c.get('n_pairs', 0)} pair(s)"}) for c in (ceil.get(s) or {} for s in stages)]
    gaps = [(judge, [None if row[s]["gap"] is None else (f"{row[s]['gap']:+.3f}", f"{row[s]['kappa_vs_humans']:.3f}")
                     for s in stages]) for judge, row in (rep.get("judge_vs_ceiling") or {}).items()]
    return macro(TEMPLATE, "pairs")({
        "heads": [f"{s} {jd.stage_names[s]}" for s in stages],
        "rows": [(a, b, rows[(a, b)]["kind"], [_kappa_cell(rows[(a, b)][s]) for s in stages]) for a, b in order],
        "ceiling": ceiling, "gaps": gaps,
        "used": "; ".join(f"{a}–{b}" for a, b in rep.get("ceiling_pairs") or []) or "no annotator pair",
        "rule": "chosen" if rep.get("ceiling_rule") == "chosen pairs" else "every annotator pair"})


def summary_md(rep: dict[str, Any], jd: StageJudging) -> str:
    labs = rep.get("labelers") or []
    who = ", ".join(f"{html.escape(x['name'])} ({x['kind']}, {x['n']})" for x in labs) or "none yet"
    scope = (f"calibration sample **{html.escape(str(rep['sample']))}** ({rep['n_sample']} traces)" if rep.get("sample")
             else f"all {jd.judged_kind} traces of the run")
    inc = rep.get("inconsistent") or {}
    inc_txt = ", ".join(f"{html.escape(n)} {100 * r['value']:.0f}% ({r['k']}/{r['n']})" for n, r in inc.items()
                        if r.get("value") is not None)
    cons = ", ".join(html.escape(n) for n in rep.get("consensus_of") or []) or "none"
    cons_rule = "chosen" if rep.get("consensus_rule") == "chosen annotators" else "every annotator"
    return (f"**Run** {html.escape(rep['run'])} · scope: {scope} · labeled traces: **{rep['n_traces']}**\n\n"
            f"**Labelers:** {who}\n\n"
            f"**Human consensus** (first-failure comparison): majority of {cons} ({cons_rule})\n\n"
            + (f"**Inconsistent flag patterns** (a correct stage after a failed one): {inc_txt}" if inc_txt else ""))


def ff_figure(rep: dict[str, Any], jd: StageJudging) -> go.Figure:
    ff = rep.get("first_failure") or {}
    fig = go.Figure()
    if "reason" in ff or not ff.get("n"):
        fig.add_annotation(text=html.escape(ff.get("reason", "no trace labeled by both the judge and annotators")),
                           showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
        fig.update_layout(height=260, xaxis={"visible": False}, yaxis={"visible": False},
                          margin={"l": 20, "r": 20, "t": 30, "b": 20})
        return fig
    cats = [*jd.stages, jd.no_failure, jd.undecided]
    for who, key, color in ((f"judge {ff['judge_name']}", "judge", "#6366f1"), ("human consensus", "human", "#f59e0b")):
        vals = [ff[key].get(c, {}).get("value") for c in cats]
        ks = [ff[key].get(c, {}).get("k") for c in cats]
        fig.add_bar(name=who, x=cats, y=[None if v is None else 100 * v for v in vals], marker_color=color,
                    text=[f"{k}" if k is not None else "" for k in ks], textposition="outside",
                    hovertemplate="%{x}: %{y:.1f}% (%{text} traces)<extra>" + html.escape(who) + "</extra>")
    fig.update_layout(barmode="group", height=320, title=f"First failure on {ff['scope']} (n={ff['n']})",
                      yaxis_title="% of traces", margin={"l": 50, "r": 20, "t": 50, "b": 40},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def second_html(rep: dict[str, Any]) -> str:
    sj = rep.get("second_judge") or {}
    if "reason" in sj:
        return macro(TEMPLATE, "reason")(sj["reason"])
    stages = list(sj["spearman"])  # the stages in order, as core.calibration.second_judge lists them
    pairs = {p["stage"]: p for p in sj.get("pairs", [])}
    wp = sj["weakest_preserved"]

    def pct(rate: dict[str, Any]) -> str:
        return "n/a" if rate.get("value") is None else f"{100 * rate['value']:.1f}"

    return macro(TEMPLATE, "second")({
        "second": str(sj["second"]), "first": str(sj["first"]), "stages": stages,
        "kappa": [_kappa_cell(pairs[s]) if s in pairs else None for s in stages],
        "rho": [(f"{r['rho']:.3f}", f"{r['n_runs']} runs") if r["rho"] is not None else (None, str(r["reason"] or ""))
                for r in (sj["spearman"][s] for s in stages)],
        "shift": [None if sj["mean_shift"][s] is None else f"{100 * sj['mean_shift'][s]:+.1f} pp" for s in stages],
        "preserved": f"{wp['k']} of {wp['n']} runs" if wp.get("value") is not None else f"n/a ({wp.get('reason') or ''})",
        "runs": [(run_name, [f"{pct(r['first'][s])} / {pct(r['second'][s])}" for s in stages],
                  f"{r['weakest_first']} / {r['weakest_second']}", bool(r["weakest_preserved"]))
                 for run_name, r in sj["runs"].items()]})


def audit_html(rep: dict[str, Any]) -> str:
    ea = rep.get("error_audit") or {}
    if "reason" in ea:
        return macro(TEMPLATE, "reason")(ea["reason"])
    blocks = []
    for title, group in (("by strategy (pooled)", ea.get("by_strategy", {})), ("by run", ea.get("by_run", {}))):
        for name, res in group.items():
            if "per_100" not in res:
                blocks.append({"name": name, "reason": str(res.get("reason", ""))})
                continue
            terc = res.get("by_tercile") or {}
            cols = [("all", res), *((f"{t} third", v) for t, v in terc.items() if isinstance(v, dict) and "per_100" in v)]
            blocks.append({"name": name, "reason": None, "title": title,
                           "heads": [(c, v["n_items"]) for c, v in cols],
                           "rows": [(c.replace("_", " "), [f"{v['per_100'].get(c, 0):.1f}" for _, v in cols])
                                    for c in res["per_100"]]})
    return macro(TEMPLATE, "audit")(blocks)


# --------------------------------------------------------------------------- handlers


def run_choices(store: Store) -> list[tuple[str, str]]:
    return [(("[synthetic] " if r["synthetic"] else "") + r["name"], r["name"]) for r in judging.trace_runs(store)]


def sample_choices(store: Store, run: str | None) -> list[tuple[str, str]]:
    jd = run_judging(store, run)
    return [(f"all {jd.judged_kind + ' ' if jd else ''}traces", "")] + ([(f"{s['name']} ({s['n']} traces, seed {s['seed']})", s["name"])
                                     for s in judging.samples(store, run)] if run else [])


def judge_choices(store: Store, run: str | None) -> list[tuple[str, str]]:
    return [("(first judge)", "")] + ([(j, j) for j in judging.judge_runs_of(store, run)] if run else [])


def annotator_names(store: Store, run: str | None) -> list[str]:
    if not run:
        return []
    return sorted({str(n) for n in dbl.labels_frame(store, run, kind="human")["labeler"]})


def pair_choices(store: Store, run: str | None) -> list[tuple[str, str]]:
    names = annotator_names(store, run)
    return [(f"{a} – {b}", f"{a},{b}") for i, a in enumerate(names) for b in names[i + 1:]]


def on_run(store: Store, r: str | None) -> tuple[Any, Any, Any, Any, Any]:
    """The scope, judge, second judge, ceiling-pair and consensus pickers of another traces run."""
    js = judge_choices(store, r)
    return (gr.update(choices=sample_choices(store, r), value=""), gr.update(choices=js, value=""),
            gr.update(choices=[("(none)", "")] + js[1:], value=""),
            gr.update(choices=pair_choices(store, r), value=[]), gr.update(choices=annotator_names(store, r), value=[]))


def on_compute(store: Store, r: str | None, s: str | None, j: str | None, j2: str | None, c: list[str] | None,
               cs: list[str] | None) -> list[Any]:
    """The report (db.judging.calibration_report) laid out: summary, kappa table, first-failure chart, second
    judge, error audit, and the JSON `calibration --json` prints."""
    if not r:
        return ["No traces run in this store (the judged items of a family with stage judging).", "", go.Figure(),
                "", "", None]
    from core import calibration as cal

    jd = judging.stage_judging(store, r)
    rep = to_jsonable(judging.calibration_report(
        store, r, sample=s or None, judge=j or None, second=j2 or None,
        ceiling=cal.parse_pairs(";".join(c)) if c else None, consensus_of=list(cs) if cs else None))
    return [summary_md(rep, jd), pairs_table(rep, jd), ff_figure(rep, jd), second_html(rep), audit_html(rep), rep]


def on_draw(store: Store, r: str | None, n: str, k: float | None, sd: float | None) -> tuple[str, Any, Any, str]:
    """Draw and freeze a sample; returns the message, its table, the scope picker and the catalog signature."""
    if not r:
        raise CrosscheckError("choose a traces run first")
    res = draw_sample(store, r, n, int(k or 20), int(sd or 0))
    verb = "already frozen with the same traces (unchanged)" if res["status"] == "unchanged" else "drawn and frozen"
    return (f"Sample **{html.escape(res['name'])}**: {res['n']} traces {verb}. Annotators find it in the Judge "
            "tab's Queue list.", gr.update(value=pd.DataFrame(res["table"]), visible=True),
            gr.update(choices=sample_choices(store, r), value=res["name"]), catalog_signature(store))


def on_judge_tick(store: Store, jobs: Jobs, name: str | None, r: str | None, s: str | None, j2: str | None,
                  c: list[str] | None, cs: list[str] | None) -> list[Any]:
    """The poll of a judge started here (ui.judge_job): its panel, whether to keep polling and Cancel; once it has
    ended, the catalog signature (the pickers read the new judge run), the Judge picker set to it, a line, and
    the report computed again with it (when the traces run picked is still the one it judged)."""
    head = judge_job.poll(jobs, name)
    end = judge_job.ended(jobs, name)
    if end is None:
        return head + [gr.update()] * 9
    js, status = end
    if js.traces_run != r:
        return head + [catalog_signature(store)] + [gr.update()] * 8
    picker = gr.update(choices=judge_choices(store, r), value=js.run)
    try:
        report = on_compute(store, r, s, js.run, j2, c, cs)
    except CrosscheckError as exc:
        return head + [catalog_signature(store), picker, judge_job.line(str(exc), refused=True)] + [
            gr.update()] * 6
    return head + [catalog_signature(store), picker, judge_job.ended_line(js, status), *report]


def refresh_pickers(store: Store, r: str | None, s: str | None, j: str | None, j2: str | None) -> tuple[Any, ...]:
    runs = run_choices(store)
    current, r = r, keep(r, runs, runs[0][1] if runs else None)
    samples, js = sample_choices(store, r), judge_choices(store, r)
    seconds = [("(none)", "")] + js[1:]
    return (refreshed(current, runs, r), refreshed(s, samples, keep(s, samples, "")),
            refreshed(j, js, keep(j, js, "")), refreshed(j2, seconds, keep(j2, seconds, "")))


# --------------------------------------------------------------------------- the layout


def build_calibration(ctx: Ctx) -> None:
    gr.HTML(style(CSS))
    shown, note = availability(ctx.store, ctx.benchmark.value)
    avail = gr.Markdown(note, visible=bool(note), elem_id="cb-availability")
    with gr.Column(visible=shown, elem_id="cb-controls") as controls:
        c = _layout(ctx.store)
    _wire(ctx, c)
    ctx.on_refresh(bind(on_availability, ctx.store), [ctx.benchmark], [avail, controls])
    ctx.benchmark.change(bind(on_availability, ctx.store), ctx.benchmark, [avail, controls], api_visibility="private",
                         show_progress="hidden", queue=False)


def _layout(store: Store) -> dict[str, Any]:
    runs0 = run_choices(store)
    run0 = runs0[0][1] if runs0 else None
    c: dict[str, Any] = {}
    with gr.Row(equal_height=True):
        c["run"] = gr.Dropdown(runs0, value=run0, label="Traces run", scale=4, elem_id="cb-run")
        c["sample"] = gr.Dropdown(sample_choices(store, run0), value="", label="Scope", scale=2, elem_id="cb-sample")
        c["judge"] = gr.Dropdown(judge_choices(store, run0), value="", label="Judge", scale=3, elem_id="cb-judge")
        c["second"] = gr.Dropdown([("(none)", "")] + judge_choices(store, run0)[1:], value="", label="Second judge",
                                  scale=3, elem_id="cb-second")
        c["compute"] = gr.Button("Compute", variant="primary", scale=1, elem_id="cb-compute")
    with gr.Row(equal_height=True):
        c["ceiling"] = gr.Dropdown(pair_choices(store, run0), value=[], multiselect=True, scale=3,
                                   elem_id="cb-ceiling",
                                   label="Human-ceiling pairs (002 C.3: A2 – A3; none chosen = every annotator pair)")
        c["consensus"] = gr.Dropdown(annotator_names(store, run0), value=[], multiselect=True, scale=3,
                                     elem_id="cb-consensus",
                                     label="Human consensus of (002 C.3: A2, A3; none chosen = every annotator)")
    judge_job.layout(store, c, run0)
    with gr.Accordion("Draw a calibration sample (frozen, seeded, stratified by operation x outcome bin)",
                      open=False):
        with gr.Row(equal_height=True):
            c["name"] = gr.Textbox(label="Sample name", value="calibration", scale=2, max_lines=1, elem_id="cb-name")
            c["per_op"] = gr.Number(label="Traces per operation", value=20, precision=0, minimum=1, scale=1)
            c["seed"] = gr.Number(label="Seed", value=0, precision=0, scale=1)
            c["draw"] = gr.Button("Draw and freeze", scale=1, elem_id="cb-draw")
        c["draw_out"] = gr.Markdown()
        c["draw_table"] = gr.Dataframe(visible=False, interactive=False)
    c["summary"] = gr.Markdown(elem_id="cb-summary")
    gr.Markdown("#### Cohen's kappa per stage (raw agreement and n below each)")
    c["table"] = gr.HTML(elem_id="cb-table")
    c["chart"] = gr.Plot(label="First-failure distribution: judge vs human consensus (002 C.3)", elem_id="cb-ff")
    gr.Markdown("#### Second judge (002 C.4)")
    c["second_out"] = gr.HTML(elem_id="cb-second-out")
    with gr.Accordion("Error audit: first decisive error per 100 F items (002 D.4)", open=True):
        c["audit_out"] = gr.HTML(elem_id="cb-audit")
    c["raw_json"] = gr.JSON(label="calibration --json", visible=False)
    return c


def _wire(ctx: Ctx, c: dict[str, Any]) -> None:
    store = ctx.store
    outs = [c[k] for k in ("summary", "table", "chart", "second_out", "audit_out", "raw_json")]
    picks = [c[k] for k in ("run", "sample", "judge", "second", "ceiling", "consensus")]
    c["run"].change(bind(on_run, store), c["run"], picks[1:], api_visibility="private")
    c["compute"].click(bind(on_compute, store), picks, outs, api_visibility="private")  # scripts: ui.api
    c["draw"].click(bind(on_draw, store), [c["run"], c["name"], c["per_op"], c["seed"]],
                    [c["draw_out"], c["draw_table"], c["sample"], ctx.changed], api_visibility="private")
    ctx.on_refresh(bind(refresh_pickers, store), picks[:4], picks[:4])
    judge_job.wire(ctx, c)
    c["j_timer"].tick(bind(on_judge_tick, store, JOBS), [c["j_follow"], *picks[:2], *picks[3:]],
                      [c["j_panel"], c["j_timer"], c["j_cancel"], ctx.changed, c["judge"], c["j_msg"], *outs],
                      api_visibility="private", concurrency_id="run-poll", concurrency_limit=None,
                      show_progress="hidden")
    if ctx.tab is not None:  # compute when the tab is opened (not on every page load)
        ctx.tab.select(bind(on_compute, store), picks, outs, api_visibility="private")
