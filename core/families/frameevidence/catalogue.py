"""FrameEvidence (000) metrics, declared once (core.catalogue): `score` sets the top-level ones, the tables,
charts, exports and glossary read them all."""

from __future__ import annotations

from core.catalogue import Catalogue, Metric, Term, Unit
from core.metrics.catalogue import (
    ACCURACY,
    CIRCULAR,
    COMPARE_METRICS,
    CONSISTENCY,
    DROP,
    MACRO_F1,
    MACRO_PRECISION,
    MACRO_RECALL,
    MEAN_ROTATION,
    TERMS,
    VANILLA,
)

SPLIT = Metric("split", "Split", unit="text", help="The split scored (null: every split).")
ITEMS = Metric("items", "Items", unit="count", help="The items of the split scored.")
COVERAGE = Metric("coverage", "Coverage", counts="items", section="000 App. A",
                  help="Items with a prediction / items of the split (an unanswered item counts wrong).")
FQ1_GEM = Metric("fq1_gem", "GEM", counts="FQ1 groups", section="000 §3 Eq. 1", term="FQ1-GEM",
                 help="FQ1 Group Exact Match: FQ1 triplets whose camera, object and scene frame answers are all "
                      "correct / FQ1 triplets.", name="FQ1 group exact match")
NTS = Metric("nts", "NTS", counts="FQ2 groups", section="000 §3", term="NTS",
             help="Necessity Transition Success: FQ2 groups right on the MSS and on the deletion (which must answer "
                  "'insufficient information') / FQ2 groups.")
DIS = Metric("dis", "DIS", counts="FQ2 groups", section="000 §3", term="DIS",
             help="Distractor Invariance Success: FQ2 groups right on the MSS and still right after an image is "
                  "added / FQ2 groups.")
# 000 Table 4's columns, in its order; the joint metrics' keys inside the blocks that repeat them
TABLE4 = (MACRO_PRECISION, MACRO_RECALL, MACRO_F1, ACCURACY, FQ1_GEM, NTS, DIS)
JOINT = (FQ1_GEM, NTS, DIS)
COMPARED = (ACCURACY, MACRO_F1, *JOINT)  # the paired differences of `score --compare` and the Compare tab

INDEPENDENCE = Metric("independence", "Independence reference", section="000 §3",
                      help="Each joint metric's value if its variants were answered independently: the product of "
                           "the variant accuracies.")
INDEPENDENT = {m.key: Metric(f"independence.{m.key}", f"{m.label} indep.", section="000 §3",
                             help=f"The product of the variant accuracies {m.label} needs.") for m in JOINT}
VARIANT_ACCURACY = Metric("variant_accuracy", "Accuracy per variant", counts="items", section="000 Table 4",
                          help="Accuracy of each variant (cam, obj, scene; mss, del, add).")
VARIANT = Metric("variant_accuracy.*", "Acc", counts="items", help="Accuracy on one variant's items.")
KIND_ACCURACY = Metric("kind_accuracy", "Accuracy per kind", counts="items", section="000 Table 4",
                       help="Accuracy of FQ1 and FQ2 items.")
KIND = Metric("kind_accuracy.*", "Acc", counts="items", help="Accuracy on one kind's items.")

REFERENCE = Metric("reference", "Exact references", section="000 App. A, §5",
                   help="Exact finite-test expectations under the gold supports: uniform random and always "
                        "insufficient.")
UNIFORM_RANDOM = Metric("reference.uniform_random", "Uniform random (exact)", section="000 App. A",
                        help="The exact expectation of a uniform random answer under the gold supports.")
UNIFORM = Metric("reference.uniform_random.*", "Uniform random", help="One metric's uniform-random expectation.")
ALWAYS_INSUFFICIENT = Metric("reference.always_insufficient", "Always insufficient (exact)", section="000 §5",
                             help="Every FQ2 item answered with its insufficient-information option.")
INSUFFICIENT = Metric("reference.always_insufficient.*", "Always insufficient",
                      help="One metric of the always-insufficient control.")
INSUFFICIENT_KIND = Metric("reference.always_insufficient.kind_accuracy.*", "Always insufficient",
                           help="One kind's accuracy under the always-insufficient control.")

PER_ROTATION = Metric("per_rotation", "Accuracy per rotation", counts="items", section="000 Tables 6 / 12",
                      help="Accuracy under each option rotation.")
