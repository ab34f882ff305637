"""StemBind (002) metrics, declared once (core.catalogue): `score` sets the top-level ones, the tables, charts,
exports and glossary read them all."""

from __future__ import annotations

from core.catalogue import Catalogue, Metric, Term, Unit
from core.families.stembind.vocab import DECOMPOSITION
from core.metrics.catalogue import COMPARE_METRICS, COMPARE_REASON, TERMS

P_ACCURACY = Metric("p_accuracy", "P", counts="P items", section="002 §4.2", term="P / R / F",
                    help="Perception, Rule and Full-task accuracy: an item is right when every prediction of it is.", name="P accuracy")
R_ACCURACY = Metric("r_accuracy", "R", counts="R items", section="002 §4.2", help="Rule-probe accuracy.", name="R accuracy")
F_ACCURACY = Metric("f_accuracy", "F", counts="F items", section="002 §4.2", help="Full-task accuracy.", name="F accuracy")
RF_GAP = Metric("rf_gap", "R−F gap", unit="diff", section="002 §4.3", term="R–F gap",
                help="Rule accuracy minus full-item accuracy (the 'R–F chasm').")
KIND_ACCURACY = {"P": P_ACCURACY, "R": R_ACCURACY, "F": F_ACCURACY}

BY_OPERATION = Metric("by_operation", "Per operation", counts="items", section="002 §4.2, Figure 3",
                      help="P / R / F accuracy and the R−F gap of each of the nine operations.")
BY_FAMILY = Metric("by_family", "Per RI / VP family", counts="items", section="002 §4.2",
                   help="P / R / F accuracy and the R−F gap of the Rule-Induction and Visual-Processing families.")
_CELLS: tuple[tuple[str, str, Unit], ...] = (("p", "P", "rate"), ("r", "R", "rate"), ("f", "F", "rate"),
                                            ("rf_gap", "R−F gap", "diff"))
OPERATION = {k: Metric(f"by_operation.*.{k}", label, unit, counts="items" if unit == "rate" else "",
                       section="002 §4.2", help=f"{label} of one operation's items.") for k, label, unit in _CELLS}
FAMILY = {k: Metric(f"by_family.*.{k}", label, unit, counts="items" if unit == "rate" else "",
                    section="002 §4.2", help=f"{label} of one family's items.") for k, label, unit in _CELLS}

DECOMPOSITION_BLOCK = Metric("decomposition", "Stem failure decomposition", counts="complete stems",
                             section="002 §4.3",
                             help="Solved: F correct; can't bind: a P and R correct, F wrong; can't reason: a P "
                                  "correct, R wrong; can't see: no P correct.")
_CATEGORY_HELP = {"solved": "F correct.", "cant_bind": "A P probe and R correct, F wrong.",
                  "cant_reason": "A P probe correct, R wrong.", "cant_see": "No P probe correct."}
CATEGORY = {cat: Metric(f"decomposition.{cat}", cat.replace("_", " "), counts="complete stems", section="002 §4.3",
                        help=_CATEGORY_HELP[cat]) for cat in DECOMPOSITION}
N_STEMS = Metric("decomposition.n_stems", "Stems", unit="count", help="Complete stems (a P, the R and the F answered).")
N_INCOMPLETE = Metric("decomposition.n_incomplete", "Incomplete", unit="count",
                      help="Stems missing an answered P, R or F item.")
R_OK_F_WRONG = Metric("decomposition.r_correct_given_f_wrong", "R ok | F wrong", counts="F-wrong stems",
                      section="002 §4.3 (ii)", help="Among F-wrong stems, the share with R correct.")
BINDING_GAP = Metric("binding_gap", "Binding Gap", counts="stems with every P and R correct",
                     section="002 §4.3 (iii), App. D.2", term="Binding gap",
                     help="Stems with every perception probe and the rule probe right but the full item wrong / "
                          "such stems.", name="binding gap", lower_is_better=True)
