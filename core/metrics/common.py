"""Metrics shared by the families: pure pandas / numpy over the frames of docs/ARCHITECTURE.md.

Every rate is a core.schema.Rate: k / n where defined, a value without k / n for averages and differences,
or a reason instead of a value when it cannot be computed (never a silent 0).

Paper references are to 000 (FrameEvidence): App. A "Decoding and invalid answers" (macro P/R/F1),
"Random and human reference rows" (exact uniform reference), "Circular metrics" (Eq. 2, Table 12),
§6.4 and Table 7 (same-order repeat and rotation pairs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from core import stats
from core.schema import Rate

JOIN_ITEM_COLUMNS = ("group_id", "kind", "variant", "split", "letters", "options", "n_images", "meta")
F = TypeVar("F", bound=Callable[..., Any])


# --------------------------------------------------------------------------- shared work across runs


def _memo_key(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, tuple):
        return tuple(_memo_key(v) for v in value)
    return ("id", id(value))


def memoized(fn: F, item_level: bool = False) -> F:
    """Compute `fn` once per set of arguments within the active core.stats.ScoringContext (outside one it
    runs as usual).

    Scoring every run of a benchmark asks for the same intermediate results again and again (a partner run's
    item outcomes, its joined frame, its groups); the context's memo keeps them. Arguments are matched by
    identity for frames and runs and by value otherwise, positional and keyword arguments apart (callers pass
    them one way), and are held as long as the memo holds the result, so that an identity is never reused.
    Callers must treat memoized results as read-only (they are shared).
    """
    name = (fn.__module__, fn.__qualname__, item_level)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        context = stats.current_context()
        if context is None:
            return fn(*args, **kw)
        memo = context.memo
        key = (*name, tuple(_memo_key(v) for v in args), tuple((k, _memo_key(v)) for k, v in sorted(kw.items())))
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (fn(*args, **kw), args, kw)  # args kept alive: their ids stay unique
        return hit[0]

    return wrapper  # type: ignore[return-value]


def item_memoized(fn: F) -> F:
    """`memoized`, for a function of an items frame and plain values alone (never of a run), whose result is
    never changed by its callers: its results hold for as long as the items frame lives, so a caller scoring
    a benchmark's runs in batches may carry them from one batch's context to the next (`item_level`)."""
    return memoized(fn, item_level=True)


def item_level(memo: dict[Any, Any]) -> dict[Any, Any]:
    """The entries of a ScoringContext memo computed by `item_memoized` functions (the work that is the same for
    every run of a benchmark): a later context of the same items frames may start with them."""
    return {key: hit for key, hit in memo.items() if key[2] is True}


# --------------------------------------------------------------------------- joining and selecting


@item_memoized
def item_index(items: pd.DataFrame) -> pd.Index:
    """item_id -> row position in `items` (a unique index; a duplicate item_id is an error)."""
    index = pd.Index(items["item_id"].to_numpy(dtype=object), dtype=object)
    if not index.is_unique:
        dup = index[index.duplicated()][0]
        raise ValueError(f"item_id {dup!r} appears more than once in the items frame")
    return index


def positions(items: pd.DataFrame, item_ids: Any) -> np.ndarray:
    """Row position in `items` of each of `item_ids` (-1 for an id not in `items`)."""
    return item_index(items).get_indexer(np.asarray(item_ids, dtype=object))


def join(items: pd.DataFrame, preds: pd.DataFrame) -> pd.DataFrame:
    """Predictions with their item's columns, the gold letter as `gold` and a bool `correct`.

    The items frame sets the scope: predictions of items not in `items` (another split, say) are outside
    it and do not appear. `correct` is status == "ok" and answer == gold; invalid and api_error are wrong.
    Rows keep the predictions' order (an inner many-to-one join on item_id, done by position: the items'
    columns are taken at each prediction's item row).
    """
    pos = positions(items, preds["item_id"])
    keep = pos >= 0
    all_kept = bool(keep.all())
    pred_cols = [c for c in preds.columns if c not in JOIN_ITEM_COLUMNS and c != "gold"]
    data: dict[str, Any] = {}
    for c in pred_cols:
        data[c] = (preds[c] if all_kept else preds[c][keep]).reset_index(drop=True)
    at = pos if all_kept else pos[keep]
    for c in JOIN_ITEM_COLUMNS:
        if c in items.columns:
            data[c] = pd.Series(items[c].to_numpy().take(at), dtype=items[c].dtype)
    gold = items["answer"].to_numpy().take(at)
    data["gold"] = pd.Series(gold, dtype=items["answer"].dtype)
    df = pd.DataFrame(data)
    status = df["status"].to_numpy(dtype=object)
    answer = df["answer"].to_numpy(dtype=object)
    df["correct"] = np.asarray((status == "ok") & (answer == gold) & pd.notna(answer), dtype=bool)
    return df


def select(df: pd.DataFrame, rotation: int | None = 0, repeat: int | None = 0,
           input_mode: str | None = None) -> pd.DataFrame:
    """Rows of one rotation / repeat / input mode (None keeps every value of that column)."""
    mask = np.ones(len(df), dtype=bool)
    if rotation is not None and "rotation" in df:
        mask &= np.asarray(df["rotation"].to_numpy() == rotation, dtype=bool)
    if repeat is not None and "repeat" in df:
        mask &= np.asarray(df["repeat"].to_numpy() == repeat, dtype=bool)
    if input_mode is not None and "input_mode" in df:
        mask &= np.asarray(df["input_mode"].to_numpy(dtype=object) == input_mode, dtype=bool)
    return df.copy(deep=False) if mask.all() else df[mask]  # a new frame either way (copy-on-write)


# --------------------------------------------------------------------------- item and group rates


def accuracy(df: pd.DataFrame) -> Rate:
    """k correct rows / n rows (invalid and api_error count as wrong, 000 App. A)."""
    return Rate.of(int(df["correct"].sum()) if len(df) else 0, len(df), "predictions")


def accuracy_by(df: pd.DataFrame, column: str) -> dict[str, Rate]:
    """Accuracy per value of `column` (e.g. kind), in sorted order."""
    return {str(key): accuracy(part) for key, part in df.groupby(column, sort=True)}


def group_exact_match(df: pd.DataFrame) -> Rate:
    """k groups whose rows are all correct / n groups present in `df`."""
    if df.empty:
        return Rate.of(0, 0, "groups")
    per_group = df.groupby("group_id")["correct"].all()
    return Rate.of(int(per_group.sum()), len(per_group), "groups")


def _class_counts(gold: np.ndarray, pred: np.ndarray, classes: Sequence[str]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per class: true positives, gold support and predicted count (`pred` holds valid answers only)."""
    tp = np.array([np.sum((gold == c) & (pred == c)) for c in classes], dtype=float)
    support = np.array([np.sum(gold == c) for c in classes], dtype=float)
    predicted = np.array([np.sum(pred == c) for c in classes], dtype=float)
    return tp, support, predicted


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with 0 where den == 0 (000 App. A: zero for undefined per-class precision)."""
    out = np.zeros_like(num, dtype=float)
    np.divide(num, den, out=out, where=den > 0)
    return out


def macro_prf(df: pd.DataFrame, classes: Sequence[str] = "ABCD") -> dict[str, Rate]:
    """Macro precision, recall and F1 over `classes` as in 000 App. A.

    An invalid or api_error row is a false negative of its gold class (it lowers recall) and is in no
    class's predicted count. Per-class precision = TP / predicted, 0 when nothing was predicted; recall =
    TP / support (0 for a class without gold support, sklearn's zero_division=0); F1 = 2PR / (P + R), 0 when
    P + R = 0; each macro value is the unweighted mean over the classes.
    """
    classes = list(classes)
    if df.empty or not classes:
        reason = "no predictions to score" if df.empty else "no classes"
        return {key: Rate.undefined(reason) for key in ("macro_precision", "macro_recall", "macro_f1")}
    valid = df["status"] == "ok"
    return macro_prf_arrays(df["gold"].to_numpy(), df["answer"].where(valid).to_numpy(), classes)


def macro_prf_arrays(gold: np.ndarray, pred: np.ndarray, classes: Sequence[str] = "ABCD") -> dict[str, Rate]:
    """macro_prf of aligned arrays: the gold letters and the valid answers (None / NaN where a prediction is
    not valid)."""
    classes = list(classes)
    if not len(gold) or not classes:
        reason = "no predictions to score" if not len(gold) else "no classes"
        return {key: Rate.undefined(reason) for key in ("macro_precision", "macro_recall", "macro_f1")}
    tp, support, predicted = _class_counts(gold, pred, classes)
    precision = _safe_div(tp, predicted)
    recall = _safe_div(tp, support)
    f1 = _safe_div(2 * precision * recall, precision + recall)
    return {
        "macro_precision": Rate(float(precision.mean())),
        "macro_recall": Rate(float(recall.mean())),
        "macro_f1": Rate(float(f1.mean())),
    }


# --------------------------------------------------------------------------- exact uniform-random reference


def _binom_pmf(n: int, p: float) -> np.ndarray:
    from scipy.stats import binom

    return binom.pmf(np.arange(n + 1), n, p)


def expected_class_scores(support: int, total: int, p: float) -> tuple[float, float, float]:
    """Exact E[precision], E[recall], E[F1] of one class under independent guesses (P(class) = p).

    With support s of N items, TP ~ Binomial(s, p) and FP ~ Binomial(N - s, p) independently;
    precision = TP / (TP + FP) (0 when nothing is predicted), recall = TP / s, F1 = 2 TP / (s + TP + FP)
    (0 when the denominator is 0). The expectation sums each ratio over the joint pmf of (TP, FP).
    """
    tp = np.arange(support + 1, dtype=float)[:, None]
    fp = np.arange(total - support + 1, dtype=float)[None, :]
    weight = _binom_pmf(support, p)[:, None] * _binom_pmf(total - support, p)[None, :]
    precision = _safe_div(np.broadcast_to(tp, weight.shape), tp + fp)
    f1 = _safe_div(np.broadcast_to(2 * tp, weight.shape), support + tp + fp)
    recall = p if support > 0 else 0.0
    return float((weight * precision).sum()), float(recall), float((weight * f1).sum())


def uniform_random_reference(items_df: pd.DataFrame, classes: Sequence[str] = "ABCD") -> dict[str, Rate]:
    """Exact finite-test expectations for independent uniform guesses over `classes` (000 App. A).

    accuracy and macro recall are 1 / len(classes); macro precision and macro F1 average the exact
    expected classwise ratios under the actual gold supports (supports 75, 70, 69, 74 give F1 24.93%).
    Values only (expectations have no k / n).
    """
    classes = list(classes)
    gold = items_df["answer"].to_numpy()
    total = len(gold)
    if total == 0 or not classes:
        reason = "no items" if total == 0 else "no classes"
        keys = ("accuracy", "macro_precision", "macro_recall", "macro_f1")
        return {key: Rate.undefined(reason) for key in keys}
    p = 1.0 / len(classes)
    scores = np.array([expected_class_scores(int(np.sum(gold == c)), total, p) for c in classes])
    return {
        "accuracy": Rate(p),
        "macro_precision": Rate(float(scores[:, 0].mean())),
        "macro_recall": Rate(float(scores[:, 1].mean())),
        "macro_f1": Rate(float(scores[:, 2].mean())),
    }


def joint_random_reference(n_answers: int, n_options: int = 4) -> Rate:
    """Expected joint success of n independent uniform answers: (1 / n_options) ** n (000 App. A)."""
    return Rate((1.0 / n_options) ** n_answers)


# --------------------------------------------------------------------------- rotations (Circular)


def _item_rotation_table(df: pd.DataFrame, rotations: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Items x rotations arrays of the mapped-back answer (None unless valid) and of correctness (a rotation
    an item lacks: None and False)."""
    item_code, item_ids = pd.factorize(df["item_id"].to_numpy(dtype=object))
    rotation = df["rotation"].to_numpy()
    col = pd.Index(list(rotations)).get_indexer(rotation)  # -1: a rotation not asked for
    known = col >= 0
    cells = item_code.astype(np.int64) * len(rotations) + np.maximum(col, 0)
    key = item_code.astype(np.int64) * (int(rotation.max(initial=0)) + 1 if len(rotation) else 1)
    if len(key) and pd.Index(key + rotation.astype(np.int64)).has_duplicates:
        raise ValueError("several predictions for one item and rotation; select one repeat first")
    answers = np.full(len(item_ids) * len(rotations), None, dtype=object)
    correct = np.zeros(len(item_ids) * len(rotations), dtype=bool)
    valid = df["status"].to_numpy(dtype=object) == "ok"
    answer = df["answer"].to_numpy(dtype=object)
    answers[cells[known & valid]] = answer[known & valid]
    correct[cells[known]] = df["correct"].to_numpy()[known] == True  # noqa: E712 - NaN is not correct
    shape = (len(item_ids), len(rotations))
    return answers.reshape(shape), correct.reshape(shape)


def rotation_metrics(df: pd.DataFrame, rotations: Sequence[int] = (0, 1, 2, 3)) -> dict[str, object]:
    """Vanilla, Circular, Consistency, mean over rotations and Drop (000 App. A Eq. 2, Tables 6 / 12).

    `df` holds one repeat's predictions under each rotation with `answer` already mapped back to the
    original letter. Over the N items in `df`: C_i = 1 when item i is correct under every rotation;
    S_i = 1 when all its rotations have valid, identical answers (correct or not). A missing rotation
    gives no credit. Vanilla = accuracy at rotation 0 (the rotation run's own predictions);
    mean_rotation = all correct answers / (N x rotations); Drop = Vanilla - Circular (a difference).
    """
    rotations = list(rotations)
    if df.empty:  # no items: rotation_rates gives each rate's reason
        none = np.empty((0, len(rotations)), dtype=object)
        return rotation_rates(none, none.astype(bool), rotations)
    answers, correct = _item_rotation_table(df, rotations)
    return rotation_rates(answers, correct, rotations)


def rotation_rates(answers: np.ndarray, correct: np.ndarray, rotations: Sequence[int]) -> dict[str, object]:
    """rotation_metrics from its items x rotations tables: the mapped-back answer (None unless valid) and
    correctness of each item under each rotation (a rotation an item lacks: None and False)."""
    rotations = list(rotations)
    n = len(answers)
    if n == 0:
        undefined = Rate.undefined("no rotation predictions")
        keys = ("vanilla", "circular", "consistency", "mean_rotation", "drop")
        return {key: undefined for key in keys} | {"per_rotation": {}}
    present = pd.notna(answers)
    complete = present.all(axis=1)
    circular = int(correct.all(axis=1).sum())
    first = answers[:, 0] if len(rotations) else np.empty(0, dtype=object)
    agree = np.logical_and.reduce([answers[:, j] == first for j in range(len(rotations))]) if len(rotations) else \
        np.zeros(n, dtype=bool)
    consistent = int((complete & agree).sum())
    per_rotation = {str(r): Rate.of(int(correct[:, j].sum()), n) for j, r in enumerate(rotations)}
    vanilla = per_rotation.get("0", Rate.undefined("no rotation 0 in the run"))
    circ = Rate.of(circular, n)
    drop = (Rate(vanilla.value - circ.value) if vanilla.value is not None and circ.value is not None
            else Rate.undefined("no items"))
    return {
        "vanilla": vanilla,
        "circular": circ,
        "consistency": Rate.of(consistent, n),
        "mean_rotation": Rate.of(int(correct.sum()), n * len(rotations), "item-rotations"),
        "drop": drop,
        "per_rotation": per_rotation,
    }


# --------------------------------------------------------------------------- paired answers (Table 7)


def _pair_arrays(a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Over every item in either frame: valid answers (None unless ok) and correctness of both sides (an item
    missing on one side is invalid and wrong there)."""
    def side(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ids = df["item_id"].to_numpy(dtype=object)
        if pd.Index(ids, dtype=object).has_duplicates:
            raise ValueError("a paired side has several predictions for one item")
        answer = df["answer"].to_numpy(dtype=object).copy()
        answer[df["status"].to_numpy(dtype=object) != "ok"] = None
        return ids, answer, df["correct"].to_numpy(dtype=bool)

    ids_a, ans_a, cor_a = side(a)
    ids_b, ans_b, cor_b = side(b)
    union = pd.Index(ids_a, dtype=object).append(pd.Index(ids_b, dtype=object)).unique()

    def align(ids: np.ndarray, answer: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = pd.Index(ids, dtype=object).get_indexer(union)
        found = at >= 0
        out_answer = np.full(len(union), None, dtype=object)
        out_answer[found] = answer.take(at[found])
        out_correct = np.zeros(len(union), dtype=bool)
        out_correct[found] = correct.take(at[found])
        return out_answer, out_correct

    (answer_a, correct_a), (answer_b, correct_b) = align(ids_a, ans_a, cor_a), align(ids_b, ans_b, cor_b)
    return answer_a, correct_a, answer_b, correct_b


def pair_metrics(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Rate]:
    """Agreement of two answer sets over the same items (000 Table 7: repeat or rotation pairs).

    at_least_one_correct, both_correct; consistency = both valid with the same (mapped-back) answer;
    consistently_wrong = consistent and wrong; changed = not consistent (the complement, so that
    consistency + changed = 1; an item with an invalid or missing answer on either side counts as changed).
    """
    return pair_rates(*_pair_arrays(a, b))


def pair_rates(answer_a: np.ndarray, correct_a: np.ndarray, answer_b: np.ndarray, correct_b: np.ndarray
               ) -> dict[str, Rate]:
    """pair_metrics over aligned arrays: each side's valid answers (None unless ok) and correctness."""
    n = len(answer_a)
    return {key: Rate.of(int(flag.sum()), n) for key, flag in pair_flags(answer_a, correct_a, answer_b,
                                                                           correct_b).items()}


def pair_flags(answer_a: np.ndarray, correct_a: np.ndarray, answer_b: np.ndarray, correct_b: np.ndarray
               ) -> dict[str, np.ndarray]:
    """Per item, the events pair_rates counts: at_least_one_correct, both_correct, consistency (both valid,
    same answer), consistently_wrong (consistent and wrong), changed (not consistent)."""
    same = np.asarray(pd.notna(answer_a) & pd.notna(answer_b) & (answer_a == answer_b), dtype=bool)
    correct_a, correct_b = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    return {
        "at_least_one_correct": correct_a | correct_b,
        "both_correct": correct_a & correct_b,
        "consistency": same,
        "consistently_wrong": same & ~correct_a,
        "changed": ~same,
    }


def repeat_pairs(df: pd.DataFrame, rotation: int = 0, repeats: tuple[int, int] = (0, 1)) -> dict[str, Rate]:
    """pair_metrics of two same-order repeats at one rotation (000 Table 7 "Repeat" column)."""
    return pair_metrics(select(df, rotation=rotation, repeat=repeats[0]),
                        select(df, rotation=rotation, repeat=repeats[1]))


def rotation_pairs(df: pd.DataFrame, rotations: Iterable[int] = (1, 2, 3), repeat: int = 0
                   ) -> dict[str, dict[str, Rate]]:
    """pair_metrics of rotation 0 with each other rotation (000 Table 7 R1..R3 columns)."""
    base = select(df, rotation=0, repeat=repeat)
    return {f"R{r}": pair_metrics(base, select(df, rotation=r, repeat=repeat)) for r in rotations}
