"""Randomized-response mechanisms, each one nothing but a channel matrix with labels.

The matrix ``Q[reported, true]`` is the single source of truth: ε, the estimator, the interval and
what a respondent's browser samples are all derived from it, so a design can never claim one privacy
level while sampling another (the OpenDP #480 class of bug, where the truth probability silently
exceeded the configured one). The named designs below only build a matrix and remember the
parameters they were built from, so that a survey can store and show them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .interface import Codes

if TYPE_CHECKING:
    from .estimation import Estimate

__all__ = [
    "CoinFlip",
    "ForcedResponse",
    "GeneralizedRR",
    "Mechanism",
    "ParameterError",
    "UnrelatedQuestion",
    "Warner",
    "epsilon_of_matrix",
    "mechanism_from_dict",
]

#: Columns must sum to 1 within this tolerance; they are then renormalized exactly.
COLUMN_SUM_TOLERANCE = 1e-9
#: Matrices with a condition number above this are treated as singular: their inverse would turn
#: sampling noise into meaningless estimates.
MAX_CONDITION_NUMBER = 1e10

YES_NO = ("yes", "no")


class ParameterError(ValueError):
    """A design parameter the mechanism cannot be built with.

    ``parameter`` names it as the spec's ``privacy`` object does (``"p"``, ``"yes_probability"``,
    ``"epsilon"``, ``"forced"``, ...) and ``index`` is the option for a per-option parameter, so that
    callers can put the message next to the input it is about without reading the message.
    """

    def __init__(self, parameter: str, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter
        self.index = index


def _check_probability(
    name: str,
    value: float,
    *,
    low: float = 0.0,
    high: float = 1.0,
    parameter: str | None = None,
    index: int | None = None,
) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(parameter or name, f"{name} must be a number, got {value!r}", index) from None
    if not math.isfinite(value) or not low <= value <= high:
        raise ParameterError(parameter or name, f"{name} must be between {low:g} and {high:g}, got {value!r}", index)
    return value


def _check_epsilon(epsilon: float) -> float:
    try:
        epsilon = float(epsilon)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError("epsilon", f"epsilon must be a number, got {epsilon!r}") from None
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ParameterError("epsilon", f"epsilon must be a finite number greater than 0, got {epsilon!r}")
    return epsilon


def _coin_truth_from_epsilon(epsilon: float, f: float, name: str) -> float:
    """The first coin's truth probability ``p`` of a coin-flip matrix with forced-"yes" chance ``f`` and
    the given ε: ε = ``ln(1 + p / ((1 − p)·min(f, 1 − f)))``, so ``p = m(e^ε − 1) / (1 + m(e^ε − 1))``
    with ``m = min(f, 1 − f)``; ``f`` of 0 or 1 has no finite ε."""
    eps = _check_epsilon(epsilon)
    f = _check_probability(name, f)
    m = min(f, 1.0 - f)
    if m == 0.0:
        raise ParameterError(name, f"with {name} 0 or 1 only one answer is protected: ε is infinite")
    # p = 1 / (1 + 1/(m(e^ε − 1))), written with e^−ε so that no ε overflows; a tiny ε and a tiny
    # m can underflow the denominator, and then the first coin would never show the truth
    denominator = m * -math.expm1(-eps)
    truth = 1.0 / (1.0 + math.exp(-eps) / denominator) if denominator > 0.0 else 0.0
    if truth <= 0.0:
        raise ParameterError(
            "epsilon",
            f"ε = {eps:g} is too small with {name} {f:g}: the answers would carry no information",
        )
    return truth


def epsilon_of_matrix(matrix: np.ndarray) -> float:
    """ε of a channel matrix: the largest log-ratio between two entries of one reported row.

    A reported value that can arise from one true answer but not from another identifies the
    answer it came from, so a row mixing zero and non-zero entries has ε = ∞. A row of zeros (a
    value that is never reported) reveals nothing and is skipped.
    """
    worst = 0.0
    for row in np.asarray(matrix, dtype=float):
        high, low = row.max(), row.min()
        if high == 0.0:
            continue
        if low == 0.0:
            return math.inf
        worst = max(worst, math.log(high / low))
    return worst


class Mechanism:
    """A randomized-response design given by its channel matrix: the one implementation, today, of
    the general mechanism interface (:class:`~.interface.Randomizer`: ``epsilon``, ``reports``,
    ``sampler()``, ``estimate()``), which is all the respondent's page and browser ask of it.

    ``matrix[r, t]`` is the probability that a respondent whose true answer is category ``t``
    reports category ``r``; every column sums to 1. The reported and the true answers share the
    same ``labels``, in the same order, which is also the order of counts passed to
    :func:`survey.privacy.estimate`.

    Any square, invertible stochastic matrix is accepted, so designs the named classes do not cover
    (a researcher's custom scheme, an unrelated-question variant) are first-class::

        >>> m = Mechanism([[0.8, 0.1], [0.2, 0.9]], labels=["yes", "no"])
        >>> round(m.epsilon, 4)
        2.0794

    Attributes
    ----------
    matrix : numpy.ndarray
        The ``k × k`` channel matrix (read-only).
    labels : tuple of str
        Category names, in matrix order.
    epsilon : float
        The local differential-privacy guarantee, computed from the matrix; ``math.inf`` when some
        report rules out a true answer (one-sided deniability).
    """

    design = "custom"

    def __init__(self, matrix: Any, labels: Sequence[str] | None = None) -> None:
        try:
            q = np.array(matrix, dtype=float)
        except (TypeError, ValueError):
            raise ValueError("the matrix must be a square table of numbers") from None
        if q.ndim != 2 or q.shape[0] != q.shape[1]:
            raise ValueError(f"the matrix must be square (reported × true), got shape {q.shape}")
        k = q.shape[0]
        if k < 2:
            raise ValueError(f"a question needs at least 2 categories, got {k}")
        if not np.all(np.isfinite(q)):
            raise ValueError("every matrix entry must be a finite number")
        if q.min() < 0.0 or q.max() > 1.0:
            raise ValueError("every matrix entry is a probability and must lie in [0, 1]")
        sums = q.sum(axis=0)
        bad = np.flatnonzero(np.abs(sums - 1.0) > COLUMN_SUM_TOLERANCE)
        if bad.size:
            t = int(bad[0])
            raise ValueError(
                f"column {t} (true answer {t}) sums to {sums[t]:.6g}; each column holds the "
                "probabilities of every report for one true answer and must sum to 1"
            )
        q = q / sums
        if np.linalg.matrix_rank(q) < k or np.linalg.cond(q) > MAX_CONDITION_NUMBER:
            raise ValueError(
                "the matrix is singular: different true answers produce the same report "
                "probabilities, so their shares cannot be told apart from the reports"
            )
        if labels is None:
            labels = [str(i) for i in range(k)]
        labels = tuple(str(label) for label in labels)
        if len(labels) != k:
            raise ValueError(f"got {len(labels)} labels for a {k}-category matrix")
        if len(set(labels)) != k:
            raise ValueError("category labels must be distinct")
        q.setflags(write=False)
        self._matrix = q
        self._inverse = np.linalg.inv(q)
        self._inverse.setflags(write=False)
        self._labels = labels
        self._epsilon = epsilon_of_matrix(q)

    # -- what every design has -------------------------------------------------------------------

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix

    @property
    def inverse(self) -> np.ndarray:
        """``Q⁻¹``, which maps reported shares to true shares (the unbiased estimator)."""
        return self._inverse

    @property
    def labels(self) -> tuple[str, ...]:
        return self._labels

    @property
    def k(self) -> int:
        """Number of categories."""
        return len(self._labels)

    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def one_sided(self) -> bool:
        """True when some report identifies the true answer (ε = ∞ although randomized).

        Forced response that only ever forces "yes" is the classic case: a "no" can only come from
        a true "no", so only "yes" answers are deniable. Pages must warn before allowing it.
        """
        return math.isinf(self._epsilon) and not self.is_identity

    @property
    def is_identity(self) -> bool:
        """True when the report always equals the truth: no protection at all."""
        return bool(np.array_equal(self._matrix, np.eye(self.k)))

    @property
    def reveals_everything(self) -> bool:
        """True when every report identifies the true answer: every entry is 0 or 1.

        The identity is one case; a permutation (Warner with ``p = 0`` always sends the opposite
        answer) is another: the reports are the answers, relabelled. Such a design protects nothing,
        and the spec and the builder's preview refuse it alike.
        """
        return bool(np.all((self._matrix == 0.0) | (self._matrix == 1.0)))

    @property
    def truth_probabilities(self) -> np.ndarray:
        """P(report equals the true answer), for each true answer (the matrix diagonal)."""
        return np.diag(self._matrix).copy()

    @property
    def truth_probability(self) -> float:
        """The chance that the report equals the true answer, at its lowest over true answers.

        Named designs override this with the parameter of the same name they were built with.
        """
        return float(np.diag(self._matrix).min())

    @property
    def parameters(self) -> dict[str, Any]:
        """The parameters the design was built from (for storing and showing)."""
        return {}

    # -- the general mechanism interface (survey.privacy.interface.Randomizer) ----------------------

    @property
    def reports(self) -> Codes:
        """The domain of reports: the option codes ``0 .. k-1``."""
        return Codes(self.k)

    def sampler(self) -> dict[str, Any]:
        """What the browser samples a report from: ``columns[t]``, the distribution of the report when
        the true answer is ``t`` (a column of the matrix). The browser holds no formula of its own."""
        return {"sampler": "columns", "columns": self._matrix.T.tolist()}

    def estimate(self, counts: Any) -> Estimate:
        """The estimator hook: :func:`~.estimation.estimate` of the reported ``counts`` (one per code)."""
        from .estimation import estimate  # estimation builds on this module

        return estimate(self, counts)

    # -- affine structure, which decides the interval ------------------------------------------

    def affine_coefficients(self, category: int) -> tuple[float, float] | None:
        """``(a, b)`` with P(report = category) = a·share(category) + b, if the design has it.

        That holds when every other true answer reports ``category`` with the same probability
        ``b`` (always for two categories, and for GRR and m-category forced response). The
        interval for such a category is the Wilson interval of the reported share, mapped through
        ``(λ − b) / a``; other categories fall back to the delta method.
        """
        row = self._matrix[category]
        others = np.delete(row, category)
        if np.ptp(others) > 1e-12:
            return None
        b = float(others.mean())
        a = float(row[category] - b)
        if abs(a) < 1e-12:
            return None
        return a, b

    # -- sampling --------------------------------------------------------------------------------

    def randomize(self, true_answers: Any, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Sample reported category indices for an array of true category indices.

        Uses the algorithm the browser uses: a uniform ``u`` in [0, 1), and the first reported
        value whose cumulative column probability exceeds ``u``. For simulation and the demo;
        real respondents are randomized in their own browser.
        """
        rng = np.random.default_rng(rng)
        truth = np.asarray(true_answers, dtype=np.intp)
        if truth.size and (truth.min() < 0 or truth.max() >= self.k):
            raise ValueError(f"true answers must be category indices in 0..{self.k - 1}")
        cumulative = np.cumsum(self._matrix, axis=0)  # k_r × k
        cumulative[-1, :] = 1.0
        u = rng.random(truth.shape)
        columns = cumulative[:, truth]  # k_r × shape
        return (u[np.newaxis, ...] >= columns).sum(axis=0).astype(np.intp)

    # -- serialization ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: design name, its parameters, labels and the matrix."""
        return {
            "design": self.design,
            **self.parameters,
            "labels": list(self._labels),
            "matrix": self._matrix.tolist(),
            "epsilon": None if math.isinf(self._epsilon) else self._epsilon,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mechanism):
            return NotImplemented
        return self._labels == other._labels and np.allclose(self._matrix, other._matrix, atol=1e-12)

    def __hash__(self) -> int:
        return hash((self._labels, self._matrix.round(12).tobytes()))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        if not params:
            params = f"matrix={self._matrix.tolist()!r}"
        return f"{type(self).__name__}({params}, labels={list(self._labels)!r}) [ε={self._epsilon:.4g}]"


class CoinFlip(Mechanism):
    """The two-coin survey of the seed documents (forced response on a yes/no question).

    The first coin decides whether the respondent answers truthfully (``truth_probability``);
    otherwise a second coin forces the answer "yes" with ``yes_probability`` and "no" otherwise.
    ``CoinFlip(0.5, 0.5)`` is the seed survey: P(yes) = 1/4 + θ/2 and ε = ln 3.

    ``truth_probability`` is the first coin's parameter; the report still equals the truth more
    often than that, because a forced answer can coincide with it (see ``truth_probabilities``).
    ``yes_probability`` of 0 or 1 protects only one of the two answers (ε = ∞, see ``one_sided``).
    Categories are ``("yes", "no")`` in that order.
    """

    design = "coin_flip"

    def __init__(self, truth_probability: float = 0.5, yes_probability: float = 0.5) -> None:
        p = _check_probability("truth_probability", truth_probability)
        f = _check_probability("yes_probability", yes_probability)
        if p == 0.0:
            raise ParameterError(
                "truth_probability",
                "truth_probability must be above 0: if nobody answers truthfully the reports "
                "carry no information about the true answers",
            )
        self._p, self._f = p, f
        super().__init__(
            [[p + (1 - p) * f, (1 - p) * f], [(1 - p) * (1 - f), p + (1 - p) * (1 - f)]],
            labels=YES_NO,
        )

    @classmethod
    def from_epsilon(cls, epsilon: float, yes_probability: float = 0.5) -> CoinFlip:
        """The coin-flip design with the given ε and forced-"yes" probability.

        ε of the matrix is ``ln(1 + p / ((1 − p)·min(f, 1 − f)))``, so
        ``p = m(e^ε − 1) / (1 + m(e^ε − 1))`` with ``m = min(f, 1 − f)``; ``f`` of 0 or 1 has no
        finite ε.

            >>> round(CoinFlip.from_epsilon(math.log(3)).truth_probability, 12)
            0.5
        """
        return cls(_coin_truth_from_epsilon(epsilon, yes_probability, "yes_probability"), float(yes_probability))

    @property
    def truth_probability(self) -> float:
        return self._p

    @property
    def yes_probability(self) -> float:
        return self._f

    @property
    def parameters(self) -> dict[str, Any]:
        return {"truth_probability": self._p, "yes_probability": self._f}


class UnrelatedQuestion(CoinFlip):
    """The unrelated-question design: with probability ``1 − sensitive_probability`` the respondent
    answers an innocuous question whose "yes" rate ``unrelated_yes_rate`` is known (for example
    "were you born in April?"). Its matrix is the coin-flip matrix with ``f = π_u``.
    """

    design = "unrelated_question"

    def __init__(self, sensitive_probability: float, unrelated_yes_rate: float) -> None:
        p = _check_probability("sensitive_probability", sensitive_probability)
        f = _check_probability("unrelated_yes_rate", unrelated_yes_rate)
        if p == 0.0:
            raise ParameterError("sensitive_probability", "sensitive_probability must be above 0")
        super().__init__(p, f)

    @classmethod
    def from_epsilon(cls, epsilon: float, unrelated_yes_rate: float = 0.5) -> UnrelatedQuestion:  # type: ignore[override]
        """The unrelated-question design with the given ε at the unrelated question's known "yes" rate:
        its matrix is the coin flip's with ``f = π_u``, so ``p`` follows as in :meth:`CoinFlip.from_epsilon`.

            >>> round(UnrelatedQuestion.from_epsilon(math.log(3), 0.5).sensitive_probability, 12)
            0.5
        """
        p = _coin_truth_from_epsilon(epsilon, unrelated_yes_rate, "unrelated_yes_rate")
        return cls(p, float(unrelated_yes_rate))

    @property
    def sensitive_probability(self) -> float:
        return self._p

    @property
    def unrelated_yes_rate(self) -> float:
        return self._f

    @property
    def parameters(self) -> dict[str, Any]:
        return {"sensitive_probability": self._p, "unrelated_yes_rate": self._f}


class Warner(Mechanism):
    """Warner's mirrored question (1965).

    With probability ``p`` the respondent answers the statement ("I have used drug X"), otherwise
    its negation ("I have never used drug X"), so the report is the truth with probability ``p``.
    ``p`` must differ from 1/2 (then the reports say nothing). Categories are ``("yes", "no")``.
    """

    design = "warner"

    def __init__(self, p: float) -> None:
        p = _check_probability("p", p)
        if abs(p - 0.5) < 1e-9:
            raise ParameterError("p", "p must differ from 1/2: at 1/2 the report is independent of the truth")
        self._p = p
        super().__init__([[p, 1 - p], [1 - p, p]], labels=YES_NO)

    @classmethod
    def from_epsilon(cls, epsilon: float) -> Warner:
        """Warner's design with the given ε: ``p = e^ε / (1 + e^ε)`` (the statement more often than not)."""
        eps = _check_epsilon(epsilon)
        return cls(1.0 / (1.0 + math.exp(-eps)))

    @property
    def p(self) -> float:
        return self._p

    @property
    def truth_probability(self) -> float:
        return self._p

    @property
    def parameters(self) -> dict[str, Any]:
        return {"p": self._p}


def _check_unrelated_text(text: Any) -> str:
    if not isinstance(text, str):
        raise ParameterError("unrelated_question", f"the unrelated question must be text, got {text!r}")
    return text.strip()


class _CombinedQuestion:
    """What the two non-randomized response designs share: an unrelated question with a known "yes"
    rate ``_p`` and its words ``_text``, and nothing drawn in the page."""

    _p: float
    _text: str

    @property
    def unrelated_yes_rate(self) -> float:
        return self._p

    @property
    def unrelated_question(self) -> str:
        return self._text

    @property
    def parameters(self) -> dict[str, Any]:
        return {"unrelated_yes_rate": self._p, "unrelated_question": self._text}

    def sampler(self) -> dict[str, Any]:
        """Nothing is drawn: the respondent answers the combined question and its code is the report
        (``"combined"``; a page that does not know it refuses to send anything)."""
        return {"sampler": "combined"}


class Crosswise(_CombinedQuestion, Warner):
    """The crosswise model (Yu, Tian & Tang 2008), a non-randomized response design.

    The respondent is asked the sensitive question and an unrelated one whose "yes" rate
    ``unrelated_yes_rate`` (``p``) is known ("is your mother's birthday in January–March?") and
    says only whether their two answers are the SAME or DIFFERENT. Nothing is drawn at random: the
    unrelated answer is the noise. Reporting "same" is code 0 (the ``"yes"`` row), "different"
    code 1, so P("same" | yes) = p and P("same" | no) = 1 − p: Warner's matrix with that ``p``,
    and ε = |ln(p / (1 − p))|. ``p`` lies strictly between 0 and 1 and differs from 1/2.

        >>> Crosswise(0.25).matrix.tolist()
        [[0.25, 0.75], [0.75, 0.25]]
    """

    design = "crosswise"

    def __init__(self, unrelated_yes_rate: float, unrelated_question: str = "") -> None:
        p = _check_probability("unrelated_yes_rate", unrelated_yes_rate)
        if p in (0.0, 1.0):
            raise ParameterError(
                "unrelated_yes_rate",
                "the unrelated question's “yes” rate must lie strictly between 0 and 1: at 0 or 1 “same” "
                "gives the answer away",
            )
        if abs(p - 0.5) < 1e-9:
            raise ParameterError(
                "unrelated_yes_rate",
                "the unrelated question's “yes” rate must differ from 1/2: at 1/2 “same” says nothing",
            )
        self._text = _check_unrelated_text(unrelated_question)
        super().__init__(p)


class Triangular(_CombinedQuestion, Mechanism):
    """The triangular model (Yu, Tian & Tang 2008), a non-randomized response design.

    The respondent picks the "circle" if their answers to the sensitive question and to an unrelated
    one (known "yes" rate ``p``) are both "no", and the "triangle" otherwise. The triangle is code 0
    (the ``"yes"`` row): P(triangle | yes) = 1, P(triangle | no) = p. A circle can only come from a
    true "no", so only "yes" is protected: one-sided (ε = ∞). ``p`` lies strictly between 0 and 1.

        >>> Triangular(0.25).matrix.tolist()
        [[1.0, 0.25], [0.0, 0.75]]
    """

    design = "triangular"

    def __init__(self, unrelated_yes_rate: float, unrelated_question: str = "") -> None:
        p = _check_probability("unrelated_yes_rate", unrelated_yes_rate)
        if p in (0.0, 1.0):
            raise ParameterError(
                "unrelated_yes_rate",
                "the unrelated question's “yes” rate must lie strictly between 0 and 1 (at 0 the answer is "
                "sent as it is; at 1 everyone picks the triangle)",
            )
        self._p = p
        self._text = _check_unrelated_text(unrelated_question)
        super().__init__([[1.0, p], [0.0, 1.0 - p]], labels=YES_NO)


class GeneralizedRR(Mechanism):
    """Generalized randomized response (k-RR, direct encoding) for a question with ``k`` options.

    The respondent reports the true option with ``truth_probability`` and each other option with
    ``(1 − truth_probability)/(k − 1)``. Give exactly one of ``epsilon`` (then
    ``truth_probability = e^ε / (e^ε + k − 1)``, the most accurate design with that ε) or
    ``truth_probability`` in (1/k, 1]. ``k`` may be given as the list of option labels.

        >>> round(GeneralizedRR(4, epsilon=1).truth_probability, 5)
        0.47537
    """

    design = "grr"

    def __init__(
        self,
        k: int | Sequence[str],
        *,
        epsilon: float | None = None,
        truth_probability: float | None = None,
        labels: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(k, (int, np.integer)):
            if labels is not None:
                raise ValueError("give the options either as k or as labels, not both")
            labels = [str(label) for label in k]
            k = len(labels)
        k = int(k)
        if k < 2:
            raise ValueError(f"k must be at least 2 options, got {k}")
        if (epsilon is None) == (truth_probability is None):
            raise ValueError("give exactly one of epsilon and truth_probability")
        if epsilon is not None:
            try:
                epsilon = float(epsilon)
            except (TypeError, ValueError, OverflowError):
                raise ParameterError("epsilon", f"epsilon must be a number in range, got {epsilon!r:.40}") from None
            if math.isnan(epsilon) or epsilon <= 0:
                raise ParameterError("epsilon", f"epsilon must be greater than 0, got {epsilon!r}")
            if math.isinf(epsilon):
                p, q = 1.0, 0.0
            else:
                # e^ε/(e^ε + k − 1) and q = p·e^−ε, written to keep q exact for large ε
                p = 1.0 / (1.0 + (k - 1) * math.exp(-epsilon))
                q = p * math.exp(-epsilon)
        else:
            p = _check_probability("truth_probability", truth_probability)
            if p <= 1.0 / k:
                raise ParameterError(
                    "truth_probability",
                    f"truth_probability must be above 1/k = {1 / k:.4g}: at or below it the "
                    "true option is reported no more often than any other",
                )
            q = (1.0 - p) / (k - 1)
        matrix = np.full((k, k), q)
        np.fill_diagonal(matrix, p)
        self._p = p
        super().__init__(matrix, labels=labels)

    @property
    def truth_probability(self) -> float:
        return self._p

    @property
    def parameters(self) -> dict[str, Any]:
        return {"truth_probability": self._p}


class ForcedResponse(Mechanism):
    """Forced response with several categories (RRreg's ``FR`` design).

    With probability ``forced[j]`` the respondent is told to report category ``j`` whatever the
    truth; otherwise (probability ``1 − sum(forced)``) they report the truth. The matrix is
    ``(1 − Σc)·I + c·1ᵀ``. A category with zero forcing probability is not deniable (ε = ∞).
    """

    design = "forced_response"

    def __init__(self, forced: Sequence[float], labels: Sequence[str] | None = None) -> None:
        try:
            values = list(forced)
        except TypeError:
            raise ParameterError("forced", "forced must be a list of probabilities, one per option") from None
        c = np.array([_check_probability(f"forced[{j}]", x, parameter="forced", index=j) for j, x in enumerate(values)])
        if c.size < 2:
            raise ParameterError("forced", f"a question needs at least 2 categories, got {c.size}")
        if c.sum() >= 1.0:
            raise ParameterError(
                "forced",
                f"the forced probabilities sum to {c.sum():.4g}; they must leave a chance of "
                "answering truthfully (sum below 1)",
            )
        self._forced = c
        super().__init__((1.0 - c.sum()) * np.eye(c.size) + np.outer(c, np.ones(c.size)), labels)

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int, labels: Sequence[str] | None = None) -> ForcedResponse:
        """Forced response with the same forcing probability ``c`` for each of ``k`` options and the
        given ε. Its matrix has ``1 − kc + c`` on the diagonal and ``c`` elsewhere, so
        ``ε = ln((1 − kc + c)/c)`` and ``c = 1/(e^ε + k − 1)`` (below ``1/k`` for every ε > 0: a
        chance of answering truthfully is left). The matrix is GRR's at the same ε.

            >>> round(ForcedResponse.from_epsilon(math.log(3), 2).parameters["forced"][0], 12)
            0.25
        """
        eps = _check_epsilon(epsilon)
        if int(k) < 2:
            raise ParameterError("forced", f"a question needs at least 2 categories, got {k}")
        # 1/(e^ε + k − 1), written with e^−ε so that no ε overflows
        c = math.exp(-eps) / (1.0 + (int(k) - 1) * math.exp(-eps))
        return cls([c] * int(k), labels=labels)

    @property
    def truth_probability(self) -> float:
        """The chance of being told to answer truthfully, ``1 − sum(forced)``."""
        return float(1.0 - self._forced.sum())

    @property
    def parameters(self) -> dict[str, Any]:
        return {"forced": self._forced.tolist()}


def mechanism_from_dict(spec: Mapping[str, Any]) -> Mechanism:
    """Rebuild a mechanism from :meth:`Mechanism.to_dict` output (or a hand-written spec).

    Named designs are rebuilt from their parameters by their entry in the registry
    (:data:`survey.privacy.designs.DESIGNS`); when a stored ``matrix`` is present it must agree with
    them, so a frozen design cannot drift from the matrix its reports were made under. A
    ``"custom"`` design is its matrix. A design of numbers has no matrix and is not rebuilt here
    (:func:`~.numeric.number_mechanism_from_dict` rebuilds those).
    """
    from .designs import DESIGNS  # the registry builds on the classes above

    if not isinstance(spec, Mapping):
        raise ValueError("a design must be an object with a 'design' field")
    design = spec.get("design")
    labels = spec.get("labels")
    matrices = {name: entry for name, entry in DESIGNS.items() if not entry.numbers}
    entry = matrices.get(design) if isinstance(design, str) else None
    if entry is not None:
        mech = entry.mechanism(spec, labels)
    elif design == Mechanism.design:
        if "matrix" not in spec:
            raise ValueError("a custom design needs its matrix")
        mech = Mechanism(spec["matrix"], labels=labels)
    else:
        known = sorted([*matrices, Mechanism.design])
        raise ValueError(f"unknown design {design!r}; known: {', '.join(known)}")
    if labels is not None and tuple(str(x) for x in labels) != mech.labels:
        raise ValueError(f"labels {list(labels)!r} do not match the design's {list(mech.labels)!r}")
    if "matrix" in spec and design != Mechanism.design:
        stored = np.asarray(spec["matrix"], dtype=float)
        if stored.shape != mech.matrix.shape or not np.allclose(stored, mech.matrix, atol=1e-12):
            raise ValueError("the stored matrix does not match the design's parameters")
    return mech
