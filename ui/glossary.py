"""The glossary: every abbreviation and paper reference a screen shows, with the paper and section it comes from.

Generated from the families' catalogues (core.catalogue: each metric's term and help, each family's words), so
the in-app Glossary panel (`glossary_html`), the hover text of table headers (`header_tip`) and docs/GLOSSARY.md
(tests/ui/test_glossary.py checks it lists the same entries) read one declaration per word.
Papers: 000 = FrameEvidence, 001 = SPUR, 002 = StemBind (shared/seeds/README.md).
"""

from __future__ import annotations

import re

from core import families


def _entries() -> dict[str, tuple[str, str]]:
    """term -> (what it means, where it is defined): every family's catalogue (its metrics' terms, then its own
    words), the families in the registry's order, each term once."""
    out: dict[str, tuple[str, str]] = {}
    for name in families.names():
        for term, entry in families.get(name).catalogue.glossary().items():
            out.setdefault(term, entry)
    return out


GLOSSARY: dict[str, tuple[str, str]] = _entries()

ALIASES = {"fq1 group exact match": "FQ1-GEM", "group exact match": "GEM"}  # longer first


def header_tip(header: str) -> str:
    """Hover text for a table header: the meaning and the paper section of every glossary term it names."""
    for long, short in ALIASES.items():
        header = re.sub(re.escape(long), short, header, flags=re.IGNORECASE)
    tips = [f"{term}: {what} ({where})" for term, (what, where) in GLOSSARY.items()
            if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", header, re.IGNORECASE)]
    return " · ".join(tips)


def glossary_html() -> str:
    """The in-app Glossary panel: a table of every term, its meaning and its paper section."""
    from ui.templating import macro

    return macro("shell.html", "glossary")(GLOSSARY)
