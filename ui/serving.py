"""How the UI is served: a FastAPI app we own, with the store's images at store-relative routes, and the Gradio
Blocks mounted on it (`gr.mount_gradio_app`, Gradio's public way to add routes beside an app).

Images are addressed by their content hash (the store's image key, hex digits of SHA-256), never by path, so no page shows where the store lives (issue 14 point 9):

- `image/<hash>.<ext>`: a stored image, full size;
- `thumb/<hash>_<size>.png`: a thumbnail the store has already made (the view that links it made it).

Anything else under those routes (a path, `..`, an unknown hash, another extension or size) is a 404, and with
`--auth` an anonymous request is a 401, exactly as Gradio answers for its own routes: the check asks the
mounted Gradio app's `/gradio_api/login_check`, the route its own front end uses, with the request's cookies.
The URLs are relative, so they work behind a reverse proxy that serves the app under a sub-path.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse

from core.errors import CrosscheckError, NotFound

IMAGE_NAME = re.compile(r"([0-9a-f]{16,64})\.([A-Za-z0-9]{1,8})")
THUMB_NAME = re.compile(r"([0-9a-f]{16,64})_(\d{1,5})\.png")

# Gradio's own file cache (every gr.File / download value is copied there): pruned every FREQUENCY seconds of
# files older than AGE seconds, so a server running for weeks keeps no old copies.
CACHE_ENV = "CROSSCHECK_GRADIO_CACHE"
DEFAULT_CACHE_PRUNE = (3600, 86400)


class ServeSettingError(CrosscheckError, ValueError):
    """A serving setting from the environment that is not what it should be."""


def cache_pruning(environ: Any = None) -> tuple[int, int]:
    """(frequency_s, age_s) for `gr.Blocks(delete_cache=...)`: CROSSCHECK_GRADIO_CACHE="FREQUENCY,AGE" (two
    positive whole numbers of seconds), else every hour, files older than a day."""
    raw = (os.environ if environ is None else environ).get(CACHE_ENV, "").strip()
    if not raw:
        return DEFAULT_CACHE_PRUNE
    parts = [p.strip() for p in raw.split(",")]
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ServeSettingError(f"{CACHE_ENV}={raw!r}: expected FREQUENCY,AGE, two positive whole numbers of "
                                "seconds (e.g. 3600,86400: every hour, files older than a day)")
    return int(parts[0]), int(parts[1])


def image_url(path: str | os.PathLike[str]) -> str:
    """The store-relative URL of a stored image or thumbnail (a path the store gave: `Store.image_path`,
    `Store.thumbnail`); only its file name, a content hash, reaches the page."""
    name = Path(path).name
    if THUMB_NAME.fullmatch(name):
        return f"thumb/{name}"
    if IMAGE_NAME.fullmatch(name):
        return f"image/{name}"
    raise ValueError(f"{name}: not a stored image or thumbnail name")


def image_file(store: Any, name: str) -> Path:
    """The file behind `image/<name>`: a known image hash with its stored extension, else NotFound."""
    m = IMAGE_NAME.fullmatch(name)
    if not m:
        raise NotFound(f"{name}: not an image name (<hash>.<ext>)")
    path = store.image_path(m.group(1))  # NotFound for a hash the store does not hold
    if path.name != name or not path.is_file():
        raise NotFound(f"no image {name} in the store")
    return Path(path)


def thumb_file(store: Any, name: str) -> Path:
    """The file behind `thumb/<name>`: a thumbnail the store already made of a known image, else NotFound."""
    m = THUMB_NAME.fullmatch(name)
    if not m:
        raise NotFound(f"{name}: not a thumbnail name (<hash>_<size>.png)")
    store.image_path(m.group(1))  # a known image hash
    path = store.thumbs_dir / name
    if not path.is_file():
        raise NotFound(f"no thumbnail {name} in the store")
    return Path(path)


def make_app(store: Any, demo: Any, auth: Callable[[str, str], bool] | None = None, **mount: Any) -> Any:
    """The served app: the image routes, then the Gradio Blocks mounted at / (`mount` goes to
    gr.mount_gradio_app: css, max_file_size, footer_links ...)."""
    import gradio as gr

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    async def signed_in(request: Request) -> None:
        if auth is None:
            return
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://crosscheck") as client:
            answer = await client.get("/gradio_api/login_check", cookies=dict(request.cookies))
        if answer.status_code != 200:
            raise HTTPException(status_code=401, detail="Not authenticated")

    def serve(find: Callable[[Any, str], Path], name: str) -> FileResponse:
        try:
            path = find(store, name)
        except NotFound:
            raise HTTPException(status_code=404, detail="Not found") from None
        return FileResponse(path, headers={"Cache-Control": "private, max-age=86400"})

    @app.get("/image/{name}")
    async def image(name: str, request: Request) -> FileResponse:
        await signed_in(request)
        return serve(image_file, name)

    @app.get("/thumb/{name}")
    async def thumb(name: str, request: Request) -> FileResponse:
        await signed_in(request)
        return serve(thumb_file, name)

    return gr.mount_gradio_app(app, demo, path="/", auth=auth, **mount)


def run(app: Any, host: str, port: int, prevent_thread_lock: bool = False) -> Any:
    """Serve `app` with uvicorn until interrupted (SIGINT / SIGTERM stop it within a few seconds); with
    `prevent_thread_lock`, in a background thread, returning the uvicorn Server once it listens. Port 0 takes a
    free port: the socket is bound and listening before `serving on http://HOST:PORT` is printed with the port
    it got, so a caller that reads that line (tests/serverharness.py) can connect at once."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)
    server = uvicorn.Server(config)
    sock = config.bind_socket()
    sock.listen(config.backlog)  # connections made from now on wait in the backlog until uvicorn serves them
    if not prevent_thread_lock:
        print(f"serving on http://{host}:{sock.getsockname()[1]}", flush=True)
        server.run(sockets=[sock])
        return server
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.05)
    return server
