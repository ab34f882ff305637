"""Failure modes: why a run fails, found in what it said (issue #38 point 1; docs/METRICS.md "Failure modes").

One document per item the run answered on the split: the text of the predictions that decide the item under the
family's rule (core.outcomes.item_marks: every prediction of a StemBind or SPUR item, the rotation-0 / repeat-0
one otherwise), response and trace, and the annotators' notes on them where there are any. The item is failing
or passing by that same rule (core.groups.item_outcomes); with `other` (`--compare`), the failing documents are
the items this run got wrong and the other run right (the items it lost), the passing ones its right items.

- Terms: each document's words and two-word phrases (scikit-learn's CountVectorizer: lower-cased words of two or
  more letters, English stop words left out except the negations, phrases of two kept words), counted once per
  document.
- Modes: the documents as TF-IDF vectors (sublinear term frequency) over the MAX_FEATURES most frequent terms,
  reduced to 50 dimensions by a truncated SVD (latent semantic analysis, ARPACK) and normalised, then k-means with a fixed seed (scikit-learn), fitted on a seeded
  sample of at most FIT_DOCS documents; every document goes to its nearest centre. k is the candidate of K_CHOICES
  up to sqrt(n / 2) (the rule of thumb of Mardia, Kent & Bibby 1979) with the highest silhouette (Rousseeuw 1987)
  on a seeded sample. Every document of the run is clustered, failing
  and passing alike (as Domino, Eyuboglu et al. 2022, clusters every example and ranks clusters by their errors),
  so each mode holds a share of the failures and a share of the passes; modes are ranked by the difference.
- Per mode: its share among the failing documents and among the passing ones, the difference with its 95%
  percentile cluster-bootstrap interval (clusters = groups; the resampled sums of core.stats, the very draws of
  every other interval for the same groups, draws and seed), the two-sided bootstrap p (core.stats.bootstrap_p)
  and the Benjamini-Hochberg q over every mode (core.stats.bh_q); the groups its failing documents belong to, three
  example groups (failing documents nearest its centre) and its stability: the share of STABILITY_DRAWS
  resamples of the groups (the first draws of the same stream, core.stats.resample_counts) in which k-means
  fitted on the resampled documents has a cluster whose Jaccard similarity with the mode (over the documents
  drawn) is at least 0.5 (Hennig 2007's clusterwise stability; below 0.5 the mode "dissolved").
- A mode's name: its terms most over-represented in its documents against the run's other documents, and the
  run's distinctive terms: those over-represented in the failing documents against the passing ones, both by the
  log-odds ratio with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008, eq. 22) with its z-score; a
  term is tested when at least MIN_DF documents hold it, its p is two-sided normal, its q Benjamini-Hochberg over
  every term tested. z counts documents as independent, which the groups' documents are not: read it as a
  ranking with a guard, the modes' intervals as the statistics.
- Stages: where the run's traces have a first failing stage (a human label, else a judge's judgement), each mode
  counts its failing documents by that stage.

Deterministic: every random choice is seeded (`seed`). Nothing is downloaded and no model is called.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from core import stats
from core.errors import MetricUndefined
from core.schema import RunData, as_json

FIT_DOCS = 4000          # documents k-means and the SVD are fitted on (a seeded sample beyond that)
K_CHOICES = (3, 4, 5, 6, 8, 10, 12)
SILHOUETTE_DOCS = 1500   # documents the silhouette of each k is measured on
DIMENSIONS = 50          # the SVD's dimensions
STABILITY_DRAWS = 20     # resamples of the groups a mode's stability is measured on
JACCARD = 0.5            # Hennig 2007: a cluster with a Jaccard below this in a resample "dissolved"
MIN_DF = 5               # a term held by fewer documents is not tested
MAX_FEATURES = 20_000    # the most frequent words and phrases kept (the rest are too rare to test or to name)
MAX_TERMS = 40           # distinctive terms listed
MODE_TERMS = 5           # terms listed per mode (its label: the first three)
PRIOR = 1000.0           # alpha_0: the informative prior's pseudo-counts, spread by the run's own term frequencies
EXAMPLES = 3
DEFAULT_DRAWS = 2_000    # the first 2,000 draws of the stream every interval uses, as core.slices
# sklearn's English stop words less the negations: "does not fit" is a reason, "the" is not
_NEGATIONS = {"not", "no", "nor", "never", "cannot", "none", "nothing", "neither", "nobody", "nowhere"}


class TooFewDocuments(MetricUndefined):
    """A run with too few failing or passing documents to find modes in."""


@dataclass(frozen=True, slots=True)
class Term:
    """A word or two-word phrase: the failing and passing documents holding it, its log-odds z and BH q."""

    term: str
    failing: int
    passing: int
    z: float
    p: float
    q: float


@dataclass(frozen=True, slots=True)
class Mode:
    """One failure mode (see the module docstring); `stages`: its failing documents by first failing stage."""

    id: int
    label: str
    terms: tuple[str, ...]
    n_failing: int
    n_passing: int
    share_failing: float
    share_passing: float
    diff: float
    ci: tuple[float, float] | None
    p: float | None
    q: float | None
    stability: float
    groups: tuple[str, ...]
    examples: tuple[str, ...]
    stages: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FailureModes:
    """The failure modes and distinctive terms of one run (`compare`: of the items it lost against that run)."""

    benchmark: str
    run: str
    compare: str | None
    split: str
    n_failing: int
    n_passing: int
    k: int
    modes: tuple[Mode, ...]
    terms: tuple[Term, ...]
    note: str = ""

    def json(self) -> dict[str, Any]:
        """The JSON of `app.py failure-modes --json` (docs/FORMATS.md), generated from the fields."""
        out: dict[str, Any] = as_json(self)
        return out

    def mode(self, mode_id: int) -> Mode | None:
        return next((m for m in self.modes if m.id == mode_id), None)


@dataclass(frozen=True)
class Documents:
    """One document per answered item: its item, group, whether it fails (else it passes), text and first
    failing stage (None when unknown)."""

    item_ids: np.ndarray   # object
    groups: np.ndarray     # object
    failing: np.ndarray    # bool
    texts: list[str]
    stages: np.ndarray     # object
    item_texts: list[str] | None = None  # each item's own text (question, options, stage targets)

    def subset(self, rows: np.ndarray) -> Documents:
        return Documents(self.item_ids[rows], self.groups[rows], self.failing[rows],
                         [self.texts[i] for i in rows.tolist()], self.stages[rows],
                         None if self.item_texts is None else [self.item_texts[i] for i in rows.tolist()])


# --------------------------------------------------------------------------- documents


def _joined(response: Any, trace: Any) -> str:
    r = response if isinstance(response, str) else ""
    t = trace if isinstance(trace, str) else ""
    return r if t in r else f"{r}\n{t}" if r else t


def documents(family: str, items: pd.DataFrame, run: RunData, other: RunData | None = None,
              notes: Mapping[str, str] | None = None, stages: Mapping[str, str] | None = None) -> Documents:
    """The run's documents over `items` (module docstring): the family's item outcome (core.groups.item_outcomes),
    its deciding predictions' texts, `notes` (item_id -> annotators' notes) and `stages` (item_id -> first failing
    stage) where given."""
    from core import families
    from core.groups import item_outcomes

    every = families.get(family).groups.every_prediction
    out = item_outcomes(family, items, run)
    answered = out["answered"].to_numpy(dtype=bool)
    correct = out["correct"].to_numpy(dtype=bool)
    failing, keep = answered & ~correct, answered.copy()
    if other is not None:
        oo = item_outcomes(family, items, other)
        won = oo["answered"].to_numpy(dtype=bool) & oo["correct"].to_numpy(dtype=bool)
        failing &= won
        keep &= correct | failing
    preds = run.preds
    if not every:
        preds = preds[(preds["rotation"].to_numpy() == 0) & (preds["repeat"].to_numpy() == 0)]
    texts: dict[str, list[str]] = {}
    for iid, resp, trace in zip(preds["item_id"], preds["response"], preds["trace"], strict=True):
        text = _joined(resp, trace)
        if text.strip():
            texts.setdefault(str(iid), []).append(text)
    ids = out["item_id"].astype(str).to_numpy(dtype=object)
    note_of = notes or {}
    joined = ["\n".join([*texts.get(i, []), *([note_of[i]] if i in note_of else [])]) for i in ids]
    has_text = np.array([bool(t.strip()) for t in joined], dtype=bool)
    keep &= has_text
    at = np.flatnonzero(keep)
    stage_of = stages or {}
    own = item_texts(items)
    return Documents(item_ids=ids[at], groups=out["group_id"].astype(str).to_numpy(dtype=object)[at],
                     failing=failing[at], texts=[joined[i] for i in at],
                     stages=np.array([stage_of.get(i) for i in ids[at]], dtype=object),
                     item_texts=[own[i] for i in at])


def item_texts(items: pd.DataFrame) -> list[str]:
    """Each item's own text: its question, its options' texts and its stage targets (what a response restates
    when it reads the item back rather than saying why it answered as it did)."""
    def text(value: Any) -> str:
        if isinstance(value, Mapping):
            return " ".join(str(v) for v in value.values() if v is not None)
        return value if isinstance(value, str) else ""

    cols = [c for c in ("question", "options", "stages") if c in items]
    if not cols:
        return [""] * len(items)
    return [" ".join(text(v) for v in row) for row in zip(*(items[c] for c in cols), strict=True)]


# --------------------------------------------------------------------------- terms


def _stop_words() -> list[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return sorted(ENGLISH_STOP_WORDS - _NEGATIONS)


_TAG = re.compile(r"</?\s*answer\s*>", re.IGNORECASE)  # the answer tag's markup (<ANSWER>B</ANSWER>)


def _clean(text: str) -> str:
    return _TAG.sub(" ", text).lower()


def term_counts(texts: Sequence[str], own: Sequence[str] | None = None) -> tuple[Any, np.ndarray]:
    """(documents x terms counts as a sparse matrix, the terms): words and two-word phrases (module docstring);
    with `own` (each document's item text), the terms a document only restates from its item are dropped: a
    word of the item's own text, a phrase both of whose words are."""
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer(ngram_range=(1, 2), stop_words=_stop_words(), min_df=min(2, len(texts)),
                          max_features=MAX_FEATURES, dtype=np.int32, preprocessor=_clean)
    try:
        counts = vec.fit_transform(texts).tocsc()
    except ValueError as exc:  # no term at all (every text is stop words or single letters)
        raise TooFewDocuments(f"no words to read in the run's texts ({exc})") from exc
    names = vec.get_feature_names_out()
    if own is not None:
        counts = (counts - counts.multiply(_restated(vec, names, own))).tocsc()
        counts.eliminate_zeros()
    return counts, names


def _restated(vec: Any, names: np.ndarray, own: Sequence[str]) -> Any:
    """documents x terms, 1 where the document's item text holds every word of the term."""
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer

    words = [str(n).split() for n in names]
    vocab = {w[0]: i for i, w in enumerate(w for w in words if len(w) == 1)}
    u = CountVectorizer(vocabulary=vocab, preprocessor=_clean, binary=True, dtype=np.int32).transform(own).tocsc()
    uni = [j for j, w in enumerate(words) if len(w) == 1]
    bi = [j for j, w in enumerate(words) if len(w) == 2 and w[0] in vocab and w[1] in vocab]
    rest = sorted(set(range(len(words))) - set(uni) - set(bi))
    parts = [u[:, [vocab[words[j][0]] for j in uni]],
             u[:, [vocab[words[j][0]] for j in bi]].multiply(u[:, [vocab[words[j][1]] for j in bi]]),
             sparse.csc_matrix((len(own), len(rest)), dtype=np.int32)]
    order = np.argsort(np.array(uni + bi + rest, dtype=np.int64), kind="stable")  # back to the terms' order
    return sparse.hstack(parts, format="csc")[:, order]


def log_odds(in_docs: np.ndarray, out_docs: np.ndarray, prior: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(delta, z) per term: the log-odds ratio of a term in one corpus against another with an informative
    Dirichlet prior (Monroe, Colaresi & Quinn 2008, eq. 16-22): `in_docs` and `out_docs` the term's counts in
    each, `prior` the alpha_w (pseudo-counts per term, summing to alpha_0)."""
    y_i, y_j, a = (np.asarray(x, dtype=float) for x in (in_docs, out_docs, prior))
    n_i, n_j, a0 = y_i.sum(), y_j.sum(), a.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = (np.log((y_i + a) / (n_i + a0 - y_i - a)) - np.log((y_j + a) / (n_j + a0 - y_j - a)))
        z = delta / np.sqrt(1.0 / (y_i + a) + 1.0 / (y_j + a))
    return delta, z


def _normal_p(z: np.ndarray) -> np.ndarray:
    """Two-sided normal p-values (math.erfc: no scipy import for it)."""
    from math import erfc, sqrt

    return np.array([erfc(abs(float(v)) / sqrt(2.0)) for v in z], dtype=float)


def _doc_freq(binary: Any, mask: np.ndarray) -> np.ndarray:
    """Per term, the documents of `mask` holding it (`binary`: documents x terms, 0/1)."""
    return np.asarray(binary.T @ mask.astype(np.int32)).ravel()


def distinctive(binary: Any, names: np.ndarray, inside: np.ndarray, outside: np.ndarray,
                limit: int = MAX_TERMS) -> list[Term]:
    """The terms over-represented in the documents `inside` against `outside` (row masks), most distinctive first:
    log-odds z > 0, tested when MIN_DF documents hold it, q over every term tested."""
    f_in, f_out = _doc_freq(binary, inside), _doc_freq(binary, outside)
    tested = np.flatnonzero(f_in + f_out >= MIN_DF)
    if not len(tested):
        return []
    pooled = f_in[tested] + f_out[tested]
    _, z = log_odds(f_in[tested], f_out[tested], PRIOR * pooled / pooled.sum())
    p = _normal_p(z)
    q = np.asarray(stats.bh_q(p))
    order = [j for j in np.lexsort((names[tested], -z)) if z[j] > 0][:limit]
    return [Term(str(names[tested[j]]), int(f_in[tested[j]]), int(f_out[tested[j]]), float(z[j]), float(p[j]),
                 float(q[j])) for j in order]


def _label_terms(terms: Sequence[Term], n: int = MODE_TERMS) -> tuple[str, ...]:
    """The first `n` terms, each skipped when its words are all in a term already taken ("mirrored" after
    "mirrored image")."""
    taken: list[str] = []
    words: set[str] = set()
    for t in terms:
        parts = set(t.term.split())
        if parts <= words:
            continue
        taken.append(t.term)
        words |= parts
        if len(taken) == n:
            break
    return tuple(taken)


# --------------------------------------------------------------------------- clustering


def _embed(counts: Any, fit_rows: np.ndarray, seed: int) -> np.ndarray:
    """LSA vectors (documents x DIMENSIONS, unit length) of the TF-IDF of `counts`, the SVD fitted on `fit_rows`."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.preprocessing import normalize

    tfidf = TfidfTransformer(sublinear_tf=True).fit(counts[fit_rows]).transform(counts)
    dims = min(DIMENSIONS, tfidf.shape[1] - 1, len(fit_rows) - 1)
    if dims < 2:
        raise TooFewDocuments("too few distinct words to cluster the run's texts")
    svd = TruncatedSVD(n_components=dims, algorithm="arpack", random_state=seed).fit(tfidf[fit_rows])
    out: np.ndarray = normalize(svd.transform(tfidf)).astype(np.float64)
    return out


def _kmeans(x: np.ndarray, k: int, seed: int, weight: np.ndarray | None = None, n_init: int = 3) -> Any:
    """k-means of `x`; a resample holding fewer distinct documents than k gives fewer clusters, silently (the
    Jaccard of `_stability` then reads what it gives)."""
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(x, sample_weight=weight)


def _pick_k(x: np.ndarray, seed: int) -> tuple[int, Any]:
    """(k, the fitted k-means) of the candidate with the highest silhouette on a seeded sample of `x`."""
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(seed)
    sample = rng.choice(len(x), size=min(SILHOUETTE_DOCS, len(x)), replace=False)
    distinct = len(np.unique(x.round(9), axis=0))  # documents that say the same thing are one point
    best: tuple[float, int, Any] | None = None
    for k in K_CHOICES:
        if k >= len(x) // 4 or k > max(K_CHOICES[0], int(np.sqrt(len(x) / 2))):  # k <= sqrt(n / 2) (Mardia 1979)
            break
        if k >= distinct:
            break
        km = _kmeans(x, k, seed)
        labels = km.labels_[sample]
        if len(set(labels.tolist())) < 2:
            continue
        score = float(silhouette_score(x[sample], labels, random_state=seed))
        if best is None or score > best[0] + 1e-12:
            best = (score, k, km)
    if best is None:
        raise TooFewDocuments(f"{len(x)} documents saying {distinct} distinct things: too few to cluster "
                              f"(k = {K_CHOICES[0]} needs at least {4 * K_CHOICES[0]} documents and {K_CHOICES[0] + 1} "
                              "distinct ones)")
    return best[1], best[2]


def _stability(x: np.ndarray, labels: np.ndarray, k: int, fit_rows: np.ndarray, gcode: np.ndarray,
               n_groups: int, seed: int) -> np.ndarray:
    """Per mode, the share of STABILITY_DRAWS resamples of the groups in which it reappears (module docstring)."""
    counts = stats.resample_counts(n_groups, STABILITY_DRAWS, seed)
    found = np.zeros(k)
    for draw in counts:
        w = draw[gcode].astype(float)
        drawn = w > 0
        fit = fit_rows[drawn[fit_rows]]
        if len(fit) <= k:
            continue
        km = _kmeans(x[fit], k, seed, w[fit], n_init=1)  # one seeded start per resample: 20 fits, not 60
        new = km.predict(x[drawn])
        old = labels[drawn]
        for m in range(k):
            mine = old == m
            if not mine.any():
                continue
            inter = np.bincount(new[mine], minlength=k)
            union = mine.sum() + np.bincount(new, minlength=k) - inter
            if (inter / union).max() >= JACCARD:
                found[m] += 1
    return found / STABILITY_DRAWS


def _mode_stats(labels: np.ndarray, k: int, failing: np.ndarray, gcode: np.ndarray, n_groups: int,
                draws: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(diff point estimates, ci lo, ci hi, p) per mode: share among failing minus share among passing, resampled
    by group (core.stats.resampled_sums)."""
    def per_group(mask: np.ndarray) -> np.ndarray:
        return np.bincount(gcode[mask], minlength=n_groups).astype(float)

    passing = ~failing
    kf = np.column_stack([per_group(failing & (labels == m)) for m in range(k)])
    kp = np.column_stack([per_group(passing & (labels == m)) for m in range(k)])
    cols = np.hstack([kf, kp, per_group(failing)[:, None], per_group(passing)[:, None]])
    context = stats.current_context() or stats.ScoringContext(draws=stats.DrawCache(weights={}))
    with context.active():
        sums = stats.resampled_sums(cols, draws=draws, seed=seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = sums[:, :k] / sums[:, 2 * k:2 * k + 1] - sums[:, k:2 * k] / sums[:, 2 * k + 1:2 * k + 2]
    lo, hi = stats.percentile_interval(d)
    est = kf.sum(axis=0) / failing.sum() - kp.sum(axis=0) / passing.sum()
    return est, lo, hi, stats.bootstrap_p(d)


def find_modes(docs: Documents, *, benchmark: str = "", run: str = "", compare: str | None = None,
               split: str = "", draws: int = DEFAULT_DRAWS, seed: int = stats.DEFAULT_SEED) -> FailureModes:
    """The failure modes and distinctive terms of `docs` (module docstring), the modes worst first: by the
    difference, then q. A document that says nothing beyond its item's own words (a bare letter) is in no mode;
    `note` says how many there are."""
    from threadpoolctl import threadpool_limits

    base = FailureModes(benchmark, run, compare, split, int(docs.failing.sum()), int((~docs.failing).sum()), 0, (),
                        ())
    # one thread for k-means and the SVD: their OpenMP / BLAS pools on a busy machine cost 50x the work itself
    # (3.5 s against 0.05 s for k-means of 4,000 documents on two loaded cores)
    with threadpool_limits(1):
        try:
            counts, names = term_counts(docs.texts, docs.item_texts)
        except TooFewDocuments as exc:
            return replace(base, note=str(exc))
        said = np.flatnonzero(np.asarray(counts.sum(axis=1)).ravel() > 0)
        silent = np.setdiff1d(np.arange(len(docs.texts)), said)
        note = (f"{int(docs.failing[silent].sum())} failing and {int((~docs.failing[silent]).sum())} passing "
                "answers say nothing beyond their item's own words (a bare letter) and are in no mode"
                if len(silent) else "")
        docs, counts = docs.subset(said), counts[said]
        n_fail, n_pass = int(docs.failing.sum()), int((~docs.failing).sum())
        base = replace(base, n_failing=n_fail, n_passing=n_pass, note=note)
        if n_fail < 2 * EXAMPLES or n_pass < 2 * EXAMPLES:
            return replace(base, note="; ".join(t for t in (note, f"{n_fail} failing and {n_pass} passing documents "
                                                                  "with words: too few to find modes in (at least 6 "
                                                                  "of each)") if t))
        try:
            return _find_modes(docs, counts, names, base, draws, seed)
        except TooFewDocuments as exc:
            return replace(base, note="; ".join(t for t in (note, str(exc)) if t))


def _find_modes(docs: Documents, counts: Any, names: np.ndarray, base: FailureModes, draws: int, seed: int
                ) -> FailureModes:
    n_fail, n_pass = base.n_failing, base.n_passing
    binary = (counts > 0).astype(np.int32).tocsr()
    terms = distinctive(binary, names, docs.failing, ~docs.failing)
    rng = np.random.default_rng(seed)
    n = len(docs.texts)
    fit_rows = np.sort(rng.choice(n, size=FIT_DOCS, replace=False)) if n > FIT_DOCS else np.arange(n)
    x = _embed(counts.tocsr(), fit_rows, seed)
    k, km = _pick_k(x[fit_rows], seed)
    labels = km.predict(x)
    groups, gcode = np.unique(docs.groups.astype(str), return_inverse=True)
    est, lo, hi, p = _mode_stats(labels, k, docs.failing, gcode, len(groups), draws, seed)
    stable = _stability(x, labels, k, fit_rows, gcode, len(groups), seed)
    ps = [float(v) for v in p if not np.isnan(v)]
    qs = iter(stats.bh_q(ps))
    modes = []
    for m in range(k):
        inside = labels == m
        fail_in = inside & docs.failing
        near = np.flatnonzero(fail_in)[np.argsort(-(x[fail_in] @ km.cluster_centers_[m]), kind="stable")]
        examples = tuple(dict.fromkeys(str(g) for g in docs.groups[near]))[:EXAMPLES]
        named = _label_terms(distinctive(binary, names, inside, ~inside, limit=4 * MODE_TERMS))
        ok = not np.isnan(lo[m])
        modes.append(Mode(
            id=m, label=" · ".join(named[:3]) or f"mode {m}", terms=named, n_failing=int(fail_in.sum()),
            n_passing=int((inside & ~docs.failing).sum()), share_failing=float(fail_in.sum() / n_fail),
            share_passing=float((inside & ~docs.failing).sum() / n_pass), diff=float(est[m]),
            ci=(float(lo[m]), float(hi[m])) if ok else None, p=None if np.isnan(p[m]) else float(p[m]),
            q=None if np.isnan(p[m]) else next(qs), stability=float(stable[m]),
            groups=tuple(sorted({str(g) for g in docs.groups[fail_in]})), examples=examples,
            stages=dict(sorted(Counter(str(s) for s in docs.stages[fail_in] if s is not None).items()))))
    modes.sort(key=lambda md: (-md.diff, 1.0 if md.q is None else md.q, md.id))
    return replace(base, k=k, modes=tuple(modes), terms=tuple(terms))


def failure_modes(items: pd.DataFrame, run: RunData, *, other: RunData | None = None, split: str | None = "test",
                  notes: Mapping[str, str] | None = None, stages: Mapping[str, str] | None = None,
                  draws: int = DEFAULT_DRAWS, seed: int = stats.DEFAULT_SEED) -> FailureModes:
    """The failure modes of `run` on `split` (core.scoring's rule: the test split, every split of a benchmark
    without one, None every split), against `other` when given (the items it lost)."""
    from core.scoring import resolve_split, split_items

    if other is not None and other.benchmark != run.benchmark:
        raise MetricUndefined(f"runs {run.name!r} and {other.name!r} are of different benchmarks")
    chosen, label = resolve_split(items, split)
    if chosen is not None:
        items = split_items(items, chosen)
        if items.empty:
            raise MetricUndefined(f"no items in split {chosen!r}")
    docs = documents(run.family, items, run, other, notes, stages)
    return find_modes(docs, benchmark=run.benchmark, run=run.name, compare=other.name if other else None,
                      split=label, draws=draws, seed=seed)