ROTATION = Metric("per_rotation.*", "R", counts="items", help="Accuracy under one rotation.")
REPEATS = Metric("repeats", "Same-order repeat and rotation pairs", counts="items", section="000 Table 7",
                 help="Both correct, at least one correct, consistency, consistently wrong and changed answers of "
                      "each pair of predictions.")
_PAIR_FIELDS: tuple[tuple[str, str], ...] = (("both_correct", "Both correct"), ("at_least_one_correct", "≥1 correct"),
                                             ("consistency", "Consistency"),
                                             ("consistently_wrong", "Consistently wrong"), ("changed", "Changed"))
REPEAT_PAIR = {k: Metric(f"repeats.*.{k}", label, counts="items", section="000 Table 7",
                         help=f"{label}: the pair's items so answered / items.") for k, label in _PAIR_FIELDS}
REPEAT_DIFFERENCES = Metric("repeats.*.*.*", "Difference", unit="diff", section="000 Table 7",
                            help="A same-order pair's rate minus a rotation pair's.")
REPEAT_INTERVALS = Metric("repeat_intervals", "Table 13 intervals", section="000 Table 13, App. D.6",
                          help="The same-order repeat quantities with their 95% interval under each clustering.")
RI_CLUSTERINGS = Metric("repeat_intervals.clusterings", "Clusterings", unit="text", section="000 App. D.6",
                        help="Each clustering's label, fields and number of clusters.")
RI_PRIMARY = Metric("repeat_intervals.primary", "Primary run", unit="text",
                    help="The run whose answers the primary–repeat quantities compare with.")
RI_QUANTITY = Metric("repeat_intervals.quantities.*", "Quantity", section="000 Table 13",
                     help="One repeat quantity: its estimate and an interval per clustering.")
RI_ESTIMATE = Metric("repeat_intervals.quantities.*.estimate", "Estimate", section="000 Table 13",
                     help="The quantity's value over the split.")
RI_INTERVAL = Metric("repeat_intervals.quantities.*.*", "95% CI", unit="interval", section="000 Table 13",
                     help="The quantity's 95% percentile cluster-bootstrap interval under one clustering.")
_RI_SETTINGS: tuple[tuple[str, str, Unit, str], ...] = (
    ("repeat", "Repeat", "count", "The repeat index compared with repeat 0."),
    ("draws", "Draws", "count", "Bootstrap draws."), ("seed", "Seed", "count", "The bootstrap's seed."),
    ("level", "Level", "number", "The intervals' level."))
RI_SETTINGS = {k: Metric(f"repeat_intervals.{k}", label, unit=unit, help=help_) for k, label, unit, help_ in _RI_SETTINGS}

INSUFFICIENCY = Metric("insufficiency", "Insufficiency", counts="items", section="000 Table 8, §7",
                       help="Insufficient-information answers per FQ2 condition, and their precision and recall.")
_CONDITION = {"mss": "MSS", "del": "del", "add": "add"}
INSUFFICIENCY_CHOSEN = {v: Metric(f"insufficiency.counts.{v}", label, counts=f"{label} items", section="000 Table 8",
                                  help=f"{label} items answered with the insufficient-information option.")
                        for v, label in _CONDITION.items()}
INSUFFICIENCY_INVALID = {v: Metric(f"insufficiency.invalid.{v}", f"invalid {label}", unit="count",
                                   section="000 Table 8", help=f"{label} items answered invalidly.")
                         for v, label in _CONDITION.items()}
INSUFFICIENCY_PRECISION = Metric("insufficiency.precision", "Precision", counts="insufficiency answers",
                                 section="000 §7", help="Insufficiency answers on deletion items / every insufficiency "
                                                        "answer.")
INSUFFICIENCY_RECALL = Metric("insufficiency.recall", "Recall", counts="deletion items", section="000 §7",
                              help="Deletion items answered 'insufficient' / deletion items.")

STRATA = Metric("strata", "Strata", counts="items", section="000 §6.3",
                help="Accuracy and the joint metrics per image count, relation, scene, source and ordinal change.")
STRATUM = {k: Metric(f"strata.*.*.{k}", m.label, counts=m.counts, section="000 §6.3",
                     help=f"{m.label} within one stratum value.") for k, m in (("accuracy", ACCURACY),
                                                                            *((j.key, j) for j in JOINT))}
STRATUM_FIELD = Metric("strata.*", "Stratum", counts="items", help="One stratum field's values.")
STRATUM_VALUE = Metric("strata.*.*", "Stratum value", counts="items", help="One stratum value's metrics.")

