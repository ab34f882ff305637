"""Generic multiple-choice metrics, declared once (core.catalogue): `score` sets the top-level ones, the tables,
charts, exports and glossary read them all."""

from __future__ import annotations

from core.catalogue import Catalogue, Metric
from core.metrics.catalogue import (
    ACCURACY,
    CIRCULAR,
    COMPARE_METRICS,
    COMPARE_REASON,
    CONSISTENCY,
    DROP,
    GROUP_EXACT_MATCH,
    MACRO_F1,
    MACRO_PRECISION,
    MACRO_RECALL,
    MEAN_ROTATION,
    TERMS,
    VANILLA,
)

PER_KIND = Metric("per_kind", "Accuracy per kind", counts="items", section="SPEC §5 (Generic)",
                  help="Accuracy of each item kind (VLMEvalKit's category).")
KIND = Metric("per_kind.*", "Acc", counts="items", section="SPEC §5 (Generic)",
              help="Accuracy on one kind's items, with its group-clustered interval.")
LETTERS = Metric("letters", "Predicted vs gold letter", unit="count", section="000 App. A",
                 help="Predictions per gold letter and predicted letter (none = invalid or api_error).")
LETTER_ROW = Metric("letters.*", "Gold", unit="count", help="Predictions of one gold letter, by predicted letter.")
LETTER = Metric("letters.*.*", "Predictions", unit="count", help="Predictions of one gold letter answered so.")
PER_STRATUM = Metric("per_stratum", "Accuracy per stratum", counts="predictions",
                     help="Accuracy per value of each meta field with 2-16 values (no interval).")
STRATUM_FIELD = Metric("per_stratum.*", "Stratum", counts="predictions", help="Accuracy per value of one meta field.")
STRATUM = Metric("per_stratum.*.*", "Acc", counts="predictions", help="Accuracy on one stratum value's items.")
CIRCULAR_OVER = Metric("circular_over", "Circular over", unit="text",
                       help="What the circular metrics count over: option rotations of the run, or VLMEvalKit's "
                            "circular copies.")
CIRCULAR_BY_CATEGORY = Metric("circular_by_category", "Circular per category", counts="circular units",
                              section="VLMEvalKit circular table",
                              help="Circular accuracy per kind and per meta.l2-category.")
CIRCULAR_CATEGORY = Metric("circular_by_category.*.*", "Circular", counts="circular units",
                           help="Circular accuracy of one category's circular units.")
N_PREDICTIONS = Metric("n_predictions", "Predictions", unit="count", help="The run's predictions in the split.")

CATALOGUE = Catalogue(
    (ACCURACY, MACRO_PRECISION, MACRO_RECALL, MACRO_F1, PER_KIND, KIND, GROUP_EXACT_MATCH, LETTERS, LETTER_ROW, LETTER,
     PER_STRATUM, STRATUM_FIELD, STRATUM, VANILLA, CIRCULAR, CONSISTENCY, MEAN_ROTATION, DROP, CIRCULAR_OVER, CIRCULAR_BY_CATEGORY,
     CIRCULAR_CATEGORY, N_PREDICTIONS, *COMPARE_METRICS, COMPARE_REASON),
    TERMS)
