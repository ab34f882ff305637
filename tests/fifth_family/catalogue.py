"""The parity family's metrics: generic's, and its own, the accuracy gap between the odd and the even items."""

from __future__ import annotations

from core.catalogue import Catalogue, Metric
from core.families.generic import catalogue as generic

PARITY_GAP = Metric("parity_gap", "Parity gap", unit="diff", counts="", term="Parity gap",
                    help="Accuracy on the odd items minus accuracy on the even items, in points.")
ODD = generic.KIND.at("odd", label="Odd")
EVEN = generic.KIND.at("even", label="Even")

CATALOGUE = Catalogue((*generic.CATALOGUE.metrics, PARITY_GAP), generic.CATALOGUE.terms)
