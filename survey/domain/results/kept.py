"""Numbers computed from counts, kept while the counts they came from are the same.

A results page turns a survey's tallies into estimates and, per question, a timeline: the estimate
and live interval after each day, one estimate and one confidence sequence over every day so far.
That is most of the page's time, and it is the same on every view until a submission arrives. What
is kept here is keyed on everything the numbers are a function of: the mechanism (its class and its
matrix, bytes), the level, the option, and the counts themselves (bytes, with the days they fall on),
read from the tallies on every request. So a kept result can never be stale: a new submission, a
re-dated batch (:mod:`survey.domain.responses.mixing`) or a repaired tally changes the counts read,
hence the key, and the numbers are computed afresh. Nothing is kept across processes, and nothing
but numbers (no rows, no ORM objects): the key's digest and a few lists of floats per question.
A randomized number's bins (:func:`kept_bins`: the fit, tens of milliseconds) and its means and
differences by group (:func:`survey.domain.results.number_analysis.compare_number`) are kept the
same way, keyed on the counts they read.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from survey.privacy import ConfidenceSequence, Estimate, Mechanism, confidence_sequence, estimate
from survey.privacy.number_bins import BinShares, pooled_counts, randomized_bin_shares
from survey.privacy.numeric import NumberMechanism

T = TypeVar("T")

#: How many results a process keeps: a page of 25 questions, a few surveys watched at once.
KEPT = 512
_kept: OrderedDict[bytes, Any] = OrderedDict()
_lock = threading.Lock()


def mechanism_key(mechanism: Mechanism) -> bytes:
    """What an estimate depends on of the mechanism: its class and its matrix."""
    matrix = np.ascontiguousarray(mechanism.matrix, dtype=float)
    return type(mechanism).__qualname__.encode() + repr(matrix.shape).encode() + matrix.tobytes()


def digest(parts: Iterable[bytes | str | float | int]) -> bytes:
    """One key of ``parts`` (each part's type and length are in it, so no two lists collide by
    concatenation)."""
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        raw = part if isinstance(part, bytes) else repr(part).encode()
        h.update(type(part).__name__.encode() + len(raw).to_bytes(8, "little") + raw)
    return h.digest()


def kept(key: bytes, compute: Callable[[], T]) -> T:
    """``compute()``, or what it returned before for ``key`` (which must say everything it depends
    on). The least recently used results go first beyond :data:`KEPT`."""
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    value = compute()  # outside the lock: two requests may compute the same thing; both get it right
    with _lock:
        _kept[key] = value
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return value


def _counts_key(counts: np.ndarray) -> bytes:
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    return repr(counts.shape).encode() + counts.tobytes()


def kept_estimate(
    mechanism: Mechanism, counts: np.ndarray, compute: Callable[[Mechanism, np.ndarray], Estimate] = estimate
) -> Estimate:
    """``compute(mechanism, counts)`` (:func:`survey.privacy.estimate`), kept while the counts are the
    same (an estimate is never changed once made: its intervals are computed once, handed out as
    copies)."""
    key = digest(["estimate", mechanism_key(mechanism), _counts_key(counts)])
    return kept(key, lambda: compute(mechanism, np.array(counts)))


def kept_sequence(mechanism: Mechanism, counts: np.ndarray, level: float) -> ConfidenceSequence:
    """:func:`survey.privacy.confidence_sequence` of ``counts``, kept while they are the same."""
    key = digest(["sequence", mechanism_key(mechanism), level, _counts_key(counts)])
    return kept(key, lambda: confidence_sequence(mechanism, np.array(counts), level))


def kept_bins(
    mechanism: NumberMechanism, counts: Mapping[int, float], edges: Sequence[float], level: float
) -> BinShares:
    """:func:`survey.privacy.number_bins.randomized_bin_shares` of a randomized number's tallies
    (``{code: count}``), kept while what the fit reads is the same: the mechanism (its class and
    fields), the edges, the level, the codes pooled as the fit pools them, and n. The fit costs tens
    of milliseconds whatever n (a convex program over the code runs); a page read again before a
    new report arrives costs a dictionary look-up (``benchmarks/number_scale.md``)."""
    pooled = np.ascontiguousarray(pooled_counts(counts), dtype=float)
    n = round(float(sum(counts.values())))
    key = digest(["bins", repr(mechanism), repr(tuple(float(e) for e in edges)), level, n, pooled.tobytes()])
    return kept(key, lambda: randomized_bin_shares(mechanism, counts, edges, level))


def forget() -> None:
    """Drop everything kept (for tests and benchmarks that time the computation itself)."""
    with _lock:
        _kept.clear()
