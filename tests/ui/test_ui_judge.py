"""The Judge tab in a real browser against the real app: keyboard-only labeling that survives a reload, blind
mode, and 8 annotators saving concurrently through the /save_label endpoint (checked against the audit)."""

from __future__ import annotations

import json
import re
import threading

import pytest
from conftest import copy_store
from uiharness import browser, open_page, running_app

from core.judge import LexicalJudge
from db import judge_runs, judging
from db import labels as dbl
from db.importers import import_labels
from db.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN = "synth-sb-binder-weak"
SAMPLE = "cal-ui"


@pytest.fixture(scope="module")
def app_url(demo_db, tmp_path_factory):
    db = copy_store(demo_db, tmp_path_factory.mktemp("uijudge"))
    store = Store(db)
    judge_runs.judge_run(store, RUN, "lex", LexicalJudge(0.5))
    judge_runs.draw_sample(store, RUN, SAMPLE, per_operation=3, seed=0)
    sample = judging.sample_frame(store, SAMPLE)
    path = db.parent / "bob.jsonl"
    path.write_text("".join(json.dumps({"item_id": i, "annotator": "bob", "kind": "human", "S1": 0, "S2": 0, "S3": 0,
                                        "S4": 0}) + "\n" for i in sample["item_id"]))
    import_labels(store, path, RUN)
    store.close()
    with running_app(db) as url:
        yield url, db, sample


@pytest.fixture
def page(ui_browser):
    """A fresh page (a context of its own: nothing remembered from another test) for each test."""
    p = open_page(ui_browser, viewport={"width": 1440, "height": 1000})
    yield p
    p.context.close()


@pytest.mark.parametrize(("text", "op", "key", "flags", "seq"), [
    ('{"op": "save", "key": "[\\"sb-1-F\\", 1, 0]", "flags": [true, false, true, true], "seq": 3}', "save",
     ("sb-1-F", 1, 0), [True, False, True, True], 3),
    ('{"op": "skip", "key": "[\\"sb-2-F\\", 0, 2]", "flags": [true, true, true, true], "seq": 9}', "skip",
     ("sb-2-F", 0, 2), [True] * 4, 9),
    ('{"op": "undo", "key": "", "seq": 4}', "undo", None, [True] * 4, 4),
    ('{"op": "erase", "key": "[\\"sb-1-F\\", 0, 0]", "seq": 1}', "unknown", ("sb-1-F", 0, 0), [True] * 4, 1),
    ('{"op": "save", "key": "[\\"sb-1-F\\"]", "flags": [false], "seq": "x"}', "save", None, [True] * 4, 0),
    ("not json", "unknown", None, [True] * 4, 0),
    ("", "unknown", None, [True] * 4, 0),
])
def test_parse_action(text, op, key, flags, seq):
    """What the keyboard queue sends; anything malformed names no trace or no known op (and is refused)."""
    from ui.judge import parse_action

    assert parse_action(text) == {"op": op, "key": key, "flags": flags, "seq": seq}


def _open_judge(page, url, name="alice"):
    page.goto(url)
    page.get_by_role("tab", name="Judge").click()
    who = page.locator("#jd-who textarea, #jd-who input").first
    if who.input_value() != name:
        who.fill(name)
    page.locator("#jd-progress").click()  # move the focus off the text field
    page.locator("#jd-start").click()
    page.get_by_text("Queue of").wait_for()


def _progress(page):
    return page.locator("#jd-progress").inner_text()


