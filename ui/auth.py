"""Login for a hosted lab: a file of `user:password-hash` lines (see README, "Host it for your lab")."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
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


def load_auth(path: Path) -> Callable[[str, str], bool]:
    """A Gradio auth function over the users in `path`; a bad line is a clear error naming it."""
    users: dict[str, str] = {}
    for no, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        user, sep, encoded = line.strip().partition(":")
        if not sep or not user or not encoded.startswith("pbkdf2_sha256$"):
            raise CrosscheckError(f"{path}:{no}: expected user:pbkdf2_sha256$... (make one with "
                                  "`python app.py hash-password`)")
        users[user] = encoded
    if not users:
        raise CrosscheckError(f"{path}: no users in the auth file")

    def auth(username: str, password: str) -> bool:
        encoded = users.get(username)
        return encoded is not None and check_password(password, encoded)

    return auth
