"""Full-text search (db/search.py, `app.py search`) and group tags (db/tags.py) on a real store written through the
product's own write paths: items import, predictions import and --replace, the live runners' sink, labels, tags."""

from __future__ import annotations

import json
import threading

import pytest
from conftest import fe_lines, run_cli, write_benchmark

from core.schema import Prediction
from db.importers import import_items, import_predictions
from db.labels import save_label
from db.search import FIELDS, BadQuery, refresh, search
from db.store import Store
from db.tags import remove_tag, set_tag, tag_fields, tags_frame


def _preds(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def planted(tmp_path, store):
    """An FE benchmark; run A plants 'zebrafish' in one response, run B in one trace; other text is plain."""
    lines = fe_lines(n_fq1=2, n_fq2=2)
    import_items(store, write_benchmark(tmp_path / "fe", lines), name="fe")
    ids = [line["item_id"] for line in lines]
    a = [{"item_id": i, "response": f"The answer is A because of {'zebrafish' if i == ids[1] else 'the table'}."}
         for i in ids]
    b = [{"item_id": i, "response": "Answer: B", "trace": "First I look at the red mirror. "
          + ("A zebrafish swims left." if i == ids[4] else "Nothing moves.")} for i in ids]
    import_predictions(store, _preds(tmp_path / "a.jsonl", a), "run-a")
    import_predictions(store, _preds(tmp_path / "b.jsonl", b), "run-b")
    return store, ids


def _where(hits):
    return {(h.item_id, h.run, h.field) for h in hits}


def test_a_planted_word_is_found_exactly_where_it_is(planted):
    store, ids = planted
    hits = search(store, "zebrafish")
    assert _where(hits) == {(ids[1], "run-a", "response"), (ids[4], "run-b", "trace")}
    assert all(h.benchmark == "fe" and "«zebrafish»" in h.snippet for h in hits)
    assert _where(search(store, "zebrafish", runs=["run-b"])) == {(ids[4], "run-b", "trace")}
    assert _where(search(store, "zebrafish", fields=("response",))) == {(ids[1], "run-a", "response")}
    assert search(store, "zebrafish", fields=("question", "options", "meta", "notes")) == []


@pytest.fixture
def one_word_per_field(tmp_path, store):
    """An FE benchmark where each field holds a word no other field holds: a question "quokka", an option text
    "前" (FQ1's A), a meta value "narwhal", run-a's response "zebrafish", run-b's trace "swims", a tag's note
    "walrus"."""
    lines = fe_lines(n_fq1=2, n_fq2=2)
    lines[0]["question"] += " quokka"
    lines[2]["meta"] = {**lines[2]["meta"], "remark": "narwhal"}
    import_items(store, write_benchmark(tmp_path / "fe", lines), name="fe")
    ids = [line["item_id"] for line in lines]
    a = [{"item_id": i, "response": "The answer is A" + (" by the zebrafish." if i == ids[1] else ".")} for i in ids]
    b = [{"item_id": i, "response": "Answer: B", "trace": "A fish " + ("swims." if i == ids[4] else "rests.")}
         for i in ids]
    import_predictions(store, _preds(tmp_path / "a.jsonl", a), "run-a")
    import_predictions(store, _preds(tmp_path / "b.jsonl", b), "run-b")
    set_tag(store, "fe", lines[0]["group_id"], "odd", note="the walrus again")
    return store


@pytest.mark.parametrize(("word", "field"), [("quokka", "question"), ("前", "options"), ("narwhal", "meta"),
                                             ("zebrafish", "response"), ("swims", "trace"), ("walrus", "notes")])
def test_a_search_limited_to_a_field_matches_that_field_only(one_word_per_field, word, field):
    """A word held by one field is found in that field and, with the search limited to any other field, not at
    all (a search limited to responses does not match a word that only a trace holds, and so on)."""
    for other in FIELDS:
        hits = search(one_word_per_field, word, fields=(other,), limit=None)
        assert bool(hits) == (other == field), (word, other)
        assert all(h.field == field for h in hits)


def test_phrases_prefixes_and_not(planted):
    store, ids = planted
    assert len(search(store, '"red mirror"', limit=None)) == len(ids)  # every run-b trace
    assert search(store, '"mirror red"') == []
    assert {h.run for h in search(store, "zebra*", limit=None)} == {"run-a", "run-b"}
    assert _where(search(store, "mirror NOT zebrafish", fields=("trace",), limit=None)) == {
        (i, "run-b", "trace") for i in ids if i != ids[4]}
    assert search(store, "tabletop", fields=("meta",), limit=None)  # a meta value
    assert {h.field for h in search(store, "前", limit=None)} == {"options"}  # an option text (a CJK token)


def test_the_index_follows_replace_and_the_live_sink(planted, tmp_path):
    store, ids = planted
    assert len(search(store, "zebrafish")) == 2  # both runs indexed before their rows are replaced
    a = [{"item_id": ids[1], "response": "The answer is C: an octopus."}]
    import_predictions(store, _preds(tmp_path / "a2.jsonl", a), "run-a", replace=True)
    assert _where(search(store, "zebrafish")) == {(ids[4], "run-b", "trace")}
    assert _where(search(store, "octopus")) == {(ids[1], "run-a", "response")}
    # the live sink writes from a runner's thread: a connection of its own (Store.conn is per thread)
    sink = threading.Thread(target=store.add_predictions, args=("run-b", [Prediction(
        item_id=ids[0], response="Answer: D", trace="a narwhal", status="ok", answer="D", shown="D")]))
    sink.start()
    sink.join()
    assert _where(search(store, "narwhal")) == {(ids[0], "run-b", "trace")}
    assert len(search(store, '"nothing moves"', limit=None)) == len(ids) - 2  # ids[0]'s old trace is gone
    assert search(store, "nothing moves", fields=("trace",), limit=None)  # run-b's other traces are still there
    assert refresh(store) == 0  # nothing left to index
    _index_is_whole(store)


def _index_is_whole(store):
    """Every (token, row, column, offset) search_predictions holds is one a fresh index of the predictions' text
    holds, and the reverse: a replaced text left nothing behind (an external-content row deleted with other text
    than it was indexed from would leave its tokens; FTS5's integrity-check here does not read the content)."""
    conn = store.conn
    conn.execute("INSERT INTO search_predictions(search_predictions) VALUES ('integrity-check')")
    conn.execute("CREATE VIRTUAL TABLE temp.live USING fts5vocab(main, search_predictions, instance)")
    conn.execute("CREATE VIRTUAL TABLE temp.fresh USING fts5(response, trace, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO temp.fresh(rowid, response, trace) SELECT id, response, trace FROM search_prediction_texts")
    conn.execute("CREATE VIRTUAL TABLE temp.fresh_vocab USING fts5vocab(temp, fresh, instance)")
    try:
        live = conn.execute("SELECT term, doc, col, offset FROM temp.live").fetchall()
        fresh = conn.execute("SELECT term, doc, col, offset FROM temp.fresh_vocab").fetchall()
        assert live and sorted(live) == sorted(fresh)
    finally:
        for name in ("live", "fresh_vocab", "fresh"):
            conn.execute(f"DROP TABLE temp.{name}")


def test_notes_and_tags_are_searched_and_tags_kept_with_who_and_when(tmp_path, store):
    import_items(store, write_benchmark(tmp_path / "fe", fe_lines(1, 1)), name="fe")
    gid = "g1_0"
    set_tag(store, "fe", gid, "hard-case", note="the walrus confuses it", by="ana")
    tags = tags_frame(store, "fe")
    assert tags[["group_id", "tag", "note", "by"]].values.tolist() == [[gid, "hard-case", "the walrus confuses it", "ana"]]
    assert tags["created"].iloc[0]
    assert _where(search(store, "walrus")) == {(None, None, "notes")}
    set_tag(store, "fe", gid, "hard-case", note="now a seal", by="ana")
    assert search(store, "walrus") == [] and len(search(store, "seal")) == 1
    assert tag_fields(store, "fe", tags["group_id"])["tag:hard-case"].tolist() == ["tagged"]
    assert remove_tag(store, "fe", gid, "hard-case") and search(store, "seal") == []
    with pytest.raises(Exception, match="no group 'nope'"):
        set_tag(store, "fe", "nope", "x")
    with pytest.raises(Exception, match="no comma"):
        set_tag(store, "fe", gid, "a,b")


def test_label_notes_are_searched(demo_db, tmp_path):
    from conftest import copy_store

    store = Store(copy_store(demo_db, tmp_path / "copy"))
    try:
        run = "synth-sb-binder-weak"
        frame = store.predictions_frame(run)
        f_items = [i for i in frame["item_id"] if str(i).endswith("-F")]
        save_label(store, run, (f_items[0], 0, 0), "ana", {"S1": 1, "S2": 0, "S3": 0, "S4": 0}, note="platypus rule")
        hits = search(store, "platypus", fields=("notes",))
        assert _where(hits) == {(f_items[0], run, "notes")}
        save_label(store, run, (f_items[0], 0, 0), "ana", {"S1": 1, "S2": 0, "S3": 0, "S4": 0}, note="changed")
        assert search(store, "platypus") == []
    finally:
        store.close()


def test_a_store_from_before_the_index_is_indexed_by_its_migration(tmp_path):
    path = tmp_path / "old.db"
    store = Store(path)
    import_items(store, write_benchmark(tmp_path / "fe", fe_lines(1, 1)), name="fe")
    with store.write() as conn:  # back to a store of migration 007: no search tables
        for (name, kind) in conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('trigger', 'table')"
                                         " AND (name LIKE 'search%' OR name = 'group_tags')").fetchall():
            if kind == "trigger":
                conn.execute(f"DROP TRIGGER {name}")
        for name in ("search_items", "search_notes", "search_tags", "search_predictions"):
            conn.execute(f"DROP TABLE {name}")
        conn.execute("DROP VIEW search_prediction_texts")
        for name in ("search_keys", "search_state", "group_tags"):
            conn.execute(f"DROP TABLE {name}")
        conn.execute("DELETE FROM _migrations WHERE name IN ('008_search', '009_search_external')")
    store.close()
    store = Store(path)
    try:
        assert {h.item_id for h in search(store, "证据问题", limit=None)} == {"g2_0-mss", "g2_0-del", "g2_0-add"}
    finally:
        store.close()


