"""Login for a hosted lab: password hashes, the auth file, and a served app that refuses anonymous requests."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from conftest import ROOT
from uiharness import running_app

from core.errors import CrosscheckError
from ui.auth import auth_line, check_password, hash_password, load_auth


def test_hash_and_check():
    h = hash_password("s3cret", iterations=1000)
    assert h.startswith("pbkdf2_sha256$1000$") and check_password("s3cret", h)
    assert not check_password("wrong", h) and not check_password("s3cret", "garbage")


@pytest.mark.parametrize("user", ["", "a:b", "two words"])
def test_bad_user_names_refused(user):
    with pytest.raises(CrosscheckError):
        auth_line(user, "pw")


def test_load_auth_file(tmp_path):
    f = tmp_path / "users.txt"
    f.write_text("# lab users\n" + auth_line("alice", "pw1") + "\n\n" + auth_line("bob", "pw2") + "\n")
    auth = load_auth(f)
    assert auth("alice", "pw1") and auth("bob", "pw2")
    assert not auth("alice", "pw2") and not auth("carol", "pw1")
    f.write_text("alice:plaintext\n")
    with pytest.raises(CrosscheckError, match=r"users.txt:1"):
        load_auth(f)


def test_hash_password_command_prints_a_line(tmp_path):
    out = subprocess.run([sys.executable, "app.py", "hash-password", "alice", "--stdin"], input="pw\n",
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()
    user, _, encoded = out.partition(":")
    assert user == "alice" and check_password("pw", encoded)


def test_served_app_refuses_anonymous_requests(tmp_path, fe_bench):
    from db.importers import import_items
    from db.store import Store

    db = tmp_path / "auth.db"
    s = Store(db)
    import_items(s, fe_bench)
    s.close()
    users = tmp_path / "users.txt"
    users.write_text(auth_line("alice", "pw1") + "\n")
    with running_app(db, "--auth", str(users)) as url:
        for path in ("/config", "/gradio_api/info"):
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(url + path, timeout=10)
            assert exc.value.code in (401, 403)
        from gradio_client import Client

        with pytest.raises(Exception):  # noqa: B017 - any refusal: no config, no API without login
            Client(url, verbose=False)
        body = urllib.request.urlopen(url + "/", timeout=10).read().decode()
        assert "g1_0" not in body and "store:" not in body  # the login page shows no data
        # with the right password, the same client gets in
        client = Client(url, auth=("alice", "pw1"), verbose=False)
        assert client.view_api(print_info=False, return_format="dict") is not None


GOOD = auth_line("alice", "pw1")


@pytest.mark.parametrize(("content", "expect"), [
    (None, r"missing\.txt: no such auth file"),
    ("", r"no users in the auth file"),
    ("# only a comment\n", r"no users in the auth file"),
    ("alice:plaintext\n", r":1: expected user:pbkdf2_sha256\$ITERATIONS\$SALT\$HASH"),
    (GOOD + "\nbob\n", r":2: expected user:pbkdf2_sha256"),
    ("alice:pbkdf2_sha256$many$salt$" + "0" * 64 + "\n", r":1: expected"),
    ("alice:pbkdf2_sha256$1000$salt$nothex\n", r":1: expected"),
    (GOOD + "\n" + GOOD + "\n", r":2: user 'alice' is already on line 1"),
    (b"\xff\xfe binary", r"not UTF-8 text"),
    ("folder", r"is a folder"),
])
def test_serve_with_a_bad_auth_file_prints_one_line_and_exits_2(tmp_path, content, expect):
    """`serve --auth FILE` with a missing or malformed file: one line on stderr, exit 2, no server, no store."""
    import re

    path = tmp_path / "missing.txt"
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    db = tmp_path / "never.db"
    proc = subprocess.run([sys.executable, str(ROOT / "app.py"), "serve", "--db", str(db), "--port",
                           "0", "--auth", str(path)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and re.search(expect, lines[0]), proc.stderr
    assert proc.stdout == "" and not db.exists()          # nothing was built: no demo store, no server


@pytest.mark.parametrize(("host", "headers", "local"), [
    ("127.0.0.1", {}, True),
    ("::1", {}, True),
    ("localhost", {}, True),
    ("127.0.0.1", {"X-Forwarded-For": "203.0.113.9"}, False),   # a reverse proxy on the same machine
    ("127.0.0.1", {"forwarded": "for=203.0.113.9"}, False),
    ("192.168.1.20", {}, False),
    ("203.0.113.9", {}, False),
    (None, {}, False),
    ("not-an-address", {}, False),
])
def test_is_local_request(host, headers, local):
    from ui.auth import is_local_request

    assert is_local_request(host, headers) is local


def test_analytics_off(tmp_path):
    """The Blocks never send usage statistics, whatever GRADIO_ANALYTICS_ENABLED says."""
    from db.store import Store
    from ui.shell import build, header_html

    store = Store(tmp_path / "a.db")
    demo = build(store)
    assert demo.analytics_enabled is False
    assert str(tmp_path) not in header_html(store, "alice", local=False)
    assert str(tmp_path) in header_html(store, None, local=True)
    assert "Log out" in header_html(store, "alice", local=False) and "Log out" not in header_html(store, None, True)
    store.close()
