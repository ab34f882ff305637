"""What one drawing of the Metrics tab shows (`Page`: the scored runs, their tables and figures, by section),
made without Gradio, so the one-file report (ui/report) builds the same page from the command line."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from core import families
from core.report_tables import RunScore, Table
from core.scoring import DEFAULT_SPLIT
from core.stats import Clustering
from db import gold_reviews
from db.store import Store
from ui.scores import CACHE, ScoreCache, run_scores
from ui.views import view_of

log = logging.getLogger(__name__)


@dataclass
class Page:
    """What one drawing of the tab shows: a message, or the scored runs with their tables and figures."""

    message: str = ""
    message_id: str | None = None
    benchmark: str = ""
    family: str = ""
    runs: list[RunScore] = field(default_factory=list)
    tables: dict[str, Table] = field(default_factory=dict)
    figs: dict[str, Any] = field(default_factory=dict)
    chart_error: str | None = None
    aside: str = ""  # what the scores set aside (set_aside_notice), "" when nothing

    def sections(self) -> list[tuple[int, str, list[str], list[str]]]:
        """(index, title, table keys, chart keys) of each section with something to show."""
        spec = view_of(self.family).charts.sections if self.family else []
        out = [(i, title, [k for k in tk if k in self.tables], [k for k in ck if k in self.figs])
               for i, (title, tk, ck) in enumerate(spec)]
        return [s for s in out if s[2] or s[3]]

    def summary(self) -> str:
        """The line over the tables (Markdown, ui/templates/metrics.html)."""
        from ui.templating import macro

        return macro("metrics.html", "summary")(self.benchmark, self.family, len(self.runs), self.runs[0].split,
                                                sum(r.synthetic for r in self.runs), self.aside)


def set_aside_notice(counts: dict[str, int] | None) -> str:
    """The plain sentence every output of set-aside scores starts with (core.scoring.set_aside_counts)."""
    if not counts:
        return ""
    return (f"Set aside: {counts['marked']} item(s) a reviewer marked “gold is wrong”, with the rest of their "
            f"{counts['groups']} group(s) ({counts['items']} items in all), are left out of these scores.")


def metrics_page(store: Store, benchmark: str | None, selected: list[str], clusterings: tuple[Clustering, ...] = (),
                 cache: ScoreCache = CACHE, split: str | None = DEFAULT_SPLIT, set_aside: bool = False) -> Page:
    """The page for one drawing (scores through the cache; a CrosscheckError is left to the caller). `split`:
    the tab's is the default (test); the one-file report (ui/report) passes `--split`'s. `set_aside`: the groups of
    the items reviewers marked "gold is wrong" (db.gold_reviews) are left out, and every table says so."""
    if not benchmark:
        return Page("No benchmark in the store yet: import one in the **Data** tab.")
    if not selected:
        return Page("Pick one or more runs in the **Runs** box above to see their metrics.", "cc-metrics-empty")
    marked = gold_reviews.set_aside(store, benchmark) if set_aside else frozenset()
    family, runs, controls = run_scores(store, benchmark, selected, clusterings, split, cache=cache,
                                        set_aside=marked)
    if not runs:
        return Page("None of the picked runs exists any more: press **Refresh**.")
    aside = set_aside_notice(runs[0].set_aside) if marked else ""
    if set_aside and not marked:
        aside = "Set aside: no item is marked “gold is wrong” yet, so nothing is left out."
    tables = [replace(t, aside=aside) if aside else t for t in families.get(family).tables(runs, controls)]
    page = Page(benchmark=benchmark, family=family, runs=runs, tables={t.key: t for t in tables}, aside=aside)
    try:
        page.figs = view_of(family).charts.figures(runs, page.tables)
    except Exception as exc:  # noqa: BLE001 - a broken chart must not hide the tables
        log.exception("charts failed for %s", benchmark)
        page.chart_error = type(exc).__name__
    return page