def test_a_store_indexed_by_migration_008_moves_to_the_external_index(tmp_path, monkeypatch):
    """A store whose predictions were indexed with their own copy of the text (migration 008): 009 drops that
    table, the first search indexes every run again, and --replace keeps the new index whole."""
    from db import schema

    path = tmp_path / "old.db"
    lines = fe_lines(1, 1)
    ids = [line["item_id"] for line in lines]
    with monkeypatch.context() as m:
        m.setattr(schema, "MIGRATIONS", [x for x in schema.MIGRATIONS if x[0] <= "008_search"])
        store = Store(path)
        import_items(store, write_benchmark(tmp_path / "fe", lines), name="fe")
        rows = [{"item_id": i, "response": f"答案是 B，镜子 {'walrus' if n == 0 else 'seal'}",
                 "trace": "the mirror turns"} for n, i in enumerate(ids)]
        import_predictions(store, _preds(tmp_path / "a.jsonl", rows), "run-a")
        assert _where(search(store, "walrus")) == {(ids[0], "run-a", "response")}
        assert store.conn.execute("SELECT COUNT(*) FROM search_predictions_content").fetchone()[0] == len(ids)
        store.close()
    store = Store(path)
    try:
        names = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master")}
        assert "search_predictions_content" not in names and "search_prediction_texts" in names
        assert store.conn.execute("SELECT COUNT(*) FROM search_keys").fetchone()[0] == 0  # indexed again below
        hits = search(store, "walrus")
        assert _where(hits) == {(ids[0], "run-a", "response")} and "«walrus»" in hits[0].snippet
        assert len(search(store, "镜子", limit=None)) == len(ids)  # a CJK token (unicode61 splits at spaces and CJK punctuation)
        assert len(search(store, '"mirror turns"', fields=("trace",), limit=None)) == len(ids)
        rows[0]["response"] = "答案是 C，海象"
        import_predictions(store, _preds(tmp_path / "a2.jsonl", rows[:1]), "run-a", replace=True)
        assert search(store, "walrus") == [] and _where(search(store, "海象")) == {(ids[0], "run-a", "response")}
        _index_is_whole(store)
    finally:
        store.close()


