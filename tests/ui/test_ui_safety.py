"""Safety of the served UI: model and imported text is shown as text (an `<img onerror>` response opens no
dialog anywhere), images are served by content hash only (no page names the store's folder, a path or `..`
is refused, --auth refuses anonymous image requests), Gradio's download cache is pruned, and serving on
0.0.0.0 without --auth warns. Also checks the generic group view's counts on this small store."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest
from conftest import write_benchmark
from test_ui_browse import choose, new_page, shared_app
from uiharness import app_log, events_started, running_app, wait_events

from core import groups as G

XSS = "<img src=x onerror=alert(1)>"
XSS2 = "<script>alert(2)</script>"
RUN = "xss-run"
RUN2 = "xss-run-2"


def _lines() -> list[dict]:
    out = []
    for g in range(2):
        for k in range(3):
            out.append({"benchmark": "generic", "item_id": f"x{g}-{k}", "group_id": f"grp-{g}", "split": "test",
                        "kind": "q", "variant": f"v{k}", "images": [f"img/g{g}_{k % 2}.png"],
                        "question": f"{XSS} question {g}.{k}", "options": {"A": XSS2, "B": "plain", "C": "c"},
                        "answer": "B", "meta": {"topic": "<b>bold?</b>" if g else "plain"}})
    return out


def prepare(store, folder) -> dict:
    """Import the small generic benchmark "xss" (HTML in questions, options, meta and responses) and two runs."""
    from db.importers import import_items, import_predictions

    src = write_benchmark(folder / "xss", _lines(), name="xss.jsonl")
    import_items(store, src, name="xss")
    answers = {"x0-0": XSS, "x0-1": "B", "x0-2": "A", "x1-0": "B", "x1-1": "B", "x1-2": XSS2}
    for run, flip in ((RUN, False), (RUN2, True)):
        path = folder / f"{run}.jsonl"
        path.write_text("".join(json.dumps({"item_id": i, "response": ("C" if flip and r == "B" else r)}) + "\n"
                                for i, r in answers.items()), encoding="utf-8")
        import_predictions(store, path, run, model="m", benchmark="xss", config={"runner": "import", "model": run})
    return {}


@pytest.fixture
def env(request, demo_db, tmp_path_factory):
    """The shared app and a fresh page for each test, on the XSS benchmark."""
    app = shared_app(request, demo_db, tmp_path_factory)
    page, dialogs = new_page(app)
    choose(page, "cc-benchmark", re.compile(r"^xss \("))
    page.wait_for_selector("#cc-browse-list [role=gridcell]:has-text('grp-0')", timeout=30000)
    yield {"page": page, "store": app["store"], "url": app["url"], "dialogs": dialogs, "db": app["db"],
           "browser": app["browser"]}
    page.context.close()


@pytest.mark.browser
@pytest.mark.slow
def test_model_and_imported_text_is_escaped_everywhere(env):
    page = env["page"]
    assert page.locator("#cc-browse-list [role=gridcell]", has_text=XSS).count() >= 1  # question as text
    box = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    box.fill("grp-0")
    box.press("Enter")
    page.wait_for_selector("#cc-group-view [data-group='grp-0']", timeout=30000)
    view = page.locator("#cc-group-view")
    assert XSS in view.locator(".cc-question").first.inner_text()
    assert XSS2 in view.locator(".cc-opts").first.inner_text()
    raw = view.locator(".cc-detail .cc-raw-details").first
    raw.locator("summary").click()
    assert raw.locator("pre").inner_text().strip() == XSS
    assert page.locator("img[src='x']").count() == 0 and page.locator("#cc-group-view script").count() == 0
    # the extraction audit lists the invalid responses as text too
    page.locator("#cc-audit").get_by_text("Extraction audit").first.click()
    page.locator("#cc-audit-list-btn").click()
    page.wait_for_selector("#cc-audit-list .cc-audit-table", timeout=30000)
    assert XSS in page.locator("#cc-audit-list").inner_text()
    # and Compare's changed-group view
    page.get_by_role("tab", name="Compare").click()
    page.locator("#cc-compare-go").click()
    page.wait_for_selector("#cc-compare-changed [role=gridcell]", timeout=30000)
    sent = events_started(page)
    page.locator("#cc-compare-changed [data-col='0'][role=gridcell]").first.click()
    page.wait_for_selector("#cc-compare-view [data-group]", timeout=30000)
    wait_events(page, sent)  # the view's events have come back: a script in it would have run
    assert env["dialogs"] == []
    assert page.locator("img[src='x']").count() == 0
    page.get_by_role("tab", name="Browse").click()


@pytest.mark.browser
@pytest.mark.slow
def test_generic_view_counts(env):
    page, store = env["page"], env["store"]
    box = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    box.fill("grp-1")
    box.press("Enter")
    page.wait_for_selector("#cc-group-view [data-group='grp-1'] .cc-view-generic", timeout=30000)
    items = store.items_frame("xss")
    summ = G.group_summary("generic", items, store.run_data(RUN)).loc["grp-1"]
    row = page.locator("#cc-group-view table.cc-allruns tbody tr", has=page.locator(f".cc-run[title='{RUN}']"))
    assert row.locator(".cc-kn").inner_text().strip() == f"{int(summ['n_correct'])}/{int(summ['n_answered'])}"
    assert row.locator(".cc-correct").count() == int(summ["n_correct"])
    assert page.locator("#cc-group-view .cc-cols .cc-col").count() == int((items["group_id"] == "grp-1").sum())
    # two distinct images in the group: each shown once with I1, I2
    assert page.locator("#cc-group-view .cc-images .cc-img-label").all_inner_texts() == ["I1", "I2"]


def _status(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


@pytest.mark.browser
@pytest.mark.slow
def test_group_view_shows_no_store_path(env):
    """Images are linked by content hash (image/..., thumb/...): the HTML of a group view names no folder of
    the store, and its thumbnails load."""
    page, store = env["page"], env["store"]
    box = page.locator("#cc-browse-group textarea, #cc-browse-group input").first
    box.fill("grp-0")
    box.press("Enter")
    page.wait_for_selector("#cc-group-view [data-group='grp-0'] .cc-images img", timeout=30000)
    page.wait_for_function("() => [...document.querySelectorAll('#cc-group-view .cc-thumb-wrap img')]"
                           ".every(i => i.complete && i.naturalWidth > 0)", timeout=30000)
    html = page.locator("#cc-group-view").inner_html()
    srcs = page.locator("#cc-group-view img").evaluate_all("els => els.map(e => e.getAttribute('src'))")
    assert srcs and all(re.fullmatch(r"(thumb/[0-9a-f]+_\d+\.png|image/[0-9a-f]+\.png)", s) for s in srcs), srcs
    for secret in (str(store.path.parent), store.images_dir.name, store.thumbs_dir.name, "gradio_api/file="):
        assert secret not in html, secret


@pytest.mark.browser
@pytest.mark.slow
def test_image_routes_serve_only_known_images(env):
    from urllib.parse import quote

    store, url = env["store"], env["url"]
    digest = store.items_frame("xss")["images"].iloc[0][0]
    name = store.image_path(digest).name
    ok, body = _status(f"{url}/image/{name}")
    assert ok == 200 and body[:4] == b"\x89PNG"  # positive control: a stored image is served by its hash
    thumb = store.thumbnail(digest)
    ok, body = _status(f"{url}/thumb/{thumb.name}")
    assert ok == 200 and body[:4] == b"\x89PNG"
    db = env["db"].name
    for path in (f"image/../{db}", f"image/..%2f{db}", f"image/%2e%2e%2f{db}", f"image/{quote(str(env['db']), safe='')}",
                 f"thumb/..%2f..%2f{db}", f"image/{digest}.jpg", f"image/{'0' * len(digest)}.png", f"image/{digest}",
                 f"thumb/{digest}_999.png", f"thumb/{name}", "image/", f"image/{name}/x"):
        code, body = _status(f"{url}/{path}")
        assert code in (404, 405), (path, code)
        assert b"SQLite format" not in body and b"\x89PNG" not in body, path
    # Gradio's file route serves no folder of the store any more (nor anything outside it)
    for path in (str(store.image_path(digest)), str(thumb), "/etc/passwd", str(env["db"]), str(env["db"]) + "-wal",
                 str(store.images_dir / ".." / env["db"].name)):
        code, body = _status(f"{url}/gradio_api/file={quote(path)}")
        assert code in (403, 404), (path, code)
        assert b"root:" not in body and b"SQLite format" not in body and b"\x89PNG" not in body


def test_image_routes_refuse_anonymous_requests_under_auth(tmp_path, fe_bench):
    import httpx

    from db.importers import import_items
    from db.store import Store
    from ui.auth import auth_line

    db = tmp_path / "auth.db"
    s = Store(db)
    import_items(s, fe_bench, name="fe")
    digest = s.items_frame("fe")["images"].iloc[0][0]
    name, thumb = s.image_path(digest).name, s.thumbnail(digest).name
    s.close()
    users = tmp_path / "users.txt"
    users.write_text(auth_line("alice", "pw1") + "\n")
    with running_app(db, "--auth", str(users)) as url:
        for path in (f"/image/{name}", f"/thumb/{thumb}"):
            anonymous = httpx.get(url + path, timeout=10)
            assert anonymous.status_code == 401 and not anonymous.content.startswith(b"\x89PNG"), path
        assert httpx.get(url + "/config", timeout=10).status_code == 401  # as the rest of the app answers
        with httpx.Client(base_url=url, timeout=10) as client:
            assert client.post("/login", data={"username": "alice", "password": "wrong"}).status_code >= 400
            assert client.get(f"/image/{name}").status_code == 401
            assert client.post("/login", data={"username": "alice", "password": "pw1"}).status_code == 200
            for path in (f"/image/{name}", f"/thumb/{thumb}"):
                signed_in = client.get(path)
                assert signed_in.status_code == 200 and signed_in.content[:4] == b"\x89PNG", path
            assert client.get(f"/image/..%2f{db.name}").status_code == 404  # signed in, still only images
            client.get("/logout")
            assert client.get(f"/image/{name}").status_code == 401


@pytest.mark.browser
@pytest.mark.slow
def test_gradio_download_cache_is_pruned(env, tmp_path, fe_bench):
    """A download Gradio copied into its cache (the Data tab's export) is removed once older than the age
    CROSSCHECK_GRADIO_CACHE sets (here: checked every second, age 4 s), and not before."""
    import time

    from db.importers import import_items
    from db.store import Store

    db = tmp_path / "cache.db"
    s = Store(db)
    import_items(s, fe_bench, name="fe")
    s.close()
    cache = tmp_path / "gradio-cache"
    with running_app(db, env={"GRADIO_TEMP_DIR": str(cache), "CROSSCHECK_GRADIO_CACHE": "1,4"}) as url:
        page = env["browser"].new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(url)
            page.get_by_role("tab", name="Data").click()
            page.locator("#cc-data-export").click()
            page.locator("#cc-data-download a").first.wait_for(timeout=60000)
            made = time.time()
            copies = [p for p in cache.rglob("*.jsonl") if p.is_file()]
            assert copies, sorted(cache.rglob("*"))  # the download sits in Gradio's cache
            href = page.locator("#cc-data-download a").first.get_attribute("href")
            assert _status(href if href.startswith("http") else url + "/" + href.lstrip("/"))[0] == 200
            deadline = made + 30
            while any(p.exists() for p in copies) and time.time() < deadline:
                time.sleep(0.25)  # the server's pruning thread: a file-system condition, no event to wait on
            gone = time.time()
            assert not any(p.exists() for p in copies), "the cached download was never removed"
            assert gone - made >= 2.5  # kept while younger than the age (4 s, minus the click's own time)
        finally:
            page.close()


@pytest.mark.parametrize(("value", "expect"), [
    (None, (3600, 86400)), ("", (3600, 86400)), ("60,300", (60, 300)), (" 1 , 4 ", (1, 4)),
    ("60", "FREQUENCY,AGE"), ("0,10", "FREQUENCY,AGE"), ("-1,10", "FREQUENCY,AGE"), ("a,b", "FREQUENCY,AGE"),
    ("1,2,3", "FREQUENCY,AGE"), ("1.5,2", "FREQUENCY,AGE"),
])
def test_cache_pruning_setting(value, expect):
    from ui.serving import ServeSettingError, cache_pruning

    environ = {} if value is None else {"CROSSCHECK_GRADIO_CACHE": value}
    if isinstance(expect, tuple):
        assert cache_pruning(environ) == expect
    else:
        with pytest.raises(ServeSettingError, match=rf"CROSSCHECK_GRADIO_CACHE=.*expected {expect}"):
            cache_pruning(environ)


@pytest.mark.browser
@pytest.mark.slow
def test_serving_on_all_interfaces_without_auth_warns(env, tmp_path):
    import shutil

    from db.store import Store

    db = tmp_path / "copy.db"
    env["store"].conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy2(env["db"], db)
    Store(db).close()
    with running_app(db, "--host", "0.0.0.0") as url:
        log = app_log(url, "serving on")  # the warning comes before it
    assert "WARNING" in log and "without --auth" in log
