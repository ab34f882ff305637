"""The "Why it fails", "Item health" and "Where runs disagree" panels' handlers (ui/why_panel.py,
ui/health_panel.py, ui/map_panel.py) and Browse's filter of a mode or a list (ui/focus.py) called as plain
functions on a real store (a copy of the demo), no browser. Expectations come from `app.py failure-modes --json`
and `item-health --json` (the CLI's path, db/diagnosis.py), never from the panels' own code."""

from __future__ import annotations

import json

import pytest
from conftest import copy_store, run_cli

from ui import browse, health_panel, map_panel, why_panel
from ui.focus import Focus
from ui.links import View, resolve, view_of

BENCH = "stembind"
RUN = "synth-sb-mirror-repeats"


@pytest.fixture(scope="module")
def store(demo_db, tmp_path_factory):
    from db.store import Store

    s = Store(copy_store(demo_db, tmp_path_factory.mktemp("why-handlers")))
    yield s
    s.close()


@pytest.fixture(scope="module")
def cli_modes(store):
    return json.loads(run_cli("failure-modes", "--run", RUN, "--json", db=store.path, check=True).stdout)


def test_the_modes_table_is_the_clis(store, cli_modes):
    table, terms, picks, line = why_panel.modes_table(store, BENCH, RUN, None)
    assert list(table["mode"]) == [m["label"] for m in cli_modes["modes"]]
    assert list(table["groups"]) == [len(m["groups"]) for m in cli_modes["modes"]]
    assert list(terms["term"]) == [t["term"] for t in cli_modes["terms"]]
    assert [p["mode"] for p in picks] == [m["id"] for m in cli_modes["modes"]]
    assert line.startswith(f"{len(cli_modes['modes'])} modes of {RUN!r}")


def test_a_mode_narrows_the_list_and_the_keys_walk_it(store, cli_modes):
    mode = cli_modes["modes"][0]
    focus = Focus(bench=BENCH, run=RUN, mode=mode["id"]).as_dict()
    res = browse.list_groups(store, BENCH, [RUN], None, None, None, None, None, None, 1, None, focus)
    assert list(res["ids"]) == [g for g in res["ids"] if g in set(mode["groups"])]
    assert set(res["ids"]) == set(mode["groups"])
    assert mode["label"] in res["summary"] and f"<b>{len(mode['groups'])}</b> of 120 groups" in res["summary"]
    args = [BENCH, [RUN], None, None, None, None, None, None, 1, None, focus]
    first = browse.step_group(store, [*args, "", None, True], 1)[0]
    second = browse.step_group(store, [*args, first, None, True], 1)[0]
    assert [first, second] == list(res["ids"][:2])


def test_an_item_health_list_narrows_the_list_and_a_verdict_is_kept(store):
    cli = json.loads(run_cli("item-health", "--benchmark", BENCH, "--json", db=store.path, check=True).stdout)
    table, picks, line = health_panel.health_table(store, BENCH, "unstable")
    assert list(table["item"]) == [u["item_id"] for u in cli["unstable"]]
    assert [p["group"] for p in picks] == [u["group_id"] for u in cli["unstable"]]
    focus = Focus(bench=BENCH, health="unstable").as_dict()
    res = browse.list_groups(store, BENCH, [RUN], None, None, None, None, None, None, 1, None, focus)
    assert set(res["ids"]) == {u["group_id"] for u in cli["unstable"]}
    html, note_box = health_panel.save_review(store, BENCH, picks[0]["item"], "wrong", "two letters fit", "ann")
    assert "gold is wrong" in html and "two letters fit" in html and "ann" in html and note_box["value"] == ""
    html, note_box = health_panel.save_review(store, BENCH, "", "wrong", "x", "ann")
    assert "Click a row" in html and note_box == {"__type__": "update"}
    table, _, _ = health_panel.health_table(store, BENCH, "accuracy")
    assert set(table["run"]) == {a["run"] for a in cli["accuracy_without_suspects"]}


def test_links_carry_the_mode_and_the_list(store):
    view, note = resolve(store, {"benchmark": BENCH, "runs": RUN, "mode": "1", "mode_run": RUN})
    assert (view.mode, view.mode_run, view.mode_vs, view.health, note) == ("1", RUN, "", "", "")
    view, note = resolve(store, {"benchmark": BENCH, "runs": RUN, "health": "ambiguous"})
    assert view.health == "ambiguous" and note == ""
    view, note = resolve(store, {"benchmark": BENCH, "runs": RUN, "health": "nope", "mode": "2", "mode_run": "ghost"})
    assert (view.mode, view.health) == ("", "") and "run 'ghost'" in note and "item-health list 'nope'" in note
    shown = view_of("browse", BENCH, [RUN], "", "", "", "", "", "", "", "",
                    Focus(bench=BENCH, run=RUN, other="x", mode=3).as_dict())
    assert (shown.mode, shown.mode_run, shown.mode_vs) == ("3", RUN, "x")
    linked = View(BENCH, [RUN], mode="3", mode_run=RUN)
    assert browse.linked_focus(linked) == Focus(bench=BENCH, run=RUN, mode=3).as_dict()


def test_the_map_and_its_click(store):
    fig, line = map_panel.map_figure(store, BENCH, [RUN])
    heat = fig.data[0]
    runs = list(heat.y)
    assert RUN in runs and len(heat.x) == 120 and line.startswith("12 runs x 120 groups")
    group, run = heat.customdata[0][0][:2]
    assert map_panel.picked(f"{group}{map_panel.SEP}{run}{map_panel.SEP}1") == (group, run)
    assert map_panel.picked("") is None
