"""Logistic regression of a randomized yes/no answer on direct covariates.

The true answer ``Z`` of a respondent with covariates ``x`` follows a logistic model,
``P(Z = 1 | x) = σ(xᵀβ)``; only the randomized report ``Y`` is seen, and for the outcome's design
``P(Y = 1 | Z) = a·Z + b`` (``a = P(report | true) − P(report | other)``, ``b = P(report | other)``:
every design of a yes/no question, and each category of GRR and m-category forced response), so

    P(Y = 1 | x) = b + a·σ(xᵀβ).

This is the model of ``rr::rrreg`` (forced design) and ``RRreg::RRlog``. Its log-likelihood is
maximized by Newton's method on the misclassification likelihood (Fisher scoring where the
observed information is not positive definite, step-halving so that every step raises the
likelihood), started from a few EM steps (the E-step's posterior ``P(Z = 1 | y, x)`` as a
fractional outcome of an ordinary logistic regression, as ``rr`` does), which are cheap and never
lower the likelihood. Standard errors come from the observed information at the maximum; Wald
intervals and tests, odds ratios ``exp(β)``, and predicted true shares with intervals computed on
the logit scale and mapped through σ (so they stay inside [0, 1]) follow from them.

Since the covariates of a survey are categorical or integers, the data are given as rows of
covariate patterns with counts (``weights``): the cost of a fit follows the number of distinct
patterns, never the number of respondents. Rows with the same pattern are merged first, so
passing one row per respondent is also fine, only slower to read in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special
from scipy.stats import chi2

from .estimation import _check_level
from .mechanisms import Mechanism

__all__ = ["RRLogisticResult", "rr_logistic"]

#: A linear predictor beyond this (|xᵀβ| > 20, a fitted share within 2e-9 of 0 or 1) at the
#: maximum means the likelihood rises towards infinite coefficients: separation.
_SEPARATION = 20.0
#: Convergence: the Newton decrement ``gᵀ I⁻¹ g / 2`` (what a Newton step promises) below this
#: many times the number of respondents (coefficients then within about 1e-9 of the maximum), or
#: a step below ``_STEP`` relative to the coefficients (the rounding floor).
_DECREMENT = 1e-18
_STEP = 1e-13
_EM_START = 5


def _expit(eta: np.ndarray) -> np.ndarray:
    return special.expit(eta)


class RRLogisticResult:
    """A fitted logistic regression of a randomized outcome, modelled on statsmodels' results.

    Built by :func:`rr_logistic`.

    Attributes
    ----------
    params : numpy.ndarray
        The coefficients β (log odds of the *true* answer), in ``names`` order.
    bse : numpy.ndarray
        Standard errors from the observed information at the maximum (the inverse of the negative
        Hessian of the log-likelihood); NaN when it is singular.
    cov_params : numpy.ndarray
        Their covariance matrix.
    names : tuple of str
        ``"const"`` first when an intercept was added, then the covariates' names.
    zvalues, pvalues : numpy.ndarray
        Wald statistics ``β / SE`` and their two-sided p-values.
    loglik : float
        The maximized log-likelihood of the reports.
    llnull, llr, llr_pvalue : float or None
        With an intercept: the log-likelihood of the intercept-only model, the likelihood-ratio
        statistic against it and its p-value (df = number of covariates).
    n : float
        Respondents (the sum of the weights).
    n_patterns : int
        Distinct covariate patterns the fit ran on.
    converged : bool
        Whether the maximum was reached; when False, ``reason`` says why and the estimates are the
        last iterate (for separation, coefficients growing without bound), not to be reported.
    reason : str
        Empty when converged.
    iterations : int
    information : str
        ``"observed"``, or ``"expected"`` where the observed information was not positive definite
        at the end (then the standard errors use Fisher's information instead).
    mechanism : Mechanism
    category : int
        The outcome: the category of the mechanism counted as "yes" (1 in ``reports``).
    a, b : float
        The design's ``P(report = category) = a·share + b``.
    """

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.zvalues = self.params / self.bse
        self.pvalues = 2.0 * special.ndtr(-np.abs(self.zvalues))

    def _z(self, level: float) -> float:
        return float(-special.ndtri((1.0 - _check_level(level)) / 2.0))

    def conf_int(self, level: float = 0.95) -> np.ndarray:
        """Wald intervals ``β ± z·SE`` for every coefficient, one row ``[low, high]`` each."""
        half = self._z(level) * self.bse
        return np.stack([self.params - half, self.params + half], axis=1)

    def odds_ratios(self, level: float = 0.95) -> np.ndarray:
        """``exp(β)`` with the exponentiated Wald interval: rows ``[odds ratio, low, high]``.

        The intercept's row is the odds of the true answer at covariates all 0, not a ratio.
        """
        low, high = self.conf_int(level).T
        with np.errstate(over="ignore"):
            return np.exp(np.stack([self.params, low, high], axis=1))

    def _design(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[None, :]
        if self.intercept:
            x = np.hstack([np.ones((x.shape[0], 1)), x])
        if x.shape[1] != self.params.size:
            columns = self.params.size - int(self.intercept)
            raise ValueError(f"expected {columns} covariate columns, got {x.shape[1] - int(self.intercept)}")
        return x

    def predict(self, x: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Predicted true shares ``σ(xᵀβ)`` for covariate rows ``x``, with intervals.

        ``x`` has the covariate columns the model was fitted with (without the intercept column
        when one was added). The interval is ``xᵀβ ± z·sqrt(xᵀ V x)`` on the logit scale, mapped
        through σ: inside [0, 1], and asymmetric near the ends where a symmetric one would leave
        them. Returns ``(share, low, high)``.
        """
        design = self._design(x)
        eta = design @ self.params
        se = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", design, self.cov_params, design), 0.0, None))
        half = self._z(level) * se
        return _expit(eta), _expit(eta - half), _expit(eta + half)

    def wald_test(self, columns: Sequence[int | str]) -> tuple[float, int, float]:
        """Joint Wald test that the named (or numbered) coefficients are all 0: ``(statistic, df, p)``.

        For a categorical covariate entered as indicators, this tests "the covariate does not
        matter" with all its indicators at once.
        """
        index = [self.names.index(c) if isinstance(c, str) else int(c) for c in columns]
        if not index:
            raise ValueError("name at least one coefficient")
        beta = self.params[index]
        cov = self.cov_params[np.ix_(index, index)]
        statistic = float(beta @ np.linalg.solve(cov, beta))
        return statistic, len(index), float(chi2.sf(statistic, len(index)))

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """A JSON-ready summary: one entry per coefficient, and the fit's figures (NaN becomes None)."""

        def number(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        low, high = self.conf_int(level).T
        ratios = self.odds_ratios(level)
        return {
            "level": level,
            "n": self.n,
            "n_patterns": self.n_patterns,
            "converged": self.converged,
            "reason": self.reason,
            "information": self.information,
            "loglik": number(self.loglik),
            "llr_pvalue": None if self.llr_pvalue is None else number(self.llr_pvalue),
            "coefficients": [
                {
                    "name": name,
                    "estimate": number(self.params[i]),
                    "standard_error": number(self.bse[i]),
                    "ci_low": number(low[i]),
                    "ci_high": number(high[i]),
                    "p_value": number(self.pvalues[i]),
                    "odds_ratio": number(ratios[i, 0]),
                    "odds_ratio_low": number(ratios[i, 1]),
                    "odds_ratio_high": number(ratios[i, 2]),
                }
                for i, name in enumerate(self.names)
            ],
        }

    def summary(self, level: float = 0.95) -> str:
        """A plain-text table: coefficient, SE, z, p, interval and odds ratio per row."""
        low, high = self.conf_int(level).T
        ratios = self.odds_ratios(level)
        width = max(8, *(len(name) for name in self.names))
        percent = f"{level * 100:g}%"
        lines = [
            f"Logistic regression of a randomized outcome ({self.mechanism.labels[self.category]!r} of "
            f"{type(self.mechanism).__name__}: P(report) = {self.b:.4g} + {self.a:.4g}·σ(xβ))",
            f"respondents {self.n:g}, covariate patterns {self.n_patterns}, log-likelihood {self.loglik:.4f}"
            + (f", LR test p = {self.llr_pvalue:.3g}" if self.llr_pvalue is not None else ""),
            ("converged" if self.converged else f"NOT CONVERGED: {self.reason}")
            + f" after {self.iterations} iterations; standard errors from the {self.information} information",
            f"{'':{width}}  {'coef':>9} {'std err':>9} {'z':>7} {'P>|z|':>7}  "
            f"{percent + ' interval':>21}  {'odds ratio':>10}",
        ]
        for i, name in enumerate(self.names):
            lines.append(
                f"{name:{width}}  {self.params[i]:9.4f} {self.bse[i]:9.4f} {self.zvalues[i]:7.2f} "
                f"{self.pvalues[i]:7.3f}  [{low[i]:9.4f}, {high[i]:9.4f}]  {ratios[i, 0]:10.4g}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        params = ", ".join(f"{name}={value:.4g}" for name, value in zip(self.names, self.params, strict=True))
        state = "" if self.converged else f", NOT CONVERGED: {self.reason}"
        return f"RRLogisticResult({params}; n={self.n:g}{state})"


# -- the likelihood on binomial patterns --------------------------------------------------------------


def _loglik(yes: np.ndarray, total: np.ndarray, mu: np.ndarray) -> float:
    """``Σ yes·log μ + (total − yes)·log(1 − μ)``, with 0·log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = special.xlogy(yes, mu) + special.xlogy(total - yes, 1.0 - mu)
    return float(value.sum())


def _derivatives(
    x: np.ndarray, yes: np.ndarray, total: np.ndarray, beta: np.ndarray, a: float, b: float
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Log-likelihood, score, observed and expected information at ``beta``."""
    eta = x @ beta
    p = _expit(eta)
    dp = p * (1.0 - p)  # dσ/dη
    mu = b + a * p
    ll = _loglik(yes, total, mu)
    no = total - yes
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(yes > 0, yes / mu, 0.0) - np.where(no > 0, no / (1.0 - mu), 0.0)  # dℓ/dμ
        second = -np.where(yes > 0, yes / mu**2, 0.0) - np.where(no > 0, no / (1.0 - mu) ** 2, 0.0)
        fisher = np.where(total > 0, total / (mu * (1.0 - mu)), 0.0)
    slope = a * dp  # dμ/dη
    curve = a * dp * (1.0 - 2.0 * p)  # d²μ/dη²
    score = x.T @ (first * slope)
    observed_weight = -(second * slope**2 + first * curve)
    expected_weight = np.nan_to_num(fisher * slope**2)
    observed = (x.T * observed_weight) @ x
    expected = (x.T * expected_weight) @ x
    return ll, score, observed, expected


def _em_steps(
    x: np.ndarray, yes: np.ndarray, total: np.ndarray, beta: np.ndarray, a: float, b: float, steps: int
) -> np.ndarray:
    """EM for the misclassification model, each M-step one Newton step of a fractional logistic fit.

    E-step: ``P(Z = 1 | Y, x)`` is ``(a + b)·p/μ`` after a report of the category and
    ``(1 − a − b)·p/(1 − μ)`` after another, so a pattern's expected number of true "yes" is
    ``yes·(a + b)p/μ + (total − yes)(1 − a − b)p/(1 − μ)``. A generalized EM (one Newton step on
    the concave complete-data likelihood) still never lowers the likelihood of the reports.
    """
    s1 = a + b  # P(report | true yes)
    for _ in range(steps):
        p = _expit(x @ beta)
        mu = b + a * p
        with np.errstate(divide="ignore", invalid="ignore"):
            expected_yes = np.where(yes > 0, yes * s1 * p / mu, 0.0) + np.where(
                total > yes, (total - yes) * (1.0 - s1) * p / (1.0 - mu), 0.0
            )
        weight = total * p * (1.0 - p)
        hessian = (x.T * weight) @ x
        try:
            step = np.linalg.solve(hessian, x.T @ (np.nan_to_num(expected_yes) - total * p))
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        beta = beta + step
    return beta


def _validate(x: Any, reports: Any, weights: Any, intercept: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    try:
        x = np.asarray(x, dtype=float)
        y = np.asarray(reports, dtype=float).reshape(-1)
        w = np.ones(y.shape) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError("X, reports and weights must be numbers") from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"X must be a table (rows × covariates), got shape {x.shape}")
    if not x.shape[0] == y.size == w.size:
        raise ValueError(f"X has {x.shape[0]} rows, reports {y.size} and weights {w.size}: they must match")
    if not np.all(np.isfinite(x)):
        raise ValueError("every covariate value must be a finite number")
    if not np.all(np.isin(y, (0.0, 1.0))):
        raise ValueError("reports must be 0 or 1 (1: the respondent reported the outcome's category)")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be non-negative numbers (counts of such rows)")
    keep = w > 0
    x, y, w = x[keep], y[keep], w[keep]
    if w.sum() == 0:
        raise ValueError("no responses: there is nothing to fit until someone has answered")
    if intercept:
        x = np.hstack([np.ones((x.shape[0], 1)), x])
    return x, y, w


def rr_logistic(
    mechanism: Mechanism,
    X: Any,
    reports: Any,
    weights: Any = None,
    *,
    category: int = 0,
    intercept: bool = True,
    names: Sequence[str] | None = None,
    max_iter: int = 100,
) -> RRLogisticResult:
    """Fit a logistic regression of a randomized outcome on covariates by maximum likelihood.

    Parameters
    ----------
    mechanism : Mechanism
        The outcome question's design. The outcome is ``category`` (by default 0, "yes" of a
        yes/no question); its reported share must be affine in its true share,
        ``P(report) = a·θ + b`` (every yes/no design, and each option of GRR or m-category
        forced response); otherwise ``ValueError``.
    X : array (rows × covariates)
        Covariate values per row: numbers (a "number" question as it is, an age say) and 0/1
        indicators for the options of a choice question (leave one option out as the baseline).
        Without the intercept column: one is added first unless ``intercept=False``.
    reports : array of 0/1
        Per row, 1 if the row's respondents reported ``category``, 0 otherwise.
    weights : array, optional
        Per row, how many respondents it stands for (default 1 each), so each distinct
        (pattern, report) can be passed once with its count. Rows with the same pattern and
        report are merged, so the fit's cost follows the number of distinct patterns.
    names : sequence of str, optional
        The covariates' names (default ``x1``, ``x2``, ...).
    max_iter : int
        Newton iterations at most.

    Returns an :class:`RRLogisticResult`. Raises ``ValueError`` for malformed input and for ``X``
    not of full column rank (a covariate that is constant, or a combination of others, such as an
    indicator for every option beside the intercept): its coefficients would not be identified.
    A fit that does not reach a maximum (separation: a pattern whose true share the data push to 0
    or 1, so that coefficients grow without bound) is returned with ``converged=False`` and a
    ``reason``, never raised.

    Ten respondents per age from 20 to 60 with the seed design, the reported "yes" rising with age::

        >>> from survey.privacy import CoinFlip
        >>> ages = np.arange(20, 61)
        >>> X = np.repeat(ages, 2)[:, None]                  # each age twice: reported yes, no
        >>> reports = np.tile([1, 0], ages.size)
        >>> yes = np.round(10 * (0.25 + 0.5 / (1 + np.exp(-(ages - 40) / 8)))).astype(int)
        >>> weights = np.column_stack([yes, 10 - yes]).ravel()
        >>> fit = rr_logistic(CoinFlip(0.5, 0.5), X, reports, weights, names=["age"])
        >>> fit.converged, [round(float(b), 3) for b in fit.params]
        (True, [-4.991, 0.125])
        >>> share, low, high = fit.predict([[40]])
        >>> round(float(share[0]), 3), round(float(low[0]), 3), round(float(high[0]), 3)
        (0.5, 0.37, 0.63)
    """
    if not isinstance(mechanism, Mechanism):
        raise ValueError("the first argument must be a Mechanism")
    if not 0 <= category < mechanism.k:
        raise ValueError(f"category must be a category index of the mechanism, got {category!r}")
    coef = mechanism.affine_coefficients(category)
    if coef is None:
        raise ValueError(
            f"category {category}'s reported share is not affine in its true share under this design, "
            "so the report is not a misclassified yes/no answer: the model does not apply"
        )
    a, b = coef
    x, y, w = _validate(X, reports, weights, intercept)
    p = x.shape[1]
    if names is None:
        names = [f"x{i + 1}" for i in range(p - int(intercept))]
    names = [str(name) for name in names]
    if len(names) != p - int(intercept):
        raise ValueError(f"got {len(names)} names for {p - int(intercept)} covariates")
    if intercept:
        if "const" in names:
            raise ValueError("'const' names the intercept; choose another name for a covariate")
        names = ["const", *names]
    # merge rows with the same pattern: binomial counts per distinct pattern
    patterns, inverse = np.unique(x, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    total = np.bincount(inverse, weights=w, minlength=patterns.shape[0])
    yes = np.bincount(inverse, weights=w * y, minlength=patterns.shape[0])
    rank = np.linalg.matrix_rank(patterns)
    if rank < p:
        constant = [names[j] for j in range(p) if np.ptp(patterns[:, j]) == 0 and not (intercept and j == 0)]
        hint = (
            f" ({', '.join(constant)} {'is' if len(constant) == 1 else 'are'} constant among respondents)"
            if constant
            else " (a covariate is a combination of others, e.g. an indicator for every option beside the intercept)"
        )
        raise ValueError(
            f"X is not of full column rank: rank {rank} for {p} coefficients{hint}, so some coefficients "
            "are not identified"
        )

    # start: the intercept at the debiased overall share, the rest 0, then a few EM steps
    beta = np.zeros(p)
    if intercept:
        share = float(np.clip((yes.sum() / total.sum() - b) / a, 0.02, 0.98))
        beta[0] = math.log(share / (1.0 - share))
    beta = _em_steps(patterns, yes, total, beta, a, b, _EM_START)
    if not np.all(np.isfinite(beta)) or np.max(np.abs(patterns @ beta)) > _SEPARATION:
        beta = np.zeros(p)
    converged, reason, iterations = False, "", 0
    ll, score, observed, expected = _derivatives(patterns, yes, total, beta, a, b)
    for iteration in range(1, max_iter + 1):
        iterations = iteration
        information = observed
        try:
            np.linalg.cholesky(observed)
        except np.linalg.LinAlgError:
            information = expected  # Fisher scoring where Newton's model is not concave
        try:
            step = np.linalg.solve(information, score)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(information, score, rcond=None)[0]
        decrement = float(score @ step) / 2.0
        small = np.max(np.abs(step)) <= _STEP * max(1.0, float(np.max(np.abs(beta))))
        if 0 <= decrement < _DECREMENT * max(1.0, float(total.sum())) or small:
            converged = True
            break
        t = 1.0
        while t > 1e-10:
            trial = beta + t * step
            trial_ll = _loglik(yes, total, b + a * _expit(patterns @ trial))
            if trial_ll >= ll - 1e-12 * max(1.0, abs(ll)):
                break
            t /= 2.0
        else:
            reason = "no step raised the likelihood (a flat or irregular likelihood)"
            break
        beta = trial
        ll, score, observed, expected = _derivatives(patterns, yes, total, beta, a, b)
        if np.max(np.abs(patterns @ beta)) > _SEPARATION:
            reason = (
                "separation: the fitted true share of some covariate pattern goes to 0 or 1, so some "
                "coefficients grow without bound (too few respondents in a group, or a group whose "
                "reports lie beyond what the design can produce); merge groups or drop the covariate"
            )
            break
    else:
        reason = f"no convergence in {max_iter} iterations"
    if converged and np.max(np.abs(patterns @ beta)) > _SEPARATION:
        converged = False
        reason = "separation: the fitted true share of some covariate pattern is 0 or 1"

    information_kind = "observed"
    try:
        np.linalg.cholesky(observed)
        cov = np.linalg.inv(observed)
    except np.linalg.LinAlgError:
        information_kind = "expected"
        try:
            cov = np.linalg.inv(expected)
        except np.linalg.LinAlgError:
            cov = np.full((p, p), np.nan)
    bse = np.sqrt(np.where(np.diag(cov) >= 0, np.diag(cov), np.nan))

    llnull = llr = llr_pvalue = None
    if intercept:
        # the intercept-only model is one share, whose maximum is the clipped debiased share
        lam = yes.sum() / total.sum()
        mu0 = min(max(lam, min(b, a + b)), max(b, a + b))
        llnull = _loglik(yes, total, np.full(yes.shape, mu0))
        llr = max(2.0 * (ll - llnull), 0.0)
        llr_pvalue = float(chi2.sf(llr, p - 1)) if p > 1 else None
    return RRLogisticResult(
        params=beta,
        bse=bse,
        cov_params=cov,
        names=tuple(names),
        loglik=ll,
        llnull=llnull,
        llr=llr,
        llr_pvalue=llr_pvalue,
        n=float(total.sum()),
        n_patterns=int(patterns.shape[0]),
        converged=converged,
        reason=reason,
        iterations=iterations,
        information=information_kind,
        mechanism=mechanism,
        category=category,
        a=a,
        b=b,
        intercept=intercept,
    )
