"""Write docs/GLOSSARY.md's table from the families' catalogues (ui.glossary.GLOSSARY): `python scripts/glossary.py`.
tests/ui/test_glossary.py fails while the page and the catalogues disagree."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ui.glossary import GLOSSARY  # noqa: E402

DOC = ROOT / "docs" / "GLOSSARY.md"
HEAD = "| term | meaning | paper, section |\n| --- | --- | --- |\n"


def table() -> str:
    return HEAD + "".join(f"| {t} | {w.replace('|', '/')} | {s} |\n" for t, (w, s) in GLOSSARY.items())


def main() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(HEAD)
    end = text.index("\n\n", start)
    DOC.write_text(text[:start] + table().rstrip("\n") + text[end:], encoding="utf-8")


if __name__ == "__main__":
    main()
