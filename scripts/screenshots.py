"""Regenerate every PNG in docs/screenshots from a fresh demo store, in Debian chromium at 1440 px wide.

    python scripts/screenshots.py [--out docs/screenshots] [--only NAME ...] [--keep]

Builds the demo store (`app.py demo`) plus a small generic benchmark in a temp folder, serves the app on a free
port, drives every tab with Playwright and writes each picture under its existing name; the contact sheets
come from core.demo.sheets. Prints one line per picture; exits 1 naming any picture it could not take. About
two minutes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from uiharness import browser, running_app  # noqa: E402

WIDTH, HEIGHT = 1440, 1000
VIEW = "#cc-group-view"


def build_store(tmp: Path) -> Path:
    """The demo store plus a generic benchmark `mm` (one image, four circular rotations, two runs)."""
    db = tmp / "demo.db"
    subprocess.run([sys.executable, str(ROOT / "app.py"), "demo", "--db", str(db)], cwd=ROOT, check=True,
                   capture_output=True)
    from PIL import Image

    from db.importers import import_items, import_predictions
    from db.store import Store

    gen = tmp / "generic"
    (gen / "img").mkdir(parents=True)
    opts = ["lamp", "book", "phone", "plant"]
    lines, gold = [], {}
    for g in range(3):
        Image.new("RGB", (320, 240), (10 + 60 * g, 20, 60)).save(gen / "img" / f"{g}.png")
        for r in range(4):
            rot = opts[r:] + opts[:r]
            letters = dict(zip("ABCD", rot, strict=True))
            ans = next(k for k, v in letters.items() if v == "book")
            iid = f"mm-{g}-r{r}"
            gold[iid] = ans
            lines.append({"benchmark": "generic", "item_id": iid, "group_id": f"mm-{g}", "split": "test",
                          "kind": "circular", "variant": f"rot{r}", "images": [f"img/{g}.png"],
                          "question": "Which object is left of the mug?", "options": letters, "answer": ans})
    (gen / "items.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    store = Store(db)
    import_items(store, gen / "items.jsonl", name="mm")
    for name, wrong in (("model-a", set()), ("model-b", {"mm-0-r1", "mm-1-r2"})):
        preds = []
        for iid, ans in gold.items():
            resp = ("D" if ans != "D" else "A") if iid in wrong else f"The answer is {ans}."
            if name == "model-b" and iid == "mm-0-r2":
                resp = "It could be any of them."
            preds.append({"item_id": iid, "response": resp})
        path = gen / f"{name}.jsonl"
        path.write_text("".join(json.dumps(p) + "\n" for p in preds), encoding="utf-8")
        import_predictions(store, path, name)
    store.close()
    return db


def pick_benchmark(page: Any, name: str) -> None:
    page.locator("#cc-benchmark input").click()
    page.get_by_role("option", name=name).first.click()
    time.sleep(1.0)


def tab(page: Any, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).first.click()
    time.sleep(0.5)


def fill(page: Any, elem_id: str, text: str, enter: bool = False) -> None:
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(text)
    box.press("Enter" if enter else "Tab")


def open_group(page: Any, gid: str, wait: str) -> None:
    fill(page, "cc-browse-group", gid, enter=True)
    page.locator(f"{VIEW} [data-group='{gid}']").wait_for(timeout=60_000)
    page.locator(f"{VIEW} {wait}").first.wait_for(timeout=60_000)
    page.wait_for_function(f"() => [...document.querySelectorAll('{VIEW} .cc-thumb-wrap img')]"
                           ".every((i) => i.complete)", timeout=30_000)
    time.sleep(0.5)


def shot_view(page: Any, path: Path) -> None:
    page.locator(VIEW).screenshot(path=str(path))


def metrics(page: Any, bench: str, first_table: str, section: str | None) -> None:
    tab(page, "Metrics")
    if page.locator("#cc-benchmark input").input_value().split(" ")[0] != bench:
        pick_benchmark(page, bench)
    page.locator(f".cc-mtable[data-table='{first_table}']").wait_for(timeout=90_000)
    if section:
        page.locator("#cc-metrics-sections [role=tab]", has_text=section).first.click()
    time.sleep(1.5)  # plotly draws, then fits its container


def groups_of(db: Path, bench: str) -> list[str]:
    from db.store import Store

    s = Store(db)
    try:
        items = s.items_frame(bench)
        return list(dict.fromkeys(items["group_id"]))
    finally:
        s.close()


@dataclass(slots=True)
class Shots:
    """What every picture needs: the page, the store, and the groups the views open."""

    page: Any
    db: Path
    fq1: str
    fq2: str
    sb: str
    spur: str
    url: str = ""


def take_browse_list(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    page.locator("#cc-browse-list [role=gridcell]").first.wait_for(timeout=60_000)
    time.sleep(1.0)
    page.screenshot(path=str(p))


def take_browse_filtered(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    page.locator("#cc-browse-pattern input").click()
    page.get_by_role("option").nth(1).click()
    time.sleep(2.0)
    page.screenshot(path=str(p))
    page.locator("#cc-browse-pattern input").click()
    page.get_by_role("option").first.click()
    time.sleep(1.0)


def take_view_fq1(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    open_group(page, c.fq1, ".cc-cols")
    shot_view(page, p)


def take_view_fullsize(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    open_group(page, c.fq1, ".cc-zoom")
    page.locator(f"{VIEW} .cc-zoom summary").first.click()
    page.locator(f"{VIEW} .cc-zoom[open] .cc-full img").first.wait_for(timeout=10_000)
    time.sleep(0.8)
    page.screenshot(path=str(p))
    page.keyboard.press("Escape")


def take_view_fq2(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    open_group(page, c.fq2, ".cc-cols")
    shot_view(page, p)


def take_browse_audit(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    acc = page.locator("#cc-audit")
    acc.scroll_into_view_if_needed()
    if page.locator("#cc-audit-list-btn").is_hidden():
        acc.locator("button").first.click()
    page.locator("#cc-audit-list-btn").click()
    page.locator("#cc-audit-list table").wait_for(timeout=60_000)
    time.sleep(0.8)
    acc.screenshot(path=str(p))


def take_view_stembind(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    pick_benchmark(page, "stembind")
    open_group(page, c.sb, ".cc-cat")
    shot_view(page, p)


def take_view_spur(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    pick_benchmark(page, "spur")
    open_group(page, c.spur, ".cc-cols, .cc-section")
    shot_view(page, p)


def take_view_generic(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Browse")
    pick_benchmark(page, "mm")
    open_group(page, "mm-0", ".cc-cols")
    shot_view(page, p)


def take_compare(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Compare")
    pick_benchmark(page, "frameevidence")
    tab(page, "Compare")
    page.locator("#cc-compare-go").click()
    page.locator("#cc-compare-changed [role=gridcell]").first.wait_for(timeout=90_000)
    time.sleep(1.0)
    page.screenshot(path=str(p), full_page=True)


def take_compare_view(c: Shots, p: Path) -> None:
    page = c.page
    page.locator("#cc-compare-changed [data-col='0'][role=gridcell]").first.click()
    page.locator("#cc-compare-view [data-group]").wait_for(timeout=60_000)
    time.sleep(1.0)
    page.locator("#cc-compare-view").screenshot(path=str(p))


def take_data_validation(c: Shots, p: Path) -> None:
    page = c.page
    pick_benchmark(page, "stembind")
    tab(page, "Data")
    page.get_by_text("Predictions (JSONL or CSV) into a run").click()
    fill(page, "cc-data-run", "imported-run")
    bad = Path(tempfile.mkdtemp(prefix="cc-shots-")) / "bad_preds.jsonl"
    items = groups_of(c.db, "stembind")
    bad.write_text(json.dumps({"item_id": f"{items[0]}-F", "response": "A"}) + "\n"
                   + json.dumps({"item_id": f"{items[0]}-R", "response": "B", "rotation": 9}) + "\n",
                   encoding="utf-8")
    try:
        page.locator("#cc-data-upload input[type=file]").set_input_files(str(bad))
        page.locator("#cc-data-uploaded[data-file='bad_preds.jsonl']").wait_for(timeout=60_000)
        page.locator("#cc-data-validate").click()
        page.locator("#cc-data-verdict[data-file='bad_preds.jsonl']").wait_for(timeout=60_000)
    finally:
        bad.unlink()
        bad.parent.rmdir()
    time.sleep(0.8)
    page.screenshot(path=str(p))


def take_judge_tab(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Judge")
    fill(page, "jd-who", "ann-d")
    page.locator("#jd-start").click()
    page.locator("#jd-view table").first.wait_for(timeout=60_000)
    time.sleep(1.0)
    page.screenshot(path=str(p), full_page=True)


def take_judge_trace_unblind(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Judge")
    blind = page.locator("#jd-blind input[type=checkbox]")
    if blind.is_checked():
        blind.click()
    time.sleep(1.5)
    page.screenshot(path=str(p), full_page=True)
    blind.click()


def take_calibration(c: Shots, p: Path) -> None:
    page = c.page
    tab(page, "Calibration")
    page.wait_for_function("() => ((document.querySelector('#cb-summary') || {}).innerText || '')"
                           ".trim().length > 40", timeout=120_000)
    time.sleep(1.5)
    page.screenshot(path=str(p), full_page=True)


def take_calibration_judge_running(c: Shots, p: Path) -> None:
    """An endpoint judge started from the Calibration tab, mid-run, after two annotators labeled eight traces."""
    page = c.page
    from chat_server import ChatServer

    from db import judging
    from db import labels as dbl
    from db.store import Store

    run = "synth-sb-binder-weak"
    store = Store(c.db)
    for i, k in enumerate(judging.trace_records(store, run).iloc[:8].itertuples(index=False)):
        for who, flip in (("ann-a", 0), ("ann-b", 1)):
            flags = dict(zip(("S1", "S2", "S3", "S4"), [1, 1, (i + flip) % 2, (i // 2) % 2], strict=True))
            dbl.save_label(store, run, (k.item_id, int(k.rotation), int(k.repeat)), who, flags)
    store.close()
    reply = '{"S1": 1, "S2": 1, "S3": 0, "S4": 1, "first_failure": "S3"}'
    with ChatServer(latency=0.15, responder=lambda body: reply) as chat:
        tab(page, "Calibration")
        page.locator("#cj-kind").get_by_text("OpenAI-compatible endpoint").click()
        fill(page, "cj-base-url", chat.base_url)
        fill(page, "cj-model", "Qwen/Qwen2.5-VL-72B-Instruct")
        fill(page, "cj-concurrency", "2")
        page.locator("#cj-start").click()
        page.wait_for_function("() => Number((document.querySelector('#cj-progress') || {dataset: {}}).dataset.done"
                               " || 0) >= 30", timeout=60_000)
        page.screenshot(path=str(p), clip={"x": 0, "y": 0, "width": WIDTH, "height": 1250}, full_page=True)
        page.locator("#cj-cancel").click()
        page.wait_for_function("() => document.querySelector('#cj-progress').dataset.status === 'cancelled'",
                               timeout=60_000)


def take_run_midrun(c: Shots, p: Path) -> None:
    page = c.page
    from chat_server import ChatServer

    with ChatServer(latency=0.15) as chat:
        pick_benchmark(page, "frameevidence")
        tab(page, "Run")
        fill(page, "cc-run-name", "qwen-vl-direct-demo")
        page.get_by_text("OpenAI-compatible server").click()
        fill(page, "cc-run-base-url", chat.base_url)
        fill(page, "cc-run-api-model", "Qwen/Qwen2.5-VL-7B-Instruct")
        fill(page, "cc-run-key-env", "")
        page.locator("#cc-run-start").click()
        deadline = time.time() + 60
        prog = page.locator("#cc-run-progress")
        while time.time() < deadline and int(prog.get_attribute("data-done") or 0) < 40:
            time.sleep(0.25)
        page.screenshot(path=str(p), full_page=True)  # the job history is under the form, at full width
        page.locator("#cc-run-cancel").click()
        time.sleep(1.0)


def take_metrics(bench: str, table: str, section: str | None) -> Callable[[Shots, Path], None]:
    def take(c: Shots, p: Path) -> None:
        metrics(c.page, bench, table, section)
        c.page.screenshot(path=str(p))
    return take


WHY_LINK = "/?benchmark=stembind&runs=synth-sb-mirror-repeats,synth-sb-binder-weak"


def _why_page(c: Shots, panel: str, title: str, ready: str) -> Any:
    """The page on the demo's StemBind run that shows why it fails, with Browse's `panel` accordion open."""
    page = c.page
    page.goto(c.url + WHY_LINK)
    page.locator("#cc-browse-list [role=gridcell]").first.wait_for(timeout=60_000)
    time.sleep(1.5)
    page.locator(f"#{panel}").get_by_text(title).first.click()
    page.locator(ready).first.wait_for(timeout=60_000)
    time.sleep(1.0)
    return page


def take_browse_why(c: Shots, p: Path) -> None:
    _why_page(c, "cc-why", "Why it fails", "#cc-why-table [role=gridcell]").locator("#cc-why").screenshot(path=str(p))


def take_browse_why_list(c: Shots, p: Path) -> None:
    page = _why_page(c, "cc-why", "Why it fails", "#cc-why-table [role=gridcell]")
    page.locator("#cc-why-table [role=gridcell][data-col='0']").first.click()
    page.locator("#cc-browse-focus").wait_for(timeout=60_000)
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("j")
    page.locator("#cc-group-view .cc-group[data-group]").first.wait_for(timeout=60_000)
    time.sleep(1.5)
    page.locator("#cc-browse-summary").scroll_into_view_if_needed()
    page.evaluate("() => window.scrollBy(0, -60)")
    page.screenshot(path=str(p))


def take_browse_health(c: Shots, p: Path) -> None:
    page = _why_page(c, "cc-health", "Item health", "#cc-health-table [role=gridcell]")
    page.locator("#cc-health").screenshot(path=str(p))


def take_browse_map(c: Shots, p: Path) -> None:
    page = _why_page(c, "cc-map", "Where runs disagree", "#cc-map-plot .js-plotly-plot")
    page.locator("#cc-map").screenshot(path=str(p))


def take_metrics_aside(c: Shots, p: Path) -> None:
    """A reviewer marks the first suspect "gold is wrong" (the store is the pictures' own copy), then Metrics sets
    its group aside."""
    page = _why_page(c, "cc-health", "Item health", "#cc-health-table [role=gridcell]")
    page.locator("#cc-health-table [role=gridcell][data-col='0']").first.click()
    time.sleep(1.0)
    fill(page, "cc-health-note", "the rule in the image gives A")
    page.locator("#cc-health-save").click()
    page.locator("#cc-health-marks li").first.wait_for(timeout=30_000)
    tab(page, "Metrics")
    page.locator("#cc-metrics-summary").wait_for(timeout=60_000)
    page.locator("#cc-metrics-aside-toggle input").check()
    page.locator("#cc-metrics-aside").wait_for(timeout=60_000)
    time.sleep(1.5)
    page.screenshot(path=str(p))


# Every picture, in the order taken (compare_view opens a row of the table compare leaves on the page).
SHOTS: tuple[tuple[str, Callable[[Shots, Path], None]], ...] = (
    ("browse_list", take_browse_list),
    ("browse_filtered", take_browse_filtered),
    ("view_fq1", take_view_fq1),
    ("view_fullsize", take_view_fullsize),
    ("view_fq2", take_view_fq2),
    ("browse_audit", take_browse_audit),
    ("compare", take_compare),
    ("compare_view", take_compare_view),
    ("metrics_frameevidence", take_metrics("frameevidence", "fe_table4", None)),
    ("metrics_frameevidence_figure5", take_metrics("frameevidence", "fe_table4", "Figure 5")),
    ("metrics_stembind", take_metrics("stembind", "sb_leaderboard", None)),
    ("metrics_stembind_ssa", take_metrics("stembind", "sb_leaderboard", "SSA")),
    ("metrics_spur", take_metrics("spur", "spur_table3", None)),
    ("metrics_spur_breakdowns", take_metrics("spur", "spur_table3", "Breakdowns")),
    ("view_stembind", take_view_stembind),
    ("view_spur", take_view_spur),
    ("view_generic", take_view_generic),
    ("data_validation", take_data_validation),
    ("judge_tab", take_judge_tab),
    ("judge_trace_unblind", take_judge_trace_unblind),
    ("calibration", take_calibration),
    ("calibration_judge_running", take_calibration_judge_running),
    ("run_midrun", take_run_midrun),
    ("browse_why", take_browse_why),
    ("browse_why_list", take_browse_why_list),
    ("browse_health", take_browse_health),
    ("browse_map", take_browse_map),
    ("metrics_aside", take_metrics_aside),  # last: it writes a verdict
)


def take_all(url: str, db: Path, out: Path, only: set[str]) -> list[str]:
    """Take every picture of SHOTS (those named in `only`, when given) into `out`; the names that failed."""
    failed: list[str] = []
    fe_groups = groups_of(db, "frameevidence")
    with browser() as b:
        page = b.new_page(viewport={"width": WIDTH, "height": HEIGHT}, accept_downloads=True)
        page.goto(url)
        page.locator("#cc-browse-list").wait_for(timeout=60_000)
        time.sleep(1.5)
        c = Shots(page=page, db=db, fq1=next(g for g in fe_groups if "fq1" in g),
                  fq2=next(g for g in fe_groups if "fq2" in g), sb=groups_of(db, "stembind")[1],
                  spur=groups_of(db, "spur")[0], url=url)
        for name, take in SHOTS:
            if only and name not in only:
                continue
            path = out / f"{name}.png"
            t0 = time.time()
            try:
                take(c, path)
                print(f"{name}.png  {time.time() - t0:.1f} s", flush=True)
            except Exception:  # noqa: BLE001 - report and go on with the other pictures
                failed.append(name)
                print(f"{name}.png  FAILED\n{traceback.format_exc()}", file=sys.stderr, flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument("--only", nargs="*", default=[], help="picture names without .png (default: all)")
    args = ap.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    only = set(args.only)
    t0 = time.time()
    failed: list[str] = []
    if not only or any(n.startswith("contact_") for n in only):
        from core.demo.sheets import write_sheets

        for path in write_sheets(out):
            print(f"{path.name}  (contact sheet)", flush=True)
    with tempfile.TemporaryDirectory(prefix="cc-shots-") as tmp:
        db = build_store(Path(tmp))
        with running_app(db) as url:
            failed = take_all(url, db, out, {n for n in only if not n.startswith("contact_")})
    print(f"done in {time.time() - t0:.0f} s" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