BINDING_GAP_N = Metric("binding_gap.n", "Denominator (P all & R)", unit="count", section="002 §4.3 (iii)",
                       help="Stems with every P probe and R correct.")
F_GIVEN_PR = Metric("f_given_pr", "F | P all, R", counts="stems with every P and R correct", section="002 §4.3 (iii)",
                    help="F accuracy on the stems whose every P probe and R are correct (1 − Binding Gap).")
STEM_COHERENT = Metric("stem_coherent", "StemCoherent", counts="complete stems", section="002 §3.3, App. D.5",
                       term="StemCoherent", help="Stems with every P, R and F probe right / complete stems.")
LUCKY_GUESS = Metric("lucky_guess", "Lucky guess", counts="stems with F correct", section="002 §4.3",
                     help="F-correct stems whose P probes or R were not all right.")

VG = Metric("vg", "VG", unit="diff", section="002 §3.3, App. D.5", term="VG",
            help="Visual gain: full-image minus text-only accuracy on the items both runs answered.")
VG_AT = {k: Metric(f"vg.{k}", label, unit="diff", counts="items" if k != "partner" else "", section="002 §3.3",
                   help=f"Visual gain on {what}.")
         for k, label, what in (("overall", "VG", "every item"), ("P", "VG@P", "the P items"),
                                ("R", "VG@R", "the R items"), ("F", "VG@F", "the F items"))}
VG_PARTNER = Metric("vg.partner", "Paired with", unit="text", help="The text-only run of the same model and strategy.")
THINK_GAIN = Metric("think_gain", "ThinkGain", unit="diff", section="002 §4.5, App. D.4", term="ThinkGain",
                    help="Accuracy with thinking mode minus without, on items both runs answered.")
THINK_AT = {f"at_{k}": Metric(f"think_gain.at_{k}", f"ThinkGain@{k}", unit="diff", counts=f"{k} items",
                              section="002 §4.5", help=f"Thinking minus direct accuracy on the {k} items.")
            for k in ("P", "R", "F")}
THINK_AT_NO_CAP = {f"at_{k}_no_cap": Metric(f"think_gain.at_{k}_no_cap", f"@{k} w/o cap-hit", unit="diff",
                                            counts=f"{k} items without a cap hit", section="002 App. D.4",
                                            help=f"ThinkGain@{k} without the items whose output reached max_tokens "
                                                 "in either run.")
                   for k in ("P", "R", "F")}
THINK_CAP_HIT = Metric("think_gain.n_cap_hit", "Cap-hit items", counts="items both runs answered",
                       section="002 App. D.4", help="Items whose output reached max_tokens in either run.")
THINK_DIRECT = Metric("think_gain.direct", "Direct run", unit="text", help="The direct run of the pair.")
THINK_THINKING = Metric("think_gain.thinking", "Thinking run", unit="text", help="The thinking run of the pair.")

SSA_TEXT_REMOVED = Metric("ssa_text_removed", "Stage text cut", counts="F items", section="002 App. C.5",
                          help="F items whose injected stage text lost something to the leakage guard.")
SSA = Metric("ssa", "SSA", section="002 §3.3, §4.4, App. C.5", term="SSA",
             help="Stage-wise Stimulus Augmentation: H1..H4 inject verified stages S1..S4 before the question; H0 "
                  "none; the irrelevant-S1 control another stem's S1.")
SSA_N_ITEMS = Metric("ssa.n_items", "F items", unit="count", help="The F items every SSA level answered.")
SSA_RUNS = Metric("ssa.runs", "Runs", unit="text", help="The run of each SSA level.")
SSA_ACCURACY = Metric("ssa.accuracy.*", "Acc", counts="F items", section="002 §4.4, Table 22",
                      help="Accuracy of one SSA level on the F items every level answered.")
SSA_RAW_DELTA = Metric("ssa.raw_deltas.*", "Raw Δ", unit="diff", section="002 §4.4",
                       help="A level's accuracy minus the level before it.")
