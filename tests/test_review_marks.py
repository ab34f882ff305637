"""The marks of Browse's search (ui.browse_search.highlight) and Compare's word diff (ui.compare_diff): text only,
escaped first (as the templates escape), never inside a tag, an attribute, an entity or a script."""

from __future__ import annotations

from markupsafe import escape

from ui.browse_search import highlight, terms_pattern
from ui.compare_diff import word_diff


def test_highlight_marks_words_phrases_and_prefixes_in_text_only():
    html = (f'<div title="mirror here"><p>{escape("A mirror & <mirrors>; the red mirror")}</p>'
            "<script>var mirror = 1;</script><p>amp mirrored</p></div>")
    got = highlight(html, 'mirr* NOT amp "red mirror"')
    assert got.count("<mark>") == 4  # mirror, mirrors, "red mirror", mirrored; not the script, title or amp
    assert '<div title="mirror here">' in got and "<script>var mirror = 1;</script>" in got
    assert "&amp;" in got and "&lt;<mark>mirrors</mark>&gt;" in got
    assert "<mark>red mirror</mark>" in got and "amp <mark>mirrored</mark>" in got


def test_highlight_needs_a_word_and_keeps_word_edges():
    assert terms_pattern("NOT x") is None and terms_pattern("  ") is None
    assert highlight("<p>cart art</p>", "art") == "<p>cart <mark>art</mark></p>"
    assert highlight("<p>Art</p>", "ART") == "<p><mark>Art</mark></p>"


def test_word_diff_marks_only_the_words_that_differ_escaped():
    a, b = word_diff("the cat <b> sat", "the dog <b> sat down")
    assert a == 'the <del class="cc-diff-del">cat</del> &lt;b&gt; sat'
    assert b == 'the <ins class="cc-diff-ins">dog</ins> &lt;b&gt; sat <ins class="cc-diff-ins">down</ins>'
    assert word_diff("same words", "same words") == ("same words", "same words")
