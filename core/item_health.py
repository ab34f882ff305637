"""Item health: the runs of a benchmark read as annotators of its items (issue #38 point 2; docs/METRICS.md
"Item health"). Whose fault is a failure: the model's, or the item's?

Input: the benchmark's items laid out once (core.outcomes.Layout) and every run's predictions as arrays
(core.outcomes.Preds, db.predictions.outcome_arrays); a prediction's letter is its original-order answer.

- Suspect gold: a one-coin Dawid-Skene model (Dawid & Skene 1979, with each run's confusion matrix reduced to one
  accuracy p_j, a wrong answer spread evenly over the item's other options) fitted by EM from a majority-vote
  start on every run's ok predictions (all rotations and repeats, one vote per run and item split among the
  letters they name; invalid and api_error say nothing about the letter).
  Its posterior over each item's letters weighs each run by its estimated reliability; an item is a suspect when
  the posterior's letter (the consensus) is not the gold one, with support (its posterior probability) at least
  SUPPORT, named by at least MIN_RUNS runs and by more runs than the gold letter is (runs of one model are not
  independent annotators, which the model assumes: its posteriors are then too sure, and a consensus of one or
  two runs is no evidence). Ranked by the evidence against the gold letter, log(P(consensus) /
  P(gold)), largest first, then by the runs behind the consensus. The gold letters are never read by the fit.
- Unstable items: a run flips on an item when its ok predictions of it (repeats, rotations mapped back) name more
  than one letter. Each run's flip rate over the items it answered more than once is its own repeat noise; an
  item's flips X (runs that flipped on it) are tested against the Poisson-binomial of those rates: the exact upper
  tail P(X >= x) when at most EXACT_RUNS runs repeat items, else its normal approximation with a continuity
  correction; BH q over the items tested. Listed when p < 0.05, ranked by p, then flip rate.
- Ambiguous items: each run's vote is its most frequent ok letter on the item; an item is ambiguous when at least
  MIN_RUNS runs vote, its two most voted letters hold at least 80% of the votes and the second at least 30%.
  Ranked by the second letter's share of the two (0.5: an even split).
- Negative discrimination: per item, the point-biserial correlation across runs between being right on it and the
  run's rest score (its accuracy on its other answered items), as item analysis in classical test theory reads
  discrimination (Lord & Novick 1968, ch. 15); one-sided p of r < 0 by Fisher's z (atanh r sqrt(n - 3)), BH q over
  the items tested (at least MIN_RUNS runs, both outcomes present). Listed when r < 0 and p < 0.05, by p.
- Duplicates: images shared by items of different groups (same content hash), and near duplicates: a perceptual
  hash (DCT hash, Zauner 2010: the 8 x 8 lowest frequencies of a 32 x 32 grey DCT against their median) within
  NEAR_BITS bits; a flat image (no structure for the hash) matches only exactly. Clusters of linked images, those
  spanning splits first.
- Accuracy without the suspects: each run's accuracy (the family's item outcome, core.outcomes.item_marks) on the
  scored split with and without the suspect items, each with its 95% percentile cluster-bootstrap interval
  (clusters = groups, the seeded draws of every other interval) and the paired difference (without - with) with
  its own. Ranked by the difference, largest first.

Every list holds at most LIST_MAX entries (`counts` has how many there are).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core import outcomes, stats
from core.schema import Rate, as_json

LETTERS = "ABCDEFGH"
MIN_RUNS = 3
SUPPORT = 0.9
EXACT_RUNS = 64
AMBIGUOUS_TOP2 = 0.8
AMBIGUOUS_SECOND = 0.3
NEAR_BITS = 4
LIST_MAX = 200
EM_ITERATIONS = 50
EM_TOLERANCE = 1e-6
DEFAULT_DRAWS = 2_000

Progress = Callable[[str, float], None]  # (what is being done, fraction of the whole done)


def _quiet(_what: str, _done: float) -> None:
    return None


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class SuspectGold:
    item_id: str
    group_id: str
    gold: str
    consensus: str
    support: float
    gold_posterior: float
    runs: tuple[str, ...]   # the runs whose answer is the consensus letter
    n_runs: int             # the runs that answered the item


@dataclass(frozen=True, slots=True)
class Unstable:
    item_id: str
    group_id: str
    flip_rate: float        # the share of the runs that answered it more than once which flipped
    flips: int
    expected: float         # the flips the runs' own repeat noise predicts
    n_runs: int
    p: float
    q: float
    runs: tuple[str, ...]   # the runs that flipped


@dataclass(frozen=True, slots=True)
class Ambiguous:
    item_id: str
    group_id: str
    gold: str
    letters: tuple[str, str]
    shares: tuple[float, float]
    split: float            # second / (first + second)
    n_runs: int


@dataclass(frozen=True, slots=True)
class NegativeDiscrimination:
    item_id: str
    group_id: str
    r: float
    n_runs: int
    p: float
    q: float
    right: tuple[str, ...]  # the runs right on it, weakest first
    wrong: tuple[str, ...]  # the runs wrong on it, strongest first


@dataclass(frozen=True, slots=True)
class Duplicate:
    images: tuple[str, ...]
    distance: int           # the largest hash distance within the cluster (0: identical files)
    items: tuple[str, ...]
    groups: tuple[str, ...]
    splits: tuple[str, ...]
    cross_split: bool


@dataclass(frozen=True, slots=True)
class RunAccuracy:
    run: str
    accuracy: Rate
    without: Rate
    diff: float | None
    ci: tuple[float, float] | None


@dataclass(frozen=True, slots=True)
class ItemHealth:
    """Item health of one benchmark (module docstring); each list ranked most suspect first."""

    benchmark: str
    n_items: int
    n_runs: int
    split: str
    suspect_gold: tuple[SuspectGold, ...]
    unstable: tuple[Unstable, ...]
    ambiguous: tuple[Ambiguous, ...]
    negative_discrimination: tuple[NegativeDiscrimination, ...]
    duplicates: tuple[Duplicate, ...]
    accuracy_without_suspects: tuple[RunAccuracy, ...]
    counts: dict[str, int] = field(default_factory=dict)
    reliability: dict[str, float] = field(default_factory=dict)  # Dawid-Skene p_j per run

    def json(self) -> dict[str, Any]:
        """The JSON of `app.py item-health --json` (docs/FORMATS.md), generated from the fields."""
        out: dict[str, Any] = as_json(self)
        return out

    def groups_of(self, name: str) -> list[str]:
        """The groups of list `name` (one of LISTS), in its order, each once."""
        if name == "duplicates":
            return list(dict.fromkeys(g for d in self.duplicates for g in d.groups))
        rows: dict[str, Sequence[SuspectGold | Unstable | Ambiguous | NegativeDiscrimination]] = {
            "suspect_gold": self.suspect_gold, "unstable": self.unstable, "ambiguous": self.ambiguous,
            "negative_discrimination": self.negative_discrimination}
        return list(dict.fromkeys(r.group_id for r in rows[name]))


LISTS = ("suspect_gold", "unstable", "ambiguous", "negative_discrimination", "duplicates")  # ItemHealth's lists


# --------------------------------------------------------------------------- the votes


@dataclass(frozen=True)
class Votes:
    """Every run's predictions over the items (rows of the Layout), per run x item: its vote (`counts`, a sparse
    (items x LETTERS) x runs matrix: one vote per run and item, split among the letters its ok predictions name,
    so a run's repeats are not counted as independent annotators), the run's most frequent letter (`vote`, -1
    without one), whether it answered the item more than once (`multi`) and named two letters (`flip`), and the
    item marks of core.outcomes.item_marks (`answered`, `correct`)."""

    runs: tuple[str, ...]
    counts: Any           # scipy.sparse csc matrix, (items * len(LETTERS)) x runs
    vote: np.ndarray      # int8, runs x items
    multi: np.ndarray     # bool, runs x items
    flip: np.ndarray      # bool, runs x items
    answered: np.ndarray  # bool, runs x items
    correct: np.ndarray   # bool, runs x items

    def only(self, names: Sequence[str]) -> Votes:
        """The votes of the runs `names` alone (in this object's order)."""
        keep = np.array([n in set(names) for n in self.runs], dtype=bool)
        at = np.flatnonzero(keep)
        return Votes(tuple(self.runs[j] for j in at), self.counts[:, at], self.vote[at], self.multi[at],
                     self.flip[at], self.answered[at], self.correct[at])


_CODE = {c: i for i, c in enumerate(LETTERS)}
K = len(LETTERS)


def votes(lay: outcomes.Layout, preds: Mapping[str, outcomes.Preds], progress: Progress = _quiet) -> Votes:
    """The Votes of the runs `preds` (name -> Preds over `lay`), in that order."""
    import pandas as pd
    from scipy import sparse

    names = tuple(preds)
    n = len(lay.item_ids)
    shape = (len(names), n)
    vote = np.full(shape, -1, dtype=np.int8)
    multi, flip, answered, correct = (np.zeros(shape, dtype=bool) for _ in range(4))
    cells, runs_of, values = [], [], []
    for j, name in enumerate(names):
        p = preds[name]
        code = pd.Series(p.answer, dtype=object).map(_CODE).fillna(-1).to_numpy(dtype=np.int64)
        ok = (p.row >= 0) & (p.status == 0) & (code >= 0)
        table = np.bincount(p.row[ok] * K + code[ok], minlength=n * K).reshape(n, K)
        total = table.sum(axis=1)
        vote[j] = np.where(total > 0, table.argmax(axis=1), -1)
        multi[j] = total >= 2
        flip[j] = (table > 0).sum(axis=1) >= 2
        answered[j], correct[j] = outcomes.item_marks(lay, p)
        nz = np.flatnonzero(table.reshape(-1))
        cells.append(nz)
        values.append(table.reshape(-1)[nz] / total[nz // K])  # one vote per run and item, split by its letters
        runs_of.append(np.full(len(nz), j, dtype=np.int32))
        if j % 20 == 0 or j == len(names) - 1:
            progress("reading the runs' answers", 0.5 * (j + 1) / max(len(names), 1))
    counts = sparse.csc_matrix(
        (np.concatenate(values).astype(np.float64) if values else np.zeros(0),
         (np.concatenate(cells) if cells else np.zeros(0, np.int64),
          np.concatenate(runs_of) if runs_of else np.zeros(0, np.int32))), shape=(n * K, len(names)))
    return Votes(names, counts, vote, multi, flip, answered, correct)


def option_masks(letters: Sequence[str]) -> np.ndarray:
    """items x LETTERS: whether the item offers each letter."""
    out = np.zeros((len(letters), K), dtype=bool)
    for i, ls in enumerate(letters):
        for c in str(ls or ""):
            if c in _CODE:
                out[i, _CODE[c]] = True
    return out


# --------------------------------------------------------------------------- suspect gold (Dawid-Skene)


def dawid_skene(v: Votes, options: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(posterior items x LETTERS, accuracy per run) of the one-coin Dawid-Skene model (module docstring), fitted
    by EM on the ok predictions' letters the item offers; an item without one keeps the uniform posterior."""
    n_items = options.shape[0]
    counts = v.counts.multiply(options.reshape(-1, 1)).tocsc()  # votes for letters the item offers
    per_run = np.maximum(np.asarray(counts.sum(axis=0)).ravel(), 1.0)
    votes_of = np.asarray(counts.sum(axis=1)).reshape(n_items, K)
    log_m1 = np.log(np.maximum(options.sum(axis=1), 2) - 1.0)
    post = np.where(options, votes_of + 1e-3, 0.0)  # the majority-vote start (Dawid & Skene 1979, §4)
    post /= np.maximum(post.sum(axis=1, keepdims=True), 1e-300)
    acc = np.full(len(v.runs), 0.5)
    for _ in range(EM_ITERATIONS):
        # M-step: each run's accuracy (one pseudo-vote each way) and the letters' prior
        hit = counts.T @ post.reshape(-1)
        new_acc = np.clip((hit + 1.0) / (per_run + 2.0), 1e-4, 1 - 1e-4)
        prior = post.sum(axis=0) + 1.0
        prior /= prior.sum()
        # E-step: log posterior = log prior + per vote for the letter, the log-odds of the run's hit against a
        # miss landing on that letter (one of the item's m - 1 other options)
        weight = np.log(new_acc) - np.log1p(-new_acc)
        score = (counts @ weight).reshape(n_items, K) + votes_of * log_m1[:, None] + np.log(prior)[None, :]
        score = np.where(options, score, -np.inf)
        score -= score.max(axis=1, keepdims=True)
        post = np.exp(score)
        post /= post.sum(axis=1, keepdims=True)
        done = float(np.abs(new_acc - acc).max()) < EM_TOLERANCE
        acc = new_acc
        if done:
            break
    return post, acc


def log_posterior(post: np.ndarray) -> np.ndarray:
    """log of the posterior, with -inf for the letters an item does not offer."""
    with np.errstate(divide="ignore"):
        return np.log(post)


def _gold_codes(lay: outcomes.Layout) -> np.ndarray:
    return np.array([_CODE.get(str(g), -1) for g in lay.gold], dtype=np.int64)


def suspect_gold(v: Votes, lay: outcomes.Layout, post: np.ndarray) -> list[SuspectGold]:
    """The suspects (module docstring), most suspect first."""
    gold = _gold_codes(lay)
    consensus, support = post.argmax(axis=1), post.max(axis=1)
    n_votes = (v.vote >= 0).sum(axis=0)
    g_post = np.where(gold >= 0, post[np.arange(len(gold)), np.maximum(gold, 0)], 0.0)
    votes_for = (v.vote == consensus[None, :]).sum(axis=0)
    votes_gold = (v.vote == gold[None, :]).sum(axis=0)
    found = np.flatnonzero((gold >= 0) & (consensus != gold) & (support >= SUPPORT) & (n_votes >= MIN_RUNS)
                           & (votes_for >= MIN_RUNS) & (votes_for > votes_gold))
    behind = {int(i): tuple(v.runs[j] for j in np.flatnonzero(v.vote[:, i] == consensus[i])) for i in found}
    # the evidence against the gold letter: log P(consensus) / P(gold), from the scores (no underflow at 0)
    logs = log_posterior(post)
    against = {int(i): float(logs[i, consensus[i]] - max(logs[i, gold[i]], -745.0)) for i in found}
    order = sorted(found.tolist(), key=lambda i: (-round(against[i], 9), -len(behind[i]), str(lay.item_ids[i])))
    return [SuspectGold(str(lay.item_ids[i]), str(lay.groups[lay.group[i]]), LETTERS[gold[i]],
                        LETTERS[consensus[i]], float(support[i]), float(g_post[i]), behind[i], int(n_votes[i]))
            for i in order]


# --------------------------------------------------------------------------- unstable items


def _poisson_binomial_tail(rates: np.ndarray, present: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(X >= x) per item, X the sum of Bernoulli(rates[j]) over the runs j `present` on it (runs x items):
    exactly by the convolution when there are at most EXACT_RUNS runs, else by the normal approximation with a
    continuity correction."""
    n_items = present.shape[1]
    if len(rates) <= EXACT_RUNS:
        dist = np.zeros((n_items, len(rates) + 1))
        dist[:, 0] = 1.0
        for j, r in enumerate(rates):
            q = np.where(present[j], r, 0.0)[:, None]
            dist[:, 1:] = dist[:, 1:] * (1 - q) + dist[:, :-1] * q
            dist[:, 0] *= 1 - q[:, 0]
        tail = np.cumsum(dist[:, ::-1], axis=1)[:, ::-1]  # tail[:, k] = P(X >= k)
        return np.clip(tail[np.arange(n_items), np.minimum(x, len(rates))], 0.0, 1.0)
    mean = (rates[:, None] * present).sum(axis=0)
    var = (rates[:, None] * (1 - rates[:, None]) * present).sum(axis=0)
    z = (x - 0.5 - mean) / np.sqrt(np.maximum(var, 1e-12))
    return np.array([0.5 * math.erfc(float(t) / math.sqrt(2.0)) for t in z])


def unstable(v: Votes, lay: outcomes.Layout) -> tuple[list[Unstable], int]:
    """(the unstable items, most unstable first; how many items were tested)."""
    repeated = v.multi.any(axis=1)
    if not repeated.any():
        return [], 0
    multi, flip = v.multi[repeated], v.flip[repeated]
    names = [v.runs[j] for j in np.flatnonzero(repeated)]
    rates = flip.sum(axis=1) / np.maximum(multi.sum(axis=1), 1)
    x = flip.sum(axis=0)
    n_runs = multi.sum(axis=0)
    tested = np.flatnonzero(n_runs > 0)
    p = _poisson_binomial_tail(rates, multi[:, tested], x[tested])
    q = np.asarray(stats.bh_q(p))
    expected = (rates[:, None] * multi[:, tested]).sum(axis=0)
    keep = np.flatnonzero((p < 0.05) & (x[tested] > expected))
    rate = x[tested] / np.maximum(n_runs[tested], 1)
    order = sorted(keep.tolist(), key=lambda t: (p[t], -rate[t], str(lay.item_ids[tested[t]])))
    out = []
    for t in order:
        i = int(tested[t])
        out.append(Unstable(str(lay.item_ids[i]), str(lay.groups[lay.group[i]]), float(rate[t]), int(x[i]),
                            float(expected[t]), int(n_runs[i]), float(p[t]), float(q[t]),
                            tuple(names[j] for j in np.flatnonzero(flip[:, i]))))
    return out, len(tested)


# --------------------------------------------------------------------------- ambiguous items


def ambiguous(v: Votes, lay: outcomes.Layout) -> list[Ambiguous]:
    """Items whose runs split between two letters, the evenest split first."""
    n_items = v.vote.shape[1]
    tally = np.zeros((n_items, K), dtype=np.int64)
    for c in range(K):
        tally[:, c] = (v.vote == c).sum(axis=0)
    total = tally.sum(axis=1)
    top = np.argsort(-tally, axis=1, kind="stable")[:, :2]
    first = tally[np.arange(n_items), top[:, 0]]
    second = tally[np.arange(n_items), top[:, 1]]
    with np.errstate(invalid="ignore", divide="ignore"):
        s1, s2 = first / total, second / total
        split = second / (first + second)
    keep = np.flatnonzero((total >= MIN_RUNS) & (s1 + s2 >= AMBIGUOUS_TOP2) & (s2 >= AMBIGUOUS_SECOND))
    order = sorted(keep.tolist(), key=lambda i: (-split[i], -total[i], str(lay.item_ids[i])))
    return [Ambiguous(str(lay.item_ids[i]), str(lay.groups[lay.group[i]]), str(lay.gold[i]),
                      (LETTERS[top[i, 0]], LETTERS[top[i, 1]]), (float(s1[i]), float(s2[i])), float(split[i]),
                      int(total[i])) for i in order]


# --------------------------------------------------------------------------- negative discrimination


def negative_discrimination(v: Votes, lay: outcomes.Layout) -> tuple[list[NegativeDiscrimination], int]:
    """(items that strong runs fail and weak runs pass, most significant first; how many items were tested)."""
    a = v.answered.astype(float)
    y = (v.correct & v.answered).astype(float)
    n_ans = a.sum(axis=1, keepdims=True)
    rest = (y.sum(axis=1, keepdims=True) - y) / np.maximum(n_ans - a, 1.0)  # the run's accuracy elsewhere
    n = a.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        my = (y * a).sum(axis=0) / n
        mr = (rest * a).sum(axis=0) / n
        cov = (a * (y - my) * (rest - mr)).sum(axis=0)
        sy = np.sqrt((a * (y - my) ** 2).sum(axis=0))
        sr = np.sqrt((a * (rest - mr) ** 2).sum(axis=0))
        r = cov / (sy * sr)
    tested = np.flatnonzero((n >= max(MIN_RUNS, 4)) & (sy > 0) & (sr > 0))
    if not len(tested):
        return [], 0
    rt = np.clip(r[tested], -0.999999, 0.999999)
    z = np.arctanh(rt) * np.sqrt(n[tested] - 3)
    p = np.array([0.5 * math.erfc(-float(t) / math.sqrt(2.0)) for t in z])  # one-sided: r < 0
    q = np.asarray(stats.bh_q(p))
    keep = np.flatnonzero((rt < 0) & (p < 0.05))
    order = sorted(keep.tolist(), key=lambda t: (p[t], rt[t], str(lay.item_ids[tested[t]])))
    strength = np.argsort(-(v.correct & v.answered).sum(axis=1) / np.maximum(v.answered.sum(axis=1), 1),
                          kind="stable")
    out = []
    for t in order:
        i = int(tested[t])
        right = [v.runs[j] for j in strength[::-1] if v.answered[j, i] and v.correct[j, i]]
        wrong = [v.runs[j] for j in strength if v.answered[j, i] and not v.correct[j, i]]
        out.append(NegativeDiscrimination(str(lay.item_ids[i]), str(lay.groups[lay.group[i]]), float(rt[t]),
                                          int(n[i]), float(p[t]), float(q[t]), tuple(right[:10]), tuple(wrong[:10])))
    return out, len(tested)


# --------------------------------------------------------------------------- duplicate images


def _dct_matrix(n: int) -> np.ndarray:
    """The orthonormal DCT-II matrix of size n (a few microseconds at n = 32: built per image, kept nowhere)."""
    k, x = np.arange(n)[:, None], np.arange(n)[None, :]
    m = np.cos(np.pi * (2 * x + 1) * k / (2 * n)) * np.sqrt(2.0 / n)
    m[0] /= np.sqrt(2.0)
    return m


FLAT = 1e-6  # an image whose low frequencies vary less than this has no structure for the hash


def phash(image: Any) -> int | None:
    """The 64-bit DCT perceptual hash of a PIL image (module docstring), or None for a flat image."""
    from PIL import Image

    grey = np.asarray(image.convert("L").resize((32, 32), Image.Resampling.LANCZOS), dtype=np.float64)
    d = _dct_matrix(32)
    low = (d @ grey @ d.T)[:8, :8].reshape(-1)
    ac = low[1:]
    if float(np.std(ac)) < FLAT * max(1.0, abs(float(low[0]))):
        return None
    bits = (low > np.median(ac)).astype(np.uint64)
    bits[0] = 0
    return int((bits << np.arange(64, dtype=np.uint64)).sum())


def _pairs_within(hashes: np.ndarray, bits: int) -> list[tuple[int, int, int]]:
    """(i, j, distance) of every pair of 64-bit hashes within `bits` bits: candidates share one of bits + 1 blocks
    (by the pigeonhole principle, two hashes within `bits` bits agree on at least one), then checked."""
    n = len(hashes)
    found: dict[tuple[int, int], int] = {}
    if n < 2:
        return []
    width = 64 // (bits + 1)
    for b in range(bits + 1):
        shift = b * width
        size = 64 - shift if b == bits else width
        block = (hashes >> np.uint64(shift)) & np.uint64((1 << size) - 1)
        order = np.argsort(block, kind="stable")
        sb = block[order]
        starts = np.flatnonzero(np.r_[True, sb[1:] != sb[:-1]])
        ends = np.r_[starts[1:], n]
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            if e - s < 2:
                continue
            idx = order[s:e]
            xor = hashes[idx][:, None] ^ hashes[idx][None, :]
            dist = np.bitwise_count(xor)
            ii, jj = np.nonzero(np.triu(dist <= bits, 1))
            for a, c in zip(ii.tolist(), jj.tolist(), strict=True):
                key = (min(int(idx[a]), int(idx[c])), max(int(idx[a]), int(idx[c])))
                found[key] = int(dist[a, c])
    return [(i, j, d) for (i, j), d in sorted(found.items())]


def duplicates(lay: outcomes.Layout, images: Sequence[Sequence[str]], splits: Sequence[str],
               hashes: Mapping[str, int | None]) -> list[Duplicate]:
    """Clusters of identical or near-identical images shown by items of different groups (module docstring)."""
    digests = sorted({h for imgs in images for h in imgs})
    at = {h: i for i, h in enumerate(digests)}
    shown_by: list[list[int]] = [[] for _ in digests]
    for row, imgs in enumerate(images):
        for h in imgs:
            shown_by[at[h]].append(row)
    parent = list(range(len(digests)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    structured = [i for i, h in enumerate(digests) if hashes.get(h) is not None]
    values = np.array([hashes[digests[i]] for i in structured], dtype=np.uint64)
    dist_of: dict[int, int] = {}
    for a, b, d in _pairs_within(values, NEAR_BITS):
        ra, rb = root(structured[a]), root(structured[b])
        if ra != rb:
            parent[rb] = ra
        dist_of[structured[a]] = max(dist_of.get(structured[a], 0), d)
    clusters: dict[int, list[int]] = {}
    for i in range(len(digests)):
        clusters.setdefault(root(i), []).append(i)
    out = []
    for members in clusters.values():
        rows = sorted({r for m in members for r in shown_by[m]})
        groups = sorted({str(lay.groups[lay.group[r]]) for r in rows})
        if len(groups) < 2:
            continue
        sp = sorted({str(splits[r]) for r in rows})
        out.append(Duplicate(tuple(digests[m] for m in members), max((dist_of.get(m, 0) for m in members), default=0),
                             tuple(str(lay.item_ids[r]) for r in rows), tuple(groups), tuple(sp), len(sp) > 1))
    out.sort(key=lambda d: (not d.cross_split, -len(d.groups), d.distance, d.images))
    return out


# --------------------------------------------------------------------------- accuracy without the suspects


def accuracy_without(v: Votes, lay: outcomes.Layout, scored: np.ndarray, suspects: np.ndarray,
                     count_unanswered: bool, draws: int = DEFAULT_DRAWS, seed: int = stats.DEFAULT_SEED
                     ) -> list[RunAccuracy]:
    """Each run's accuracy on the items `scored` (a row mask) with and without the `suspects` (a row mask), with
    intervals, the runs whose accuracy the suspects cost most first."""
    n_groups = lay.n_groups
    counted = v.answered | count_unanswered
    hit = v.correct & v.answered
    cols = []
    for mask in (scored, scored & ~suspects):
        k = np.stack([np.bincount(lay.group, weights=(hit[j] & counted[j] & mask), minlength=n_groups)
                      for j in range(len(v.runs))], axis=1)
        n = np.stack([np.bincount(lay.group, weights=(counted[j] & mask), minlength=n_groups)
                      for j in range(len(v.runs))], axis=1)
        cols += [k, n]
    if not len(v.runs) or not n_groups:
        return []
    context = stats.current_context() or stats.ScoringContext(draws=stats.DrawCache(weights={}))
    with context.active():
        sums = stats.resampled_sums(np.hstack(cols), draws=draws, seed=seed)
    r = len(v.runs)
    with np.errstate(invalid="ignore", divide="ignore"):
        a_all = sums[:, :r] / sums[:, r:2 * r]
        a_wo = sums[:, 2 * r:3 * r] / sums[:, 3 * r:]
    lo_a, hi_a = stats.percentile_interval(a_all)
    lo_w, hi_w = stats.percentile_interval(a_wo)
    lo_d, hi_d = stats.percentile_interval(a_wo - a_all)
    out = []
    for j, name in enumerate(v.runs):
        acc = Rate.of(int(cols[0][:, j].sum()), int(cols[1][:, j].sum()))
        wo = Rate.of(int(cols[2][:, j].sum()), int(cols[3][:, j].sum()))
        if acc.value is not None and not np.isnan(lo_a[j]):
            acc.ci = (float(lo_a[j]), float(hi_a[j]))
        if wo.value is not None and not np.isnan(lo_w[j]):
            wo.ci = (float(lo_w[j]), float(hi_w[j]))
        diff = None if acc.value is None or wo.value is None else wo.value - acc.value
        ci = (float(lo_d[j]), float(hi_d[j])) if diff is not None and not np.isnan(lo_d[j]) else None
        out.append(RunAccuracy(name, acc, wo, diff, ci))
    out.sort(key=lambda a: (-(a.diff if a.diff is not None else -np.inf), a.run))
    return out


# --------------------------------------------------------------------------- all of it


def item_health(benchmark: str, items: Any, lay: outcomes.Layout, preds: Mapping[str, outcomes.Preds],
                hashes: Mapping[str, int | None] | None = None, *, annotators: Sequence[str] | None = None,
                split: str | None = "test", count_unanswered: bool = False, draws: int = DEFAULT_DRAWS,
                seed: int = stats.DEFAULT_SEED, progress: Progress = _quiet) -> ItemHealth:
    """The item health of a benchmark: `items` (its frame, the rows of `lay`), every run's Preds, the perceptual
    hash of each image (content hash -> phash or None; without it, only identical images are duplicates);
    `annotators` the runs read as annotators of the items' letters (suspect gold, ambiguity, discrimination;
    default every run: the caller leaves out the runs that never saw the item, baselines and text-only runs);
    `split` the split whose accuracies are shown (core.scoring's rule), `count_unanswered` the family's
    `unanswered_is_wrong`."""
    from core.scoring import resolve_split

    every = votes(lay, preds, progress)
    v = every if annotators is None else every.only(annotators)
    options = option_masks(items["letters"].tolist())
    progress("fitting the Dawid-Skene model", 0.55)
    post, reliability = dawid_skene(v, options)
    suspects = suspect_gold(v, lay, post)
    progress("unstable and ambiguous items", 0.65)
    flips, n_flip_tested = unstable(every, lay)
    amb = ambiguous(v, lay)
    progress("discrimination", 0.75)
    neg, n_neg_tested = negative_discrimination(v, lay)
    dups = duplicates(lay, items["images"].tolist(), items["split"].astype(str).tolist(), hashes or {})
    progress("accuracy without the suspects", 0.85)
    chosen, label = resolve_split(items, split)
    scored = np.ones(len(items), dtype=bool) if chosen is None else (items["split"] == chosen).to_numpy(dtype=bool)
    marked = np.isin(lay.item_ids, [s.item_id for s in suspects])
    accs = accuracy_without(every, lay, scored, marked, count_unanswered, draws, seed)
    progress("done", 1.0)
    counts = {"annotators": len(v.runs), "suspect_gold": len(suspects), "unstable": len(flips), "ambiguous": len(amb),
              "negative_discrimination": len(neg), "duplicates": len(dups), "unstable_tested": n_flip_tested,
              "negative_discrimination_tested": n_neg_tested}
    return ItemHealth(benchmark, len(lay.item_ids), len(every.runs), label, tuple(suspects[:LIST_MAX]),
                      tuple(flips[:LIST_MAX]), tuple(amb[:LIST_MAX]), tuple(neg[:LIST_MAX]), tuple(dups[:LIST_MAX]),
                      tuple(accs), counts, {name: float(a) for name, a in zip(v.runs, reliability, strict=True)})
