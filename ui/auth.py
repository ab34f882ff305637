"""Login for a hosted lab: a file of `user:password-hash` lines (docs/HOSTING.md, "Host it for your lab").

Make a line with `python app.py hash-password USER` (cli.commands.cmd_hash_password, over `auth_line`): it asks
for the password twice without echo (or reads one line from stdin with --stdin) and prints
`USER:pbkdf2_sha256$...`; append it to the auth file and start `python app.py serve --auth FILE`. The
signed-in name reaches handlers as `gr.Request.username`; no form field ever asks for it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path

from core.errors import CrosscheckError

ITERATIONS = 200_000


def hash_password(password: str, salt: str | None = None, iterations: int = ITERATIONS) -> str:
    """`pbkdf2_sha256$ITER$SALT$HEX` for one password."""
    salt = salt or secrets.token_hex(8)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations).hex()
    return f"pbkdf2_sha256${iterations}${salt}${digest}"


def check_password(password: str, encoded: str) -> bool:
    try:
        algo, iterations, salt, digest = encoded.split("$")
    except ValueError:
        return False
    if algo != "pbkdf2_sha256":
        return False
    again = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), int(iterations)).hex()
    return hmac.compare_digest(again, digest)


def auth_line(user: str, password: str) -> str:
    """One auth-file line; the user name may not hold ':' or whitespace, the password may not be empty."""
    user = user.strip()
    if not user or ":" in user or any(ch.isspace() for ch in user):
        raise CrosscheckError(f"user name {user!r}: expected a non-empty name without ':' or spaces")
    if not password:
        raise CrosscheckError("the password is empty")
    return f"{user}:{hash_password(password)}"


class AuthFileError(CrosscheckError):
    """The --auth file is missing, unreadable or holds a line that is not user:pbkdf2_sha256$ITER$SALT$HEX"""


def _well_formed(encoded: str) -> bool:
    parts = encoded.split("$")
    if len(parts) != 4 or parts[0] != "pbkdf2_sha256" or not parts[1].isdigit() or int(parts[1]) < 1 or not parts[2]:
        return False
    try:
        bytes.fromhex(parts[3])
    except ValueError:
        return False
    return len(parts[3]) == 64


def load_auth(path: Path) -> Callable[[str, str], bool]:
    """A Gradio auth function over the users in `path`; a missing file or a bad line is an AuthFileError
    naming the file (and the line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AuthFileError(f"{path}: no such auth file (make its lines with `python app.py hash-password USER`)"
                            ) from None
    except IsADirectoryError:
        raise AuthFileError(f"{path}: is a folder, expected the auth file") from None
    except UnicodeDecodeError as exc:
        raise AuthFileError(f"{path}: not UTF-8 text (byte {exc.start}); expected user:pbkdf2_sha256$... lines"
                            ) from None
    except OSError as exc:
        raise AuthFileError(f"{path}: cannot read the auth file ({exc.strerror})") from None
    users: dict[str, str] = {}
    lines: dict[str, int] = {}
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, sep, encoded = line.strip().partition(":")
        if not sep or not user or any(ch.isspace() for ch in user) or not _well_formed(encoded):
            raise AuthFileError(f"{path}:{no}: expected user:pbkdf2_sha256$ITERATIONS$SALT$HASH (make the line "
                                "with `python app.py hash-password USER`)")
        if user in lines:
            raise AuthFileError(f"{path}:{no}: user {user!r} is already on line {lines[user]}")
        users[user], lines[user] = encoded, no
    if not users:
        raise AuthFileError(f"{path}: no users in the auth file (one user:pbkdf2_sha256$... line each)")

    def auth(username: str, password: str) -> bool:
        encoded = users.get(username)
        return encoded is not None and check_password(password, encoded)

    return auth


FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")


def is_local_request(host: str | None, headers: Mapping[str, str] | None = None) -> bool:
    """True for a browser on the serving machine itself: a loopback client address and no proxy header
    (a reverse proxy on the same machine forwards remote users from 127.0.0.1, with one of those headers)."""
    if headers and any(h in {k.lower() for k in headers} for h in FORWARDING_HEADERS):
        return False
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address((host or "").strip("[]")).is_loopback
    except ValueError:
        return False