def test_keyboard_labeling_survives_reload(app_url, page):
    url, db, sample = app_url
    n = len(sample)
    _open_judge(page, url)
    assert f"Trace 1 of {n}" in _progress(page) and f"0 of {n} labeled by alice" in _progress(page)
    # 1-4 toggle, Enter saves and moves on, S skips, U undoes; the keyboard alone
    plan = ["3", "", "2 4", "1", "3 4"]
    for i, keys in enumerate(plan):
        for k in keys.split():
            page.keyboard.press(k)
        if keys:
            page.locator("#jd-ff").get_by_text("First failure: S").wait_for()
        page.keyboard.press("Enter")
        page.get_by_text(f"Trace {i + 2} of {n}").wait_for()
    assert f"5 of {n} labeled by alice" in _progress(page)
    page.keyboard.press("s")
    page.get_by_text(f"Trace 7 of {n}").wait_for()
    page.keyboard.press("u")                               # undo the skip
    page.get_by_text(f"Trace 6 of {n}").wait_for()
    page.keyboard.press("u")                               # undo the 5th save: back to trace 5, label cleared
    page.get_by_text(f"Trace 5 of {n}").wait_for()
    page.get_by_text(f"4 of {n} labeled by alice").wait_for()
    page.keyboard.press("3")
    page.keyboard.press("4")
    page.locator("#jd-ff").get_by_text("First failure: S3").wait_for()
    page.keyboard.press("Enter")
    page.get_by_text(f"Trace 6 of {n}").wait_for()

    page.reload()                                           # the name is remembered by the browser
    _open_judge(page, url)
    assert f"5 of {n} labeled by alice" in _progress(page) and f"Trace 6 of {n}" in _progress(page)

    store = Store(db)
    got = dbl.labels_frame(store, RUN, labelers=["alice"]).set_index("item_id")
    expect = [[1, 1, 0, 1], [1, 1, 1, 1], [1, 0, 1, 0], [0, 1, 1, 1], [1, 1, 0, 0]]
    for item, flags in zip(sample["item_id"][:5], expect, strict=True):
        assert [got.loc[item, s] for s in ("S1", "S2", "S3", "S4")] == flags
    audit = dbl.audit_frame(store, RUN, "alice")
    assert len(audit) == 7  # 5 saves + the undo (clear) + the save again
    assert audit.iloc[5]["new"]["S1"] is None and audit.iloc[5]["old"] == audit.iloc[4]["new"]


def test_blind_mode_hides_other_labels(app_url, page):
    url, _, sample = app_url
    _open_judge(page, url)
    view = page.locator("#jd-view")
    view.get_by_text("hidden").first.wait_for()
    assert "bob" not in view.inner_text() and "judge lex" not in view.inner_text()
    page.locator("#jd-blind input").click()
    view.get_by_role("columnheader", name="judge lex").wait_for()
    assert "bob" in view.inner_text()
    page.locator("#jd-blind input").click()
    view.get_by_text("hidden").first.wait_for()
    assert "bob" not in view.inner_text()


def test_eight_annotators_save_concurrently(app_url):
    from gradio_client import Client

    url, db, sample = app_url
    items = list(sample["item_id"][:4])
    sent: dict[str, dict[str, list[int]]] = {}
    errors: list[BaseException] = []

    def annotate(k: int) -> None:
        name = f"ann{k}"
        try:
            client = Client(url + "/", verbose=False)
            mine = {}
            for round_ in range(2):                         # every trace twice: the second save changes it
                for j, item in enumerate(items):
                    flags = [(k + j + round_ + s) % 2 for s in range(4)]
                    client.predict(name, RUN, item, 0, 0, *map(bool, flags), "", f"note {name}",
                                   api_name="/save_label")
                    mine[item] = flags
            sent[name] = mine
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=annotate, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not errors, [repr(e) for e in errors]
    store = Store(db)
    labels = dbl.labels_frame(store, RUN, labelers=list(sent))
    assert len(labels) == 8 * len(items)                    # nothing lost
    for r in labels.itertuples(index=False):
        assert [r.S1, r.S2, r.S3, r.S4] == sent[r.labeler][r.item_id]   # nothing crossed
        assert r.note == f"note {r.labeler}"
    audit = dbl.audit_frame(store, RUN)
    audit = audit[audit["labeler"].isin(list(sent))]
    assert len(audit) == 8 * len(items) * 2                 # one audit row per change
    assert (audit["labeler"] == audit["changed_by"]).all() and (audit["labeler"] == audit["row_labeler"]).all()
    for name in sent:
        mine = audit[audit["labeler"] == name]
        for item in items:
            rows = mine[mine["item_id"] == item]
            assert rows.iloc[0]["old"] is None and rows.iloc[1]["old"] == rows.iloc[0]["new"]
            assert [rows.iloc[1]["new"][s] for s in ("S1", "S2", "S3", "S4")] == sent[name][item]
    assert re.search(r"bob", json.dumps(list(dbl.labelers(store, RUN))))


