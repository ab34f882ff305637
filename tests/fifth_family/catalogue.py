"""The parity family's metrics: generic's, and its own, the accuracy gap between the odd and the even items."""

from __future__ import annotations

from core.catalogue import Catalogue, Metric
from core.families.generic import catalogue as generic

# no glossary term: the glossary (ui.glossary) is read once per process, from the families registered by then
PARITY_GAP = Metric("parity_gap", "Parity gap", unit="diff",
                    help="Accuracy on the odd items minus accuracy on the even items, in points.")
ODD = generic.KIND.at("odd", label="Odd")
EVEN = generic.KIND.at("even", label="Even")

CATALOGUE = Catalogue((*generic.CATALOGUE.metrics, PARITY_GAP), generic.CATALOGUE.terms)
