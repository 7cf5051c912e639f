"""The bounds of a survey's planning figures, shared by the spec and the builder's live preview.

The spec (:func:`survey.domain.surveys.specs.parse_planning`) decides what a saved survey may hold; the preview
(:mod:`survey.domain.surveys.preview`) shows figures while the organizer types. Both read the bounds from
here, so the preview never computes with a margin the survey would refuse, nor refuses one it would
keep. Pure values: no Flask, no database, no privacy core.
"""

from __future__ import annotations

from survey.domain.messages import message

#: The smallest target margin of error, 0.1 percentage points. Far smaller margins ask for more
#: respondents than there are people, and below about 1e-154 the sample size divides by zero.
MIN_TARGET_MARGIN = 0.001
#: A margin is a share: below 1.
MAX_TARGET_MARGIN = 1.0
TARGET_MARGIN_RULE = message("rule.target_margin", least=MIN_TARGET_MARGIN)


#: What a new survey plans with until its organizer says otherwise.
DEFAULT_RESPONDENTS = 1000
DEFAULT_TARGET_MARGIN = 0.05
#: Expected respondents: a whole number from 1 to this.
MAX_RESPONDENTS = 100_000_000
#: A cap on the total ε is a number above 0 and below this (no cap at all is the way to say "none").
MAX_EPSILON_CAP = 1e6
EPSILON_CAP_RULE = message("rule.epsilon_cap")
#: Planning figures are computed at the worst case of a yes/no question, a true share of 50%, at 95%.
PLANNING_SHARE = 0.5
PLANNING_LEVEL = 0.95


def epsilon_cap_ok(value: float) -> bool:
    return 0 < value < MAX_EPSILON_CAP


def target_margin_ok(value: float) -> bool:
    """Whether ``value`` is a target margin a survey may plan with (NaN is not)."""
    return MIN_TARGET_MARGIN <= value < MAX_TARGET_MARGIN
