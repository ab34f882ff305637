"""The metrics and words every family shares, declared once (core.catalogue); each family's catalogue includes
the ones it reports. Papers: 000 = FrameEvidence, 001 = SPUR, 002 = StemBind (shared/seeds/README.md)."""

from __future__ import annotations

from core.catalogue import Metric, Term

ACCURACY = Metric("accuracy", "Acc", counts="items", section="000 App. A", term="Accuracy",
                  help="Correct answers / items; an invalid or failed answer counts wrong.", name="accuracy")
MACRO_PRECISION = Metric("macro_precision", "P", counts="letters", section="000 App. A",
                         help="Mean over the gold letters of each letter's precision (from the predicted letters).")
MACRO_RECALL = Metric("macro_recall", "R", counts="letters", section="000 App. A",
                      help="Mean over the gold letters of each letter's recall; an invalid answer is a miss of its "
                           "gold letter.")
MACRO_F1 = Metric("macro_f1", "F1", counts="letters", section="000 App. A", term="Macro F1",
                  help="Mean over the answer letters of each letter's F1 (precision and recall of that letter).", name="macro F1")
GROUP_EXACT_MATCH = Metric("group_exact_match", "GEM", counts="groups", section="000 §3 Eq. 1", term="GEM",
                           help="Group Exact Match: groups whose every item is answered correctly / groups.", name="group exact match")

VANILLA = Metric("vanilla", "Vanilla", counts="items", section="000 §6.4", term="Vanilla",
                 help="Accuracy at rotation 0 (the options as published).")
CIRCULAR = Metric("circular", "Circular", counts="items", section="000 §6.4, App. A", term="Circular",
                  help="An item counts only when it is right under every option rotation (or every circular copy).")
CONSISTENCY = Metric("consistency", "Consistency", counts="items", section="000 §6.4, App. A", term="Consistency",
                     help="Items whose answers pick the same option under every rotation, right or wrong.")
MEAN_ROTATION = Metric("mean_rotation", "Mean rot.", counts="predictions", section="000 App. A",
                       help="Accuracy over every rotation's predictions.")
DROP = Metric("drop", "Drop", unit="diff", section="000 §6.4", term="Drop",
              help="Vanilla minus Circular: how much accuracy leans on the option order.")
ROTATION_METRICS = (VANILLA, CIRCULAR, CONSISTENCY, MEAN_ROTATION, DROP)

# `score --compare OTHER` (core.scoring): this run minus the other, each difference keyed by its metric's key
COMPARE = Metric("compare", "Paired differences", unit="diff", section="000 §6.2",
                 help="This run minus the other run on the groups both answered, each with its paired "
                      "cluster-bootstrap interval.")
COMPARE_OTHER = Metric("compare.other", "Other run", unit="text", help="The run the differences are taken against.")
COMPARE_CLUSTERING = Metric("compare.clustering", "Clusters", unit="text",
                            help="What the paired bootstrap resamples (groups unless a clustering is chosen).")
COMPARE_CLUSTERS = Metric("compare.clusters", "Clusters", unit="count", help="How many clusters were resampled.")
COMPARE_REASON = Metric("compare.reason", "Why not compared", unit="text",
                        help="Why the two runs share nothing to compare.")
DISAGREEMENT = Metric("compare.disagreement", "Disagreement", counts="items",
                      section="000 App. A (GPT cross-run stability)", term="Disagreement",
                      help="Items whose answer letters differ between two runs / items, with its cluster-bootstrap "
                           "interval.")
COMPARED = Metric("compare.*", "Δ", unit="diff", help="A paired metric's difference, this run minus the other.")
COMPARED_IN = Metric("compare.*.*", "Δ", unit="diff", help="A paired breakdown's difference, this run minus the other.")
# every family's; a family comparing by paired arrays adds COMPARE_REASON (runs that share no item), one comparing
# a breakdown (SPUR's tasks) COMPARED_IN
COMPARE_METRICS = (COMPARE, COMPARE_OTHER, COMPARE_CLUSTERING, COMPARE_CLUSTERS, DISAGREEMENT, COMPARED)

TERMS = (
    Term("000 §6.2", "A paper reference: paper 000 (FrameEvidence), section 6.2. 001 is SPUR, 002 is StemBind; "
                     "App. = appendix.", "shared/seeds/README.md"),
    Term("Turnover", "Items newly correct / newly incorrect from run A to run B, and the net change.", "000 §6.2"),
    Term("95% CI", "95% percentile cluster-bootstrap interval: whole groups (or the chosen clusters) resampled "
                   "20,000 times, seed 20261010; * marks one that excludes 0.", "000 App. A, App. D"),
    Term("(before; the other run)", "In Compare, run A is the baseline ('before'), the run the differences are "
                                    "taken against: B − A = score --run B --compare A.", "000 §6.2"),
    Term("Kappa", "Cohen's kappa: agreement beyond chance between two labelers; near 0 at high raw agreement when "
                  "one label dominates (see prevalence).", "002 App. C.3"),
    Term("Prevalence", "Share of labels 1 ('stage correct') over both labelers.", "002 App. C.3"),
)