TRANSITIONS = Metric("transitions", "Response transitions", counts="FQ2 groups", section="000 §6.1, Figure 5",
                     help="How MSS answers change under deletion and addition, and MSS-conditional success.")
INITIAL = Metric("transitions.initial", "Initial (MSS)", counts="FQ2 groups", section="000 Figure 5",
                 help="FQ2 groups answered right on the MSS / FQ2 groups.")
CONDITIONAL = Metric("transitions.conditional.*", "Cond.", counts="MSS-correct FQ2 groups", section="000 Figure 5",
                     help="Success on a condition among the MSS-correct groups.")
ANSWER_KEPT = Metric("transitions.answer_kept.*", "Kept", counts="MSS-correct FQ2 groups", section="000 §6.1",
                     help="MSS-correct groups keeping their answer under a condition.")
TRANSITION_TABLE = Metric("transitions.table.*.*.*", "Groups", unit="count", section="000 §6.1",
                          help="FQ2 groups whose MSS answer (row) became a condition's answer (column).")

PAIRWISE = Metric("pairwise_frames", "Pairwise frame analysis", counts="frame pairs", section="000 §6.2",
                  help="Pairs of frame questions of a triplet: repeated direction, changed, invalid, both correct.")
_PAIRWISE_FIELDS: tuple[tuple[str, str, Unit, str], ...] = (
    ("pairs", "Pairs", "count", "Frame pairs with different gold answers."),
    ("repeated", "Repeated dir.", "rate", "Pairs answered with the same direction although the gold differs."),
    ("changed", "Changed", "rate", "Pairs whose valid answers differ."),
    ("invalid", "Invalid", "rate", "Pairs with an invalid answer."),
    ("both_correct", "Both correct", "rate", "Pairs with both answers right."),
    ("triplets_correct", "Triplets correct", "rate", "FQ1 triplets with every frame right."),
    ("same_gold_pairs", "Same-gold pairs", "count", "Frame pairs whose gold answers agree (left out)."))
PAIRWISE_FIELD = {k: Metric(f"pairwise_frames.{k}", label, unit, counts="frame pairs" if unit == "rate" else "",
                            section="000 §6.2", help=help_) for k, label, unit, help_ in _PAIRWISE_FIELDS}
PAIRWISE_PAIR = Metric("pairwise_frames.per_pair.*.*", "Per frame pair", counts="frame pairs", section="000 §6.2",
                       help="The same, for one pair of frames (cam-obj, cam-scene, obj-scene).")

INPUT_MODES = Metric("input_modes", "Input controls", unit="diff", section="000 Table 5, §7",
                     help="All images minus the text-only and first-image runs of the same model, with the paired "
                          "decomposition of each NTS / DIS change.")
INPUT_MODE = Metric("input_modes.*", "Input control", unit="diff", help="One input control's comparison.")
PARTNER = Metric("input_modes.*.partner", "Partner", unit="text",
                 help="The text-only (or first-image) run of the same model, strategy and shots.")
DELTA = {m.key: Metric(f"input_modes.*.delta.{m.key}", f"Δ{m.label}", unit="diff", section="000 Table 5",
                       help=f"{m.label}: all images minus the partner.") for m in (ACCURACY, *JOINT)}
PARTNER_SCORES = Metric("input_modes.*.partner_scores.*", "Partner", help="The partner run's own rates.")
TURNOVER = Metric("input_modes.*.turnover", "Turnover", counts="items", section="000 §6.2",
                  help="Items newly correct / newly incorrect from the partner to this run.")
DECOMPOSITION = Metric("input_modes.*.decomposition.*", "Paired decomposition", counts="FQ2 groups", section="000 §7",
                       help="An NTS / DIS change split into shared MSS-correct groups and changed MSS coverage.")
_DECOMPOSITION_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("net", "Net", "Net successes gained."),
    ("shared_mss_correct.groups", "Shared groups", "Groups MSS-correct in both runs."),
    ("shared_mss_correct.gained", "Shared gained", "Successes gained among the shared MSS-correct groups."),
    ("shared_mss_correct.lost", "Shared lost", "Successes lost among the shared MSS-correct groups."),
    ("shared_mss_correct.net", "Shared net", "Net successes among the shared MSS-correct groups."),
    ("changed_coverage.mss_gained_groups", "MSS gained", "Groups MSS-correct only in this run."),
    ("changed_coverage.mss_lost_groups", "MSS lost", "Groups MSS-correct only in the partner."),
    ("changed_coverage.gained", "Coverage gained", "Successes gained through changed MSS coverage."),
    ("changed_coverage.lost", "Coverage lost", "Successes lost through changed MSS coverage."),
    ("changed_coverage.net", "Coverage net", "Net successes through changed MSS coverage."))