SSA_VS_H0 = Metric("ssa.vs_h0.*", "Δ vs H0", unit="diff", section="002 §4.4", help="A level's accuracy minus H0's.")
SSA_ISOTONIC = Metric("ssa.isotonic.*", "Isotonic", unit="number", section="002 §4.4",
                      help="Accuracy of the per-item monotone envelopes at one level (the chart's step line).")
SSA_ISOTONIC_ACCURACY = Metric("ssa.isotonic_accuracy.*", "Isotonic acc", counts="F items", section="002 §4.4",
                               help="F items solved at this or an earlier level / F items.")
SSA_ISOTONIC_GAIN = Metric("ssa.isotonic_gains.*", "Isotonic gain", counts="F items", section="002 §4.4",
                           help="F items first solved at a step / F items.")
SSA_FIT = Metric("ssa.fit_isotonic.*", "Isotonic fit", unit="number", section="002 §4.4",
                 help="The isotonic regression of the raw accuracies at one level.")
SSA_FIT_GAIN = Metric("ssa.fit_isotonic_gains.*", "Isotonic-fit gain", unit="diff", section="002 §4.4",
                      help="The isotonic fit's rise at a step.")
SSA_LARGEST_RAW = Metric("ssa.largest_raw_jump", "Largest raw jump", unit="text", section="002 §4.4",
                         help="The step with the largest raw rise.")
SSA_LARGEST_ISOTONIC = Metric("ssa.largest_isotonic_jump", "Largest isotonic jump", unit="text", section="002 §4.4",
                              help="The step where most F items are first solved.")
SSA_LARGEST_FIT = Metric("ssa.largest_fit_isotonic_jump", "Largest isotonic-fit jump", unit="text",
                         section="002 §4.4", help="The step with the isotonic fit's largest rise.")
SSA_IRRELEVANT = Metric("ssa.irrelevant_minus_h0", "Irrelevant − H0", unit="diff", section="002 App. C.5",
                        help="The irrelevant-S1 control's accuracy minus H0's.")
SSA_TEXT_CUT = Metric("ssa.text_removed", "Items with stage text cut", counts="F items", section="002 App. C.5",
                      help="Per level, the F items whose stage text the leakage guard cut.")

L2 = Metric("l2", "L2 StepAcc", counts="judged traces", section="002 §3.3, App. C.3", term="StepAcc",
            help="Traces the judge marks right at a stage (S1 Encode .. S4 Apply) / judged traces.")
L2_TRACES = Metric("l2.n_traces", "Traces", unit="count", help="Judged F traces.")
STEP_ACC = Metric("l2.step_acc.*", "StepAcc", counts="traces with a known flag", section="002 §3.3",
                  help="Traces the judge marks right at one stage / traces with a known flag at it.")
FIRST_FAILURE = Metric("l2.first_failure.*", "First fail", counts="judged traces", section="002 App. C.3",
                       help="Traces whose first failing stage is this one (none: no failing stage).")
FIRST_FAILURE_F_WRONG = Metric("l2.first_failure_f_wrong.*", "First fail (F wrong)", counts="F-wrong judged traces",
                               section="002 App. C.3", help="The same, over the traces of wrongly answered F items.")
INCONSISTENT = Metric("l2.inconsistent", "Inconsistent", counts="judged traces", section="002 App. C.3",
                      help="Traces whose flags mark a stage right after a failed one.")
FF_DISAGREEMENTS = Metric("l2.first_failure_disagreements", "First-failure disagreements", unit="count",
                          help="Judgements whose stated first failure differs from the one their flags give.")
L3_ATTR_TAG = Metric("l3_attr_tag", "L3 AttrTag", unit="count", section="002 §3.3",
                     help="First failure by perception load: judged traces per load and first failing stage.")
ATTR_TAG = Metric("l3_attr_tag.*.*", "Traces", unit="count", help="Judged traces of one load failing first at a stage.")