def test_bad_queries(planted):
    store, _ = planted
    for q in ('"unbalanced', "", "AND", "(a OR", "trace: mirror", "{trace} : mirror", "http://x"):
        with pytest.raises(BadQuery, match="bad search query"):
            search(store, q)
    assert FIELDS == ("response", "trace", "question", "options", "meta", "notes")
    assert search(store, '"trace: mirror"') == []  # quoted, a colon is text


def test_cli(planted):
    store, ids = planted
    db = store.path
    r = run_cli("search", "zebrafish", "--json", db=db)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert {(x["item_id"], x["run"], x["field"]) for x in lines} == {(ids[1], "run-a", "response"),
                                                                     (ids[4], "run-b", "trace")}
    assert set(lines[0]) == {"benchmark", "group_id", "item_id", "run", "field", "snippet"}
    none = run_cli("search", "nothinglikethis", db=db)
    assert none.returncode == 0 and none.stdout == ""
    bad = run_cli("search", '"unbalanced', db=db)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    r = run_cli("search", "zebrafish", "--in", "trace", "--run", "run-a,run-b", db=db)
    assert r.returncode == 0 and r.stdout.count("\n") == 1 and "trace" in r.stdout
    assert run_cli("search", "x", "--in", "answers", db=db).returncode == 2
