"""The glossary (issue 25 point 7): every term in docs/GLOSSARY.md, header tooltips name the paper section."""

from __future__ import annotations

from pathlib import Path

import pytest

from ui.glossary import GLOSSARY, glossary_html, header_tip

DOC = (Path(__file__).resolve().parents[2] / "docs" / "GLOSSARY.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("term", sorted(GLOSSARY))
def test_every_term_is_in_the_docs_and_the_panel(term):
    what, where = GLOSSARY[term]
    assert f"| {term} | {what.replace('|', '/')} | {where} |" in DOC
    assert where and any(p in where for p in ("000", "001", "002", "README"))


# (a header as a screen shows it, the paper section its tooltip must name)
HEADERS = [
    ("NTS", "000 §3"), ("DIS", "000 §3"), ("FQ1-GEM", "000 §3 Eq. 1"), ("FQ1 group exact match", "000 §3 Eq. 1"),
    ("group exact match", "000 §3 Eq. 1"), ("Item turnover (000 §6.2)", "section 6.2"),
    ("Run A (before; the other run)", "000 §6.2"), ("95% CI (paired)", "000 App. A"), ("binding gap", "002 §4.3"),
    ("Circular", "000 §6.4"), ("Quant", "001 §2.1"),
]


@pytest.mark.parametrize(("header", "section"), HEADERS)
def test_header_tooltips_name_the_paper_section(header, section):
    assert section in header_tip(header)


def test_plain_headers_have_no_tooltip_and_the_panel_lists_every_term():
    assert header_tip("run") == "" and header_tip("model") == ""
    assert header_tip("FQ1-GEM").count("Group Exact Match") == 1  # FQ1-GEM, not also GEM
    panel = glossary_html()
    assert all(f"<th>{t.replace('&', '&amp;')}</th>" in panel for t in GLOSSARY)


def test_the_page_is_the_catalogues_table():
    """docs/GLOSSARY.md's table is the one scripts/glossary.py writes from the catalogues: no entry more or less."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("glossary_script", Path(__file__).resolve().parents[2] / "scripts"
                                                  / "glossary.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.table().rstrip("\n") in DOC