# ---- typing at speed: the keyboard queue (issue 14 point 1) -------------------------------------------------

STAGE_COLS = ("S1", "S2", "S3", "S4")
# keys typed 100 ms apart, and what each trace of the queue must hold afterwards (None: skipped, no label)
FAST_KEYS = ["2", "Enter", "2", "Enter", "1", "3", "Enter", "s", "4", "Enter", "Enter", "2", "2", "Enter", "u", "3",
             "Enter"]
FAST_LABELS = [[1, 0, 1, 1], [1, 0, 1, 1], [0, 1, 0, 1], None, [1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 1]]
# the audit trail of those keys, oldest first: (trace index, old flags, new flags); the undo clears trace 6
FAST_AUDIT = [(0, None, [1, 0, 1, 1]), (1, None, [1, 0, 1, 1]), (2, None, [0, 1, 0, 1]), (4, None, [1, 1, 1, 0]),
              (5, None, [1, 1, 1, 1]), (6, None, [1, 1, 1, 1]), (6, [1, 1, 1, 1], [None] * 4),
              (6, [None] * 4, [1, 1, 0, 1])]


def _idle(page, n_expected_pos, n, timeout=90_000):
    """Wait until every typed key has been applied and answered, on trace `n_expected_pos` (1-based)."""
    page.get_by_text(f"Trace {n_expected_pos} of {n}").wait_for(timeout=timeout)
    page.wait_for_function("() => { const J = window.__ccJudge; return J && J.inflight === 0 && !J.wait &&"
                           " !J.held.length; }", timeout=timeout)


def _flags_of_row(row):
    return None if row is None else [None if row[s] is None else int(row[s]) for s in STAGE_COLS]


def _check_typed(db, name, keys, labels, audit_plan):
    store = Store(db)
    got = dbl.labels_frame(store, RUN, labelers=[name]).set_index("item_id")
    for item, flags in zip(keys, labels, strict=False):
        if flags is None:
            assert item not in got.index, f"{item} was skipped but holds a label"
        else:
            assert [int(got.loc[item, s]) for s in STAGE_COLS] == flags, item
    assert set(got.index) == {k for k, f in zip(keys, labels, strict=False) if f is not None}  # nothing elsewhere
    audit = dbl.audit_frame(store, RUN, name)
    assert len(audit) == len(audit_plan)
    for row, (idx, old, new) in zip(audit.itertuples(index=False), audit_plan, strict=True):
        assert row.item_id == keys[idx] and row.changed_by == name and row.row_labeler == name
        assert _flags_of_row(row.old) == old and _flags_of_row(row.new) == new
    store.close()


def test_keys_typed_100ms_apart_all_land(app_url, page):
    """'2, Enter' and the other keys at 100 ms intervals: every label is the one typed, on its trace."""
    url, db, sample = app_url
    n = len(sample)
    _open_judge(page, url, name="carol")
    assert f"Trace 1 of {n}" in _progress(page)
    for k in FAST_KEYS:
        page.keyboard.press(k, delay=100)  # held 100 ms: the keys come 100 ms apart, as typed (the input under test)
    _idle(page, 8, n)
    assert f"6 of {n} labeled by carol" in _progress(page)
    _check_typed(db, "carol", list(sample["item_id"]), FAST_LABELS, FAST_AUDIT)


B_KEYS = ["Enter", "4", "Enter", "s", "1", "2", "Enter", "3", "Enter", "u", "4", "Enter"]
B_LABELS = [[1, 1, 1, 1], [1, 1, 1, 0], None, [0, 0, 1, 1], [1, 1, 1, 0]]
B_AUDIT = [(0, None, [1, 1, 1, 1]), (1, None, [1, 1, 1, 0]), (3, None, [0, 0, 1, 1]), (4, None, [1, 1, 0, 1]),
           (4, [1, 1, 0, 1], [None] * 4), (4, [None] * 4, [1, 1, 1, 0])]
