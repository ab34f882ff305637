"""Generic-family group layout for Browse and Compare: a group is whatever `group_id` says."""

from __future__ import annotations

from core import outcomes as core_outcomes
from core.outcomes import GroupRules

# The item outcome is the metrics' (core.families.generic.metrics): the rotation-0 / repeat-0 prediction; an
# item without one is not answered (left out of the turnover).
EVERY_PREDICTION = False
UNANSWERED_IS_WRONG = False
PATTERNS = [
    ("some_wrong", "Group: some items wrong"),
    ("all_wrong", "Group: every item wrong"),
]


def summary_patterns(lay: core_outcomes.Layout, s: core_outcomes.RunSummary) -> None:
    """Groups with an answered item: some item wrong / every item wrong."""
    answered = s.n_answered > 0
    s.patterns["some_wrong"] = answered & (s.n_correct < lay.n_items)
    s.patterns["all_wrong"] = answered & (s.n_correct == 0)


RULES: GroupRules = GroupRules(summary_patterns, tuple(PATTERNS), EVERY_PREDICTION, UNANSWERED_IS_WRONG)