TOKENS = Metric("tokens", "Output tokens", unit="number", section="002 Table 24",
                help="Output-token statistics of the run's predictions.")
TOKENS_N = Metric("tokens.n", "Traces", unit="count", help="Predictions with a token count.")
TOKENS_MEAN = Metric("tokens.mean", "Mean", unit="number", section="002 Table 24", help="Mean output tokens.")
TOKENS_P95 = Metric("tokens.p95", "p95", unit="number", section="002 Table 24",
                    help="95th percentile of output tokens (linear interpolation).")
TOKENS_CAP = Metric("tokens.max_tokens", "Cap", unit="count", help="The run's max_tokens.")
TOKENS_CAP_HIT = Metric("tokens.cap_hit", "Cap-hit rate", counts="predictions with a token count",
                        section="002 Table 24", help="Predictions whose output reached max_tokens.")

ERROR_AUDIT = Metric("error_audit", "Error audit", counts="labelled F traces", section="002 App. D.4, Table 25",
                     help="First decisive error per 100 F items, overall and by trace-length tercile.")
AUDIT_N = Metric("error_audit.n_items", "F items", unit="count", help="Labelled F traces.")
AUDIT_PER_100 = Metric("error_audit.per_100.*", "Per 100", unit="number", section="002 Table 25",
                       help="Traces of a category per 100 labelled F traces.")
AUDIT_RATE = Metric("error_audit.rates.*", "Share", counts="labelled F traces", help="Traces of a category.")
AUDIT_NO_ERROR = Metric("error_audit.no_error", "No error", counts="labelled F traces",
                        help="Labelled traces without a decisive error.")
AUDIT_BY_TERCILE = Metric("error_audit.by_tercile", "By trace-length tercile", counts="labelled F traces",
                          section="002 Table 25", help="The audit within each third of the traces by length.")

CATALOGUE = Catalogue(
    (P_ACCURACY, R_ACCURACY, F_ACCURACY, RF_GAP, BY_OPERATION, *OPERATION.values(), BY_FAMILY, *FAMILY.values(),
     DECOMPOSITION_BLOCK, *CATEGORY.values(), N_STEMS, N_INCOMPLETE, R_OK_F_WRONG, BINDING_GAP, BINDING_GAP_N,
     F_GIVEN_PR, STEM_COHERENT, LUCKY_GUESS, VG, *VG_AT.values(), VG_PARTNER, THINK_GAIN, *THINK_AT.values(),
     *THINK_AT_NO_CAP.values(), THINK_CAP_HIT, THINK_DIRECT, THINK_THINKING, SSA_TEXT_REMOVED, SSA, SSA_N_ITEMS,
     SSA_RUNS, SSA_ACCURACY, SSA_RAW_DELTA, SSA_VS_H0, SSA_ISOTONIC, SSA_ISOTONIC_ACCURACY, SSA_ISOTONIC_GAIN, SSA_FIT,
     SSA_FIT_GAIN, SSA_LARGEST_RAW, SSA_LARGEST_ISOTONIC, SSA_LARGEST_FIT, SSA_IRRELEVANT, SSA_TEXT_CUT, L2, L2_TRACES,
     STEP_ACC, FIRST_FAILURE, FIRST_FAILURE_F_WRONG, INCONSISTENT, FF_DISAGREEMENTS, L3_ATTR_TAG, ATTR_TAG, TOKENS,
     TOKENS_N, TOKENS_MEAN, TOKENS_P95, TOKENS_CAP, TOKENS_CAP_HIT, ERROR_AUDIT, AUDIT_N, AUDIT_PER_100, AUDIT_RATE,
     AUDIT_NO_ERROR, AUDIT_BY_TERCILE, *COMPARE_METRICS, COMPARE_REASON),
    (*TERMS,
     Term("Perception load", "An item's meta.perception_load: how much the image must be read (L3 AttrTag rows).",
          "002 §3.3")))
