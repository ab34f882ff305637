"""The glossary: every abbreviation and paper reference a screen shows, with the paper and section it comes from.

One place for the words (a family's own words in its view module's GLOSSARY) (docs/GLOSSARY.md lists the same entries; tests/ui/test_glossary.py checks that it
does): the in-app Glossary panel (`glossary_html`) and the hover text of table headers (`header_tip`) read it.
Papers: 000 = FrameEvidence, 001 = SPUR, 002 = StemBind (shared/seeds/README.md).
"""

from __future__ import annotations

import re

from core import families
from ui.views import view_module

# term -> (what it means, where it is defined); a family's own terms (SPUR's task codes) come from its view
# module's GLOSSARY (ui/views/<family>.py), added below
_SHARED: dict[str, tuple[str, str]] = {
    "000 §6.2": ("A paper reference: paper 000 (FrameEvidence), section 6.2. 001 is SPUR, 002 is StemBind; "
                 "App. = appendix.", "shared/seeds/README.md"),
    "Accuracy": ("Correct answers / items; an invalid or failed answer counts wrong.", "000 App. A"),
    "Macro F1": ("Mean over the answer letters of each letter's F1 (precision and recall of that letter).",
                 "000 App. A"),
    "FQ1-GEM": ("FQ1 Group Exact Match: FQ1 triplets whose camera, object and scene frame answers are all "
                "correct / FQ1 triplets.", "000 §3 Eq. 1"),
    "GEM": ("Group Exact Match: groups whose every item is answered correctly / groups.", "000 §3 Eq. 1"),
    "NTS": ("Necessity Transition Success: FQ2 groups right on the MSS and on the deletion (which must answer "
            "'insufficient information') / FQ2 groups.", "000 §3"),
    "DIS": ("Distractor Invariance Success: FQ2 groups right on the MSS and still right after an image is "
            "added / FQ2 groups.", "000 §3"),
    "MSS": ("Minimal sufficient set: the images that together, and no fewer, support the answer.", "000 §3"),
    "Turnover": ("Items newly correct / newly incorrect from run A to run B, and the net change.", "000 §6.2"),
    "Circular": ("An item counts only when it is right under every option rotation (or every circular copy).",
                 "000 §6.4, App. A"),
    "Consistency": ("Items whose answers pick the same option under every rotation, right or wrong.",
                    "000 §6.4, App. A"),
    "Vanilla": ("Accuracy at rotation 0 (the options as published).", "000 §6.4"),
    "Drop": ("Vanilla minus Circular: how much accuracy leans on the option order.", "000 §6.4"),
    "Disagreement": ("Items whose answer letters differ between two runs / items, with its cluster-bootstrap "
                     "interval.", "000 App. A (GPT cross-run stability)"),
    "95% CI": ("95% percentile cluster-bootstrap interval: whole groups (or the chosen clusters) resampled "
               "20,000 times, seed 20261010; * marks one that excludes 0.", "000 App. A, App. D"),
    "Scene clusters": ("Bootstrap clusters of groups sharing a meta.scene value.", "000 §6.3, App. D.6"),
    "Union components": ("Bootstrap clusters of groups linked by a shared image or a shared meta value.",
                         "000 App. A, App. D.6"),
    "(before; the other run)": ("In Compare, run A is the baseline ('before'), the run the differences are "
                                "taken against: B − A = score --run B --compare A.", "000 §6.2"),
    "R–F gap": ("Rule accuracy minus full-item accuracy (the 'R–F chasm').", "002 §4.3"),
    "Binding gap": ("Stems with every perception probe and the rule probe right but the full item wrong / such "
                    "stems.", "002 §4.3, App. D.2"),
    "StemCoherent": ("Stems with every P, R and F probe right / complete stems.", "002 §3.3, App. D.5"),
    "ThinkGain": ("Accuracy with thinking mode minus without, on items both runs answered.", "002 §4.5, App. D.4"),
    "StepAcc": ("Traces the judge marks right at a stage (S1 Encode .. S4 Apply) / judged traces.", "002 §3.3"),
    "SSA": ("Stage-wise Stimulus Augmentation: H1..H4 inject verified stages S1..S4 before the question; H0 "
            "none; the irrelevant-S1 control another stem's S1.", "002 §3.3, App. C.5"),
    "Kappa": ("Cohen's kappa: agreement beyond chance between two labelers; near 0 at high raw agreement when "
              "one label dominates (see prevalence).", "002 App. C.3"),
    "Prevalence": ("Share of labels 1 ('stage correct') over both labelers.", "002 App. C.3"),
}


def _family_terms() -> dict[str, tuple[str, str]]:
    """Every family view's own glossary entries (`GLOSSARY` in its view module), in the registry's order."""
    out: dict[str, tuple[str, str]] = {}
    for name in families.names():
        out.update(getattr(view_module(name), "GLOSSARY", {}))
    return out


GLOSSARY: dict[str, tuple[str, str]] = {**_SHARED, **_family_terms()}

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
