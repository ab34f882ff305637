"""SPUR (001) metrics, declared once (core.catalogue): `score` sets the top-level ones, the tables, charts,
exports and glossary read them all."""

from __future__ import annotations

from core.catalogue import Catalogue, Metric, Term, Unit
from core.metrics.catalogue import COMPARE_METRICS, COMPARE_REASON, COMPARED_IN, TERMS

TASKS = Metric("tasks", "Accuracy per task", counts="answered items", section="001 §2.1, Table 3",
               help="Accuracy of each of the seven tasks.")
TASK = Metric("tasks.*", "Task", counts="answered items", section="001 Table 3",
              help="Accuracy on one task's items (an item is right when every prediction of it is).", name="{} task")
PERCEPTION = Metric("perception", "Perception", counts="answered items", section="001 §2.1, Table 3",
                    help="Micro average over the perception tasks NP, MP, IL.", name="perception")
UNDERSTANDING = Metric("understanding", "Understanding", counts="answered items", section="001 §2.1, Table 3",
                       help="Micro average over the understanding tasks TA, HI.", name="understanding")
REASONING = Metric("reasoning", "Reasoning", counts="answered items", section="001 §2.1, Table 3",
                   help="Micro average over the reasoning tasks Qual, Quant.", name="reasoning")
OVERALL = Metric("overall", "Overall", counts="answered items", section="001 Table 3",
                 help="Accuracy over every answered item.", name="overall")
STAGE_METRICS = {"perception": PERCEPTION, "understanding": UNDERSTANDING, "reasoning": REASONING}

BY_STAINING = Metric("by_staining", "By staining", counts="answered items", section="001 Figure 5",
                     help="Perception accuracy per staining category.")
STAINING_ACCURACY = Metric("by_staining.*.accuracy", "Accuracy", counts="answered items", section="001 Figure 5",
                           help="Perception accuracy on the figures of one staining category.")
STAINING_DEVIATION = Metric("by_staining.*.deviation", "Deviation from perception micro", unit="diff",
                            section="001 Figure 5",
                            help="A staining category's perception accuracy minus the perception micro average.")
BY_N_RELATIONS = Metric("by_n_relations", "By number of relations", counts="answered items", section="001 Figure 5",
                        help="Understanding accuracy by the number of relations a question involves.")
RELATION_SCOPE = Metric("by_n_relations.*", "Scope", counts="answered items", section="001 Figure 5",
                        help="One scope's accuracy by the number of relations (understanding, TA, HI).")
RELATIONS = Metric("by_n_relations.*.*", "Accuracy", counts="answered items", section="001 Figure 5",
                   help="Accuracy of a scope's items with a given number of relations.")
BY_PARADIGM = Metric("by_paradigm", "By paradigm", counts="answered items", section="001 Figure 5",
                     help="Reasoning accuracy per experimental paradigm.")
PARADIGM = Metric("by_paradigm.*", "Accuracy", counts="answered items", section="001 Figure 5",
                  help="Reasoning accuracy on one paradigm's figures.")

REASONING_BY_PERCEPTION = Metric("reasoning_by_perception", "Reasoning by perception", counts="reasoning items",
                                 section="001 Table 5",
                                 help="Reasoning accuracy split by whether the figure's perception items were right.")
RBP_CORRECT = Metric("reasoning_by_perception.perception_correct", "Perception correct", counts="reasoning items",
                     section="001 Table 5",
                     help="Reasoning accuracy on figures whose every perception item was answered right.")
RBP_INCORRECT = Metric("reasoning_by_perception.perception_incorrect", "Perception wrong", counts="reasoning items",
                       section="001 Table 5",
                       help="Reasoning accuracy on figures with a wrongly answered perception item.")
RBP_EXCLUDED = Metric("reasoning_by_perception.n_excluded", "Excluded", unit="count", section="001 Table 5",
                      help="Reasoning items on figures without answered perception items.")
VS_DIRECT = Metric("reasoning_by_perception.vs_direct", "Against the direct run", unit="diff", section="001 Table 5",
                   help="The split's change against the direct run of the same model.")
