"""Built-in baselines (SPEC §6; 000 §5, App. A "Random and human reference rows", Table 10).

Every baseline is fitted on the train split only, then answers a task with a *shown* letter (the letter in
the order the options are shown under the task's rotation); the engine maps it back like any model answer.

- random: uniform over the item's letters, seeded per key: Random(f"{seed}|{item}|{rotation}|{repeat}").
- majority: the train-majority gold letter (per item kind; FrameEvidence Table 10 fits on FQ2 train only,
  which per-kind fitting reproduces for FQ2 items).
- count: majority gold letter per image count (per kind).
- count-insufficiency: majority gold letter per (image count, letter of meta.insufficient_option).
- tfidf: character TF-IDF (1-3 grams, sublinear tf) over question + options, multinomial logistic regression
  (scikit-learn, lbfgs, C=1, fixed) predicting the gold letter; fitted on train, argmax over the item's letters.

Metadata rules (Table 10 wording): ties break in alphabetic letter order; a feature value unseen in train
falls back to the kind's training majority, and a kind unseen in train to the global training majority.
Positional rules answer with a shown letter: "always B" stays "always B" under rotation, and the
insufficiency-letter feature is read from the shown options.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from core.errors import RunnerError
from core.runners.base import RunnerBase, Task

BASELINES = ("random", "majority", "count", "count-insufficiency", "tfidf")


def _majority(letters: list[str]) -> str:
    counts = Counter(letters)
    best = max(counts.values())
    return min(letter for letter, c in counts.items() if c == best)


def _insufficient_shown(task: Task) -> str | None:
    """The shown letter of the insufficient-information option (rotation applied), or None."""
    letter = task.view.meta.get("insufficient_option")
    letters = task.view.letters
    if not letter or letter not in letters:
        return None
    return letters[(letters.index(letter) + task.rotation) % len(letters)]


def _option_text(question: str, options: dict[str, str]) -> str:
    return question + "\n" + "\n".join(f"{k}. {v}" for k, v in options.items())


class Baseline(RunnerBase):
    """A fitted baseline; `answer(task)` returns the shown letter."""

    def __init__(self, name: str, items: Any, seed: int) -> None:
        if name not in BASELINES:
            raise RunnerError(f"unknown baseline {name!r}; expected one of {', '.join(BASELINES)}")
        self.name, self.seed = name, seed
        train = items[items["split"] == "train"]
        if name != "random" and train.empty:
            raise RunnerError(f"baseline {name!r} is fitted on the train split, and this benchmark has no train items")
        self.fitted: dict[Any, str] = {}
        if name == "random":
            return
        self.global_majority = _majority([str(a) for a in train["answer"]])
        self.kind_majority = {str(k): _majority([str(a) for a in g["answer"]]) for k, g in train.groupby("kind")}
        if name in ("count", "count-insufficiency"):
            table: dict[tuple[str, Any], list[str]] = {}
            for _, r in train.iterrows():
                table.setdefault((str(r["kind"]), self._feature(r["n_images"], r["meta"].get("insufficient_option"))),
                                 []).append(str(r["answer"]))
            self.fitted = {k: _majority(v) for k, v in table.items()}
        elif name == "tfidf":
            self._fit_tfidf(train)

    def _feature(self, n_images: int, insufficient: str | None) -> Any:
        return (int(n_images), insufficient or None) if self.name == "count-insufficiency" else int(n_images)

    def _fit_tfidf(self, train: Any) -> None:
        try:
            from sklearn.feature_extraction.text import TfidfVectorizer
            from sklearn.linear_model import LogisticRegression
        except ImportError as exc:  # pragma: no cover - scikit-learn is in requirements.txt
            raise RunnerError("the tfidf baseline needs scikit-learn: pip install scikit-learn") from exc
        texts = [_option_text(str(r["question"]), r["options"]) for _, r in train.iterrows()]
        labels = [str(a) for a in train["answer"]]
        self.vectorizer = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True)
        x = self.vectorizer.fit_transform(texts)
        self.classes = sorted(set(labels))
        self.model = None
        if len(self.classes) > 1:
            self.model = LogisticRegression(C=1.0, max_iter=2000).fit(x, labels)
            self.classes = [str(c) for c in self.model.classes_]

    def answer(self, task: Task) -> str:
        v, letters = task.view, task.view.letters
        if self.name == "random":
            rng = random.Random(f"{self.seed}|{v.item_id}|{task.rotation}|{task.repeat}")
            return rng.choice(letters)
        fallback = self.kind_majority.get(v.kind, self.global_majority)
        if self.name == "majority":
            letter = fallback
        elif self.name in ("count", "count-insufficiency"):
            feature = self._feature(len(v.images), _insufficient_shown(task))
            letter = self.fitted.get((v.kind, feature), fallback)
        else:
            letter = self._tfidf(task)
        return letter if letter in letters else letters[0]

    def _tfidf(self, task: Task) -> str:
        letters = task.view.letters
        if self.model is None:
            return self.classes[0]
        x = self.vectorizer.transform([_option_text(task.view.question, task.shown)])
        proba = self.model.predict_proba(x)[0]
        scored = [(p, c) for p, c in zip(proba, self.classes, strict=True) if c in letters]
        if not scored:
            return letters[0]
        best = max(p for p, _ in scored)
        return min(c for p, c in scored if p == best)