DECOMPOSITION_FIELD = {k: Metric(f"input_modes.*.decomposition.*.{k}", label, unit="count", section="000 §7", help=h)
                       for k, label, h in _DECOMPOSITION_FIELDS}
_DECOMPOSITION_RATES: tuple[tuple[str, str, Unit, str], ...] = (
    ("a", "Partner", "rate", "The partner's NTS / DIS."), ("b", "All images", "rate", "This run's NTS / DIS."),
    ("change", "Change", "diff", "This run's minus the partner's."))
DECOMPOSITION_RATES = {k: Metric(f"input_modes.*.decomposition.*.{k}", label, unit=unit,
                                 counts="FQ2 groups" if unit == "rate" else "", section="000 §7", help=h)
                       for k, label, unit, h in _DECOMPOSITION_RATES}

SEEDS = Metric("seeds", "Multi-seed", section="000 Table 11, Tables 6a / 6b",
               help="Mean and sample SD over runs that differ from this one only in seed.")
SEEDED = (ACCURACY, MACRO_F1, FQ1_GEM, NTS, DIS)  # 000 Table 11's columns
SEED_MEAN = Metric("seeds.*.mean", "Mean", unit="rate", section="000 Table 11", help="The mean over the seeds.")
SEED_SD = Metric("seeds.*.sd", "SD", unit="rate", section="000 Table 11", help="The sample SD over the seeds.")
SEED_VALUES = Metric("seeds.*.values", "Values", unit="number", help="Each seed's value.")
SEED_RUNS = Metric("seeds.runs", "Runs", unit="text", help="The runs averaged.")
SEED_SEEDS = Metric("seeds.seeds", "Seeds", unit="count", help="Their seeds.")

TERMS_FE = (
    Term("MSS", "Minimal sufficient set: the images that together, and no fewer, support the answer.", "000 §3"),
    Term("Scene clusters", "Bootstrap clusters of groups sharing a meta.scene value.", "000 §6.3, App. D.6"),
    Term("Union components", "Bootstrap clusters of groups linked by a shared image or a shared meta value.",
         "000 App. A, App. D.6"),
)

CATALOGUE = Catalogue(
    (SPLIT, ITEMS, COVERAGE, ACCURACY, MACRO_PRECISION, MACRO_RECALL, MACRO_F1, FQ1_GEM, NTS, DIS, INDEPENDENCE,
     *INDEPENDENT.values(), VARIANT_ACCURACY, VARIANT, KIND_ACCURACY, KIND, REFERENCE, UNIFORM_RANDOM, UNIFORM,
     ALWAYS_INSUFFICIENT, INSUFFICIENT, INSUFFICIENT_KIND, VANILLA, CIRCULAR, CONSISTENCY, MEAN_ROTATION, DROP,
     PER_ROTATION, ROTATION, REPEATS, *REPEAT_PAIR.values(), REPEAT_DIFFERENCES, REPEAT_INTERVALS, RI_CLUSTERINGS,
     RI_PRIMARY, RI_QUANTITY, RI_ESTIMATE, RI_INTERVAL, *RI_SETTINGS.values(), INSUFFICIENCY,
     *INSUFFICIENCY_CHOSEN.values(), *INSUFFICIENCY_INVALID.values(), INSUFFICIENCY_PRECISION, INSUFFICIENCY_RECALL,
     STRATA, STRATUM_FIELD, STRATUM_VALUE, *STRATUM.values(), TRANSITIONS, INITIAL, CONDITIONAL, ANSWER_KEPT,
     TRANSITION_TABLE, PAIRWISE, *PAIRWISE_FIELD.values(), PAIRWISE_PAIR, INPUT_MODES, INPUT_MODE, PARTNER,
     *DELTA.values(), PARTNER_SCORES, TURNOVER, DECOMPOSITION, *DECOMPOSITION_FIELD.values(), *DECOMPOSITION_RATES.values(), SEEDS, SEED_MEAN,
     SEED_SD, SEED_VALUES, SEED_RUNS, SEED_SEEDS, *COMPARE_METRICS),
    (*TERMS, *TERMS_FE))