VS_DIRECT_RUN = Metric("reasoning_by_perception.vs_direct.direct", "Direct run", unit="text",
                       help="The direct run of the same model the MCoT run is compared with.")
VS_DIRECT_CORRECT = Metric("reasoning_by_perception.vs_direct.perception_correct", "Δ vs direct (correct)",
                           unit="diff", section="001 Table 5",
                           help="Perception-correct reasoning accuracy minus the direct run's.")
VS_DIRECT_INCORRECT = Metric("reasoning_by_perception.vs_direct.perception_incorrect", "Δ vs direct (wrong)",
                             unit="diff", section="001 Table 5",
                             help="Perception-wrong reasoning accuracy minus the direct run's.")

SHORTCUT = Metric("shortcut", "Text-only shortcut filter", counts="items tried", section="001 §2.3",
                  help="Items a text-only model answers right in at least half of its randomized trials.")
SHORTCUT_MODELS = Metric("shortcut.models", "Text-only models", unit="text", section="001 §2.3",
                         help="The models with text-only runs of the benchmark.")
SHORTCUT_BY_MODEL = Metric("shortcut.by_model.*", "Filter model", counts="items tried", section="001 §2.3",
                           help="One text-only model's filter.")
# the fields of a filter (one model's, under by_model.*, or the pooled head's at the top of the block)
_FILTER_FIELDS: tuple[tuple[str, str, Unit, str], ...] = (("model", "Filter model", "text", "The text-only model (or the pool) the filter counts."),
                  ("pooled", "Pooled", "text", "Whether the row pools every text-only model (labelled so)."),
                  ("flagged", "Flagged items", "rate", "Flagged items / items the model tried."),
                  ("k", "Rule", "text", "Correct trials that flag an item (half of the trials by default)."),
                  ("trials.min", "Fewest trials", "count", "The fewest text-only trials of an item."),
                  ("trials.max", "Most trials", "count", "The most text-only trials of an item."),
                  ("runs", "Text-only runs", "text", "The text-only runs the filter counts."),
                  ("flagged_items", "Flagged item ids", "text", "The flagged items."))
SHORTCUT_FIELDS = {name: Metric(f"shortcut.{name}", label, unit, section="001 §2.3", help=help_)
                   for name, label, unit, help_ in _FILTER_FIELDS}
MODEL_FIELDS = {name: Metric(f"shortcut.by_model.*.{name}", label, unit, section="001 §2.3", help=help_)
                for name, label, unit, help_ in _FILTER_FIELDS}

TASK_TERMS = (
    Term("NP", "SPUR Numerical Perception (perception stage).", "001 §2.1"),
    Term("MP", "SPUR Morphological Perception (perception stage).", "001 §2.1"),
    Term("IL", "SPUR Information Localization: panels mapped to their conditions (perception stage).", "001 §2.1"),
    Term("TA", "SPUR Trend Analysis across isomorphic panels (understanding stage).", "001 §2.1"),
    Term("HI", "SPUR Heterogeneous Integration across diverse panels (understanding stage).", "001 §2.1"),
    Term("Qual", "SPUR Qualitative Reasoning (reasoning stage).", "001 §2.1"),
    Term("Quant", "SPUR Quantitative Reasoning (reasoning stage).", "001 §2.1"),
)

CATALOGUE = Catalogue(
    (TASKS, TASK, PERCEPTION, UNDERSTANDING, REASONING, OVERALL, BY_STAINING, STAINING_ACCURACY, STAINING_DEVIATION,
     BY_N_RELATIONS, RELATION_SCOPE, RELATIONS, BY_PARADIGM, PARADIGM, REASONING_BY_PERCEPTION, RBP_CORRECT, RBP_INCORRECT,
     RBP_EXCLUDED, VS_DIRECT, VS_DIRECT_RUN, VS_DIRECT_CORRECT, VS_DIRECT_INCORRECT, SHORTCUT, SHORTCUT_MODELS,
     SHORTCUT_BY_MODEL, *SHORTCUT_FIELDS.values(), *MODEL_FIELDS.values(), *COMPARE_METRICS, COMPARE_REASON, COMPARED_IN),
    (*TERMS, *TASK_TERMS))
