"""The Run tab with a local checkpoint in the real app: a tiny LLaVA-1.5 (its real template renders every image
first) runs from the form, and the finished job's line warns that the image labels are detached; a checkpoint
whose processor needs torchvision fails at load with the one-line message and stores no run when torchvision is
absent. The app runs with torchvision made absent whatever is installed (a sitecustomize that blocks its import
the documented way, `sys.modules["torchvision"] = None`, so transformers' availability check finds no spec), so the
test passes alike on a CPU machine and on a GPU workstation with CUDA torch and torchvision; the branch with
torchvision present is scripts/torch-setup.sh's (tests/test_runners_transformers.py)."""

from __future__ import annotations

import os

import pytest
from tiny_models import build_llava, write_qwen2vl
from uiharness import browser, running_app, wait_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from core.demo import SMALL
    from db.demo import build_demo_store
    from db.store import Store

    root = tmp_path_factory.mktemp("runlocal")
    db = root / "demo.db"
    build_demo_store(Store(db), sizes=SMALL, progress=lambda m: None)
    return db, build_llava(root / "llava"), write_qwen2vl(root / "qwen2vl")


def without_torchvision(folder) -> dict[str, str]:
    """Environment variables under which a Python process cannot import torchvision, installed or not."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text('import sys\n\nsys.modules["torchvision"] = None\n')
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)}


def _start(page, name: str, model, limit: int = 2, seen: list[str] | None = None) -> str:
    page.get_by_role("tab", name="Run", exact=True).click()
    box = page.locator("#cc-run-name input, #cc-run-name textarea").first
    box.fill(name)
    box.press("Tab")
    page.locator("#cc-run-runner").get_by_text("Local transformers checkpoint").click()
    path = page.locator("#cc-run-model-path input, #cc-run-model-path textarea").first
    path.wait_for(state="visible", timeout=20_000)
    path.fill(str(model))
    path.press("Tab")
    lim = page.locator("#cc-run-limit input").first
    lim.fill(str(limit))
    lim.press("Tab")
    page.locator("#cc-run-start").click()
    readings: list[dict] = []
    p = wait_run(page, name, ("done", "failed"), timeout=120, seen=readings)
    if seen is not None:
        seen.extend(r["text"] for r in readings if r["status"] == "running")
    return str(p["status"])


def test_run_tab_warns_and_refuses(setup):
    from db.store import Store

    db, llava, qwen = setup
    with running_app(db, env=without_torchvision(db.parent / "no-torchvision")) as url, browser() as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        seen: list[str] = []
        assert _start(page, "gui-llava", llava, limit=24, seen=seen) == "done"
        text = page.locator("#cc-run-progress").inner_text()
        assert "labels are detached from their images" in text and "images_separated" in text
        # the warning is there in every reading of the run going on that the page caught (a short run may end
        # between two refreshes: tests/test_runners_transformers.py renders the panel at each step of a job)
        assert all("warning: " in t and "labels are detached" in t for t in seen)
        if os.environ.get("CROSSCHECK_SHOTS"):
            page.screenshot(path=os.path.join(os.environ["CROSSCHECK_SHOTS"], "run-local-warning.png"), full_page=True)
        page.reload()
        assert _start(page, "gui-qwen", qwen) == "failed"
        text = page.locator("#cc-run-progress").inner_text()
        assert "'torchvision'" in text and "make torch-cuda" in text and "Traceback" not in text
        if os.environ.get("CROSSCHECK_SHOTS"):
            page.screenshot(path=os.path.join(os.environ["CROSSCHECK_SHOTS"], "run-local-missing.png"), full_page=True)
    s = Store(db)
    assert s.run("gui-llava")["config"]["images_separated"] is True
    assert [r[0] for r in s.conn.execute("SELECT name FROM runs WHERE name = 'gui-qwen'")] == []
    s.close()
