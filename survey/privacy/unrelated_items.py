"""Unrelated questions with a known "yes" rate, for the non-randomized response designs (crosswise and
triangular, Yu, Tian & Tang 2008): the builder offers them as presets, and the organizer may edit the
text and the rate or type their own.

Each rate is derived, not measured: from the calendar (days in the months named, of a 365-day year;
births are spread nearly evenly over the year, within a few percent by month in most countries) or
from digits that are close to uniform. The derivation is stated with each, so an organizer can judge
whether it holds for their population (a leap year, a country's seasonal births, a phone plan that
assigns numbers in blocks all move these by a little).

    >>> round(ITEMS["mother_birthday_jan_mar"].rate, 4)
    0.2466
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnrelatedItem:
    """A preset unrelated question: its id, its text, its "yes" rate and where the rate comes from."""

    id: str
    text: str
    rate: float
    source: str


ITEM_LIST: tuple[UnrelatedItem, ...] = (
    UnrelatedItem(
        "mother_birthday_jan_mar",
        "Is your mother's birthday in January, February or March?",
        90 / 365,
        "Calendar: January to March have 31 + 28 + 31 = 90 of the year's 365 days (90/365 = 0.2466), "
        "births being spread nearly evenly over the year.",
    ),
    UnrelatedItem(
        "mother_birthday_jan_apr",
        "Is your mother's birthday in January, February, March or April?",
        120 / 365,
        "Calendar: January to April have 31 + 28 + 31 + 30 = 120 of the year's 365 days (120/365 = 0.3288).",
    ),
    UnrelatedItem(
        "father_birthday_oct_dec",
        "Is your father's birthday in October, November or December?",
        92 / 365,
        "Calendar: October to December have 31 + 30 + 31 = 92 of the year's 365 days (92/365 = 0.2521).",
    ),
    UnrelatedItem(
        "phone_last_digit_0_2",
        "Is the last digit of your phone number 0, 1 or 2?",
        0.3,
        "Digits: the last digit of a phone number is close to uniform over 0–9, so 3 digits of 10 (0.3).",
    ),
)

#: Id → item, in :data:`ITEM_LIST` order.
ITEMS: dict[str, UnrelatedItem] = {item.id: item for item in ITEM_LIST}

#: The item the builder starts with.
DEFAULT_ITEM = ITEM_LIST[0]
