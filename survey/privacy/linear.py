"""Linear regression of a number (asked directly or randomized) on direct covariates.

A randomized number's report ``y`` has the clamped true number as its expectation given the truth
(:mod:`survey.privacy.numeric`), and the mechanism never looks at the covariates, so
``E[y | x] = E[number | x]``: ordinary least squares on the reports estimates the same coefficients
as on the true numbers, without bias. What the randomization adds is variance in ``y``, so the
errors are far from homoskedastic (the piecewise mechanism's variance grows with ``t²``, Duchi's
shrinks), and the standard errors are heteroskedasticity-consistent: HC3 by default (MacKinnon &
White 1985; Long & Ervin 2000 recommend it below n ≈ 250, and it is never much worse above), HC0,
HC1 and HC2 on request, as R's ``sandwich::vcovHC`` computes them.

As in :mod:`survey.privacy.regression`, the covariates of a survey are categorical or integers, so
the data come as covariate patterns, each with its count, the sum of its outcomes and the sum of
their squares: everything OLS and every HC estimator needs (a pattern's residuals enter the meat
only through ``Σ(y − x'β)² = S₂ − 2 x'β S₁ + n (x'β)²``, and every respondent of a pattern has its
leverage). The cost follows the number of patterns, never of respondents.

    >>> fit = linear_regression([[0], [1], [2]], counts=[4, 4, 4], sums=[4, 12, 20], sums_of_squares=[6, 38, 102])
    >>> [round(float(b), 4) for b in fit.params], fit.n
    ([1.0, 2.0], 12)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["COVARIANCE_TYPES", "LinearResult", "linear_regression"]

COVARIANCE_TYPES = ("HC0", "HC1", "HC2", "HC3")


@dataclass(frozen=True)
class LinearResult:
    """A fitted linear regression, modelled on statsmodels' results (``params``, ``bse``,
    ``conf_int``, ``pvalues``)."""

    params: np.ndarray
    cov_params: np.ndarray
    names: tuple[str, ...]
    n: int
    n_patterns: int
    cov_type: str
    #: residual degrees of freedom, ``n − p``: the t distribution's for the intervals and tests
    df_resid: int

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov_params))

    @property
    def tvalues(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.params / self.bse

    @property
    def pvalues(self) -> np.ndarray:
        return 2 * stats.t.sf(np.abs(self.tvalues), self.df_resid)

    def conf_int(self, level: float = 0.95) -> np.ndarray:
        """``β ± t·SE`` for every coefficient, one row ``[low, high]`` each."""
        if not 0 < level < 1:
            raise ValueError(f"level must be between 0 and 1, got {level!r}")
        half = float(stats.t.ppf(0.5 + level / 2, self.df_resid)) * self.bse
        return np.stack([self.params - half, self.params + half], axis=1)

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        intervals = self.conf_int(level)
        return {
            "n": self.n,
            "covariance": self.cov_type,
            "level": level,
            "coefficients": [
                {
                    "name": name,
                    "estimate": float(b),
                    "standard_error": float(se),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "p_value": float(p),
                }
                for name, b, se, (lo, hi), p in zip(
                    self.names, self.params, self.bse, intervals, self.pvalues, strict=True
                )
            ],
        }


def linear_regression(
    x: Sequence[Sequence[float]] | np.ndarray,
    counts: Sequence[float] | np.ndarray,
    sums: Sequence[float] | np.ndarray,
    sums_of_squares: Sequence[float] | np.ndarray,
    *,
    names: Sequence[str] | None = None,
    intercept: bool = True,
    cov_type: str = "HC3",
) -> LinearResult:
    """OLS of the outcome on the covariate patterns ``x`` (one row per pattern) from each
    pattern's ``counts``, ``sums`` of outcomes and ``sums_of_squares``."""
    if cov_type not in COVARIANCE_TYPES:
        raise ValueError(f"cov_type must be one of {', '.join(COVARIANCE_TYPES)}, got {cov_type!r}")
    design = np.asarray(x, dtype=float)
    if design.ndim == 1:
        design = design[:, None]
    n_p = np.asarray(counts, dtype=float)
    s1 = np.asarray(sums, dtype=float)
    s2 = np.asarray(sums_of_squares, dtype=float)
    if not (design.shape[0] == n_p.size == s1.size == s2.size):
        raise ValueError("x, counts, sums and sums_of_squares need one entry per pattern")
    if (n_p < 0).any() or not all(np.isfinite(a).all() for a in (design, n_p, s1, s2)):
        raise ValueError("counts must not be negative, and every figure must be finite")
    kept = n_p > 0
    design, n_p, s1, s2 = design[kept], n_p[kept], s1[kept], s2[kept]
    if intercept:
        design = np.hstack([np.ones((design.shape[0], 1)), design])
    columns = design.shape[1]
    labels = tuple(names) if names is not None else tuple(f"x{i + 1}" for i in range(columns - int(intercept)))
    if len(labels) != columns - int(intercept):
        raise ValueError(f"expected {columns - int(intercept)} names, got {len(labels)}")
    if intercept:
        labels = ("const", *labels)
    n = round(float(n_p.sum()))
    if n <= columns:
        raise ValueError(f"{columns} coefficients need more than {columns} respondents, got {n}")
    gram = design.T @ (n_p[:, None] * design)
    if np.linalg.matrix_rank(gram) < columns:
        raise ValueError("the covariates are collinear (or one never varies): no unique fit")
    bread = np.linalg.inv(gram)
    beta = bread @ (design.T @ s1)
    fitted = design @ beta
    squared_residuals = s2 - 2 * fitted * s1 + n_p * fitted**2  # Σ over the pattern of (y − x'β)²
    squared_residuals = np.maximum(squared_residuals, 0.0)  # rounding can leave −1e-12
    leverage = np.einsum("ij,jk,ik->i", design, bread, design)  # each respondent's of the pattern
    if cov_type == "HC0":
        weights = squared_residuals
    elif cov_type == "HC1":
        weights = squared_residuals * n / (n - columns)
    elif cov_type == "HC2":
        weights = squared_residuals / (1 - leverage)
    else:
        weights = squared_residuals / (1 - leverage) ** 2
    meat = design.T @ (weights[:, None] * design)
    cov = bread @ meat @ bread
    return LinearResult(
        params=beta,
        cov_params=cov,
        names=labels,
        n=n,
        n_patterns=int(design.shape[0]),
        cov_type=cov_type,
        df_resid=n - columns,
    )