USERS = {"ann-a": "pw-a", "ann-b": "pw-b"}


@pytest.fixture(scope="module")
def auth_app(demo_db, tmp_path_factory):
    """The app under --auth with two lab users, on its own copy of the demo store (judged, one sample)."""
    from ui.auth import auth_line

    db = copy_store(demo_db, tmp_path_factory.mktemp("uijudge-auth"))
    store = Store(db)
    judge_runs.draw_sample(store, RUN, SAMPLE, per_operation=3, seed=0)
    sample = judging.sample_frame(store, SAMPLE)
    store.close()
    users = db.parent / "users.txt"
    users.write_text("".join(auth_line(u, p) + "\n" for u, p in USERS.items()))
    with running_app(db, "--auth", str(users)) as url:
        yield url, db, sample


def login(page, url, user):
    page.goto(url)
    page.locator("input[type=text]").first.fill(user)
    page.locator("input[type=password]").fill(USERS[user])
    page.get_by_role("button", name="Login").click()
    page.get_by_role("tab", name="Judge").wait_for()


def test_two_annotators_typing_at_once(auth_app):
    """Two signed-in annotators type into the same queue at once, each key 100 ms after their previous one:
    every stored label and audit row is the one its annotator typed."""
    from itertools import zip_longest

    url, db, sample = auth_app
    n = len(sample)
    with browser() as b:
        pages = {}
        for user in USERS:
            ctx = b.new_context(viewport={"width": 1440, "height": 1000})
            page = ctx.new_page()
            login(page, url, user)
            page.get_by_role("tab", name="Judge").click()
            who = page.locator("#jd-who textarea, #jd-who input").first
            page.wait_for_function("(el) => el.value !== ''", arg=who.element_handle())
            assert who.input_value() == user and not who.is_editable()   # the login names the annotator
            page.locator("#jd-start").click()
            page.get_by_text("Queue of").wait_for()
            pages[user] = page
        a, bb = pages["ann-a"], pages["ann-b"]
        for ka, kb in zip_longest(FAST_KEYS, B_KEYS):  # each key held 50 ms: the two typists' keys interleave
            a.keyboard.press(ka or "Shift", delay=50)      # (Shift: a key that does nothing, to keep the pace)
            bb.keyboard.press(kb or "Shift", delay=50)
        _idle(a, 8, n)
        _idle(bb, 6, n)
        assert f"6 of {n} labeled by ann-a" in _progress(a) and f"4 of {n} labeled by ann-b" in _progress(bb)
    keys = list(sample["item_id"])
    _check_typed(db, "ann-a", keys, FAST_LABELS, FAST_AUDIT)
    _check_typed(db, "ann-b", keys, B_LABELS, B_AUDIT)


def test_header_names_the_user_hides_the_path_from_remote_users_and_logs_out(auth_app):
    url, db, _ = auth_app
    with browser() as b:
        local = b.new_context().new_page()
        login(local, url, "ann-a")
        box = local.locator("#cc-whoami")
        box.get_by_text("signed in as").wait_for()
        assert "signed in as ann-a" in box.inner_text() and str(db) in box.inner_text()  # on the serving machine
        remote = b.new_context(extra_http_headers={"X-Forwarded-For": "203.0.113.9"}).new_page()  # via a proxy
        login(remote, url, "ann-b")
        rbox = remote.locator("#cc-whoami")
        rbox.get_by_text("signed in as").wait_for()
        text = rbox.inner_text()
        assert "signed in as ann-b" in text and db.name in text and str(db.parent) not in text
        assert str(db.parent) not in remote.locator("body").inner_text()
        rbox.get_by_role("link", name="Log out").click()
        remote.locator("input[type=password]").wait_for()                 # back at the login form
        local.reload()                                                    # the other user stays signed in
        local.locator("#cc-whoami").get_by_text("signed in as ann-a").wait_for()
