"""Coverage, bias and error of the analyses for researchers: group differences, associations, regression.

Three parts, each written to ``analysis.md`` with a targets table at the top:

1. **Differences between two groups, exactly.** The reported counts of a category in two groups are
   independent binomials, and the interval for ``θ_a − θ_b`` (:func:`survey.privacy.difference_interval`,
   what :func:`survey.privacy.compare_groups` shows) is a function of the two counts, so its coverage is
   the finite double sum ``Σ Binom(x; n_a, λ_a)·Binom(y; n_b, λ_b)·1[δ in CI(x, y)]`` over the pairs
   whose probability is not negligible (the mass left out is reported, below 1e-10). No simulation. The
   test's size at a null difference is one minus that coverage (the p-value inverts the interval), its
   power at other differences ``P(0 not in CI)``. Also: the same with plain (not floored) Wilson
   intervals, Clopper–Pearson pieces and Wald, and the lowest coverage over a grid of populations.
2. **Associations of two yes/no questions, simulated.** ``--surveys`` tables of reported pairs per
   cell, each through :func:`survey.privacy.association`: coverage of the profile-likelihood intervals
   of the odds ratio, φ and the conditional shares, beside the delta method on log OR from the unbiased
   table (the peer's construction); bias of the estimates.
3. **Logistic regression with a randomized outcome, simulated.** ``--surveys`` surveys per cell, each
   fitted by :func:`survey.privacy.rr_logistic` on its counts per covariate pattern: coverage of the
   95% Wald intervals of every coefficient, bias, and mean squared error beside the naive logistic
   regression of the randomized reports on the covariates (biased towards 0).

Monte-Carlo error of a simulated coverage ``c`` over ``N`` surveys: ±2·sqrt(c(1 − c)/N), stated beside
the figures. Run with ``python benchmarks/analysis.py --markdown benchmarks/analysis.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import platform
import resource
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import scipy
from scipy.special import expit
from scipy.stats import binom, norm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from survey.privacy import (
    CoinFlip,
    GeneralizedRR,
    Mechanism,
    Warner,
    association,
    difference_interval,
    estimate,
    few_respondents_threshold,
    product_mechanism,
    rr_logistic,
    wilson_interval,
)

SURVEYS = 2000
SIZES = (200, 1000, 5000)
LEVEL = 0.95
Z = float(norm.ppf(0.5 + LEVEL / 2))


def designs(kind: str) -> list[tuple[str, Mechanism, int]]:
    """(name, mechanism, category): yes/no designs for associations, one option of GRR elsewhere."""
    out = [
        ("coin flip ε = ln 3 (p = f = ½)", CoinFlip(0.5, 0.5), 0),
        ("Warner p = 0.2 (ε = ln 4, a < 0)", Warner(0.2), 0),
    ]
    if kind == "yes/no":
        out += [(f"GRR k = 2, ε = {e:g}", GeneralizedRR(2, epsilon=e, labels=["yes", "no"]), 0) for e in (1, 2)]
    else:
        out += [(f"GRR k = 3, ε = {e:g} (option 1 of 3)", GeneralizedRR(3, epsilon=e), 0) for e in (1, 2)]
    return out


def mc_error(c: float, n: int) -> float:
    return 2 * math.sqrt(max(c * (1 - c), 0.0) / n)


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"


# -- part 1: differences between groups, exactly -----------------------------------------------------

DIFFERENCE_TRUTHS = [
    ("null", 0.05, 0.05),
    ("null", 0.3, 0.3),
    ("null", 0.5, 0.5),
    ("shift", 0.1, 0.3),
    ("shift", 0.05, 0.25),
    ("shift", 0.6, 0.35),
]
SPLITS = (("½ : ½", 0.5), ("⅕ : ⅘", 0.2))
DIFFERENCE_METHODS = ("floored", "wilson", "exact", "wald")
GRID = np.linspace(0.0, 1.0, 21)
#: Group sizes (each of two equal groups) of the grid of populations: small ones, where the floor of
#: each group's interval matters, and the halves of SIZES.
GRID_GROUPS = (20, 40, 100, 500, 2500)


def _window(n: int, lam: float) -> np.ndarray:
    sd = math.sqrt(n * lam * (1 - lam))
    low, high = max(0, math.floor(n * lam - 12 * sd - 20)), min(n, math.ceil(n * lam + 12 * sd + 20))
    return np.arange(low, high + 1, dtype=float)


def _plain_wilson_difference(xa, na, xb, nb, a):
    """Newcombe's interval from plain Wilson intervals (no floor), mapped like difference_interval."""
    la, ua = wilson_interval(xa, na, LEVEL)
    lb, ub = wilson_interval(xb, nb, LEVEL)
    pa, pb = xa / na, xb / nb
    low = pa - pb - np.hypot(pa - la, ub - pb)
    high = pa - pb + np.hypot(ua - pa, pb - lb)
    low, high = low / a, high / a
    if a < 0:
        low, high = high, low
    return np.clip(low, -1, 1), np.clip(high, -1, 1)


def _difference_cells(mech, category, na, nb, theta_a, theta_b, methods):
    a, b = mech.affine_coefficients(category)
    lam_a, lam_b = a * theta_a + b, a * theta_b + b
    xa, xb = _window(na, lam_a), _window(nb, lam_b)
    pa, pb = binom.pmf(xa, na, lam_a), binom.pmf(xb, nb, lam_b)
    delta = theta_a - theta_b
    out = {"mass": float(pa.sum() * pb.sum())}
    for method in methods:
        if method == "wilson":
            low, high = _plain_wilson_difference(xa[:, None], na, xb[None, :], nb, a)
        else:
            library = {"floored": "wilson", "exact": "exact", "wald": "wald"}[method]
            low, high = difference_interval(xa[:, None], na, xb[None, :], nb, a, LEVEL, library)
        held = (low <= delta + 1e-12) & (delta - 1e-12 <= high)
        excludes_zero = ~((low <= 0) & (0 <= high))
        out[method] = {
            "coverage": float(pa @ held @ pb),
            "width": float(pa @ (high - low) @ pb),
            "reject": float(pa @ excludes_zero @ pb),
        }
    return out


def difference_job(item) -> dict:
    name, mech, category, n, split_name, split, surveys, seed = item
    na = round(n * split)
    nb = n - na
    cells = []
    rng = np.random.default_rng(seed)
    for kind, ta, tb in DIFFERENCE_TRUTHS:
        cell = _difference_cells(mech, category, na, nb, ta, tb, DIFFERENCE_METHODS)
        # bias of what the page shows (the difference of the groups' consistent estimates) and of the
        # unbiased difference, by simulation (the consistent estimate of a 3-option question depends
        # on all its counts)
        shown, unbiased = [], []
        for theta, size in ((ta, na), (tb, nb)):
            pi = np.full(mech.k, (1 - theta) / (mech.k - 1))
            pi[category] = theta
            result = estimate(mech, rng.multinomial(size, mech.matrix @ pi, size=surveys))
            shown.append(result.proportions[:, category])
            unbiased.append(result.unbiased[:, category])
        cell["bias_shown"] = float(np.mean(shown[0] - shown[1]) - (ta - tb))
        cell["bias_unbiased"] = float(np.mean(unbiased[0] - unbiased[1]) - (ta - tb))
        cell.update(kind=kind, theta_a=ta, theta_b=tb)
        cells.append(cell)
    return {
        "name": name,
        "n": n,
        "split": split_name,
        "na": na,
        "nb": nb,
        "cells": cells,
        "wide_below": few_respondents_threshold(mech, category),
    }


def grid_job(item) -> dict:
    """The lowest exact coverage over a grid of populations (θ_a, θ_b), two equal groups, every method."""
    name, mech, category, size = item
    worst = {method: (math.inf, None) for method in DIFFERENCE_METHODS}
    means = defaultdict(list)
    for ta in GRID:
        for tb in GRID:
            cell = _difference_cells(mech, category, size, size, ta, tb, DIFFERENCE_METHODS)
            for method in DIFFERENCE_METHODS:
                c = cell[method]["coverage"]
                means[method].append(c)
                if c < worst[method][0]:
                    worst[method] = (c, (float(ta), float(tb)))
    return {
        "name": name,
        "size": size,
        "worst": worst,
        "mean": {method: float(np.mean(v)) for method, v in means.items()},
    }


# -- part 2: associations, simulated -------------------------------------------------------------------

ASSOCIATION_TRUTHS = [
    ("independent (P(A) = 0.3, P(B) = 0.4)", np.outer([0.3, 0.7], [0.4, 0.6]).ravel()),
    ("associated (OR = 5)", np.array([0.2, 0.1, 0.2, 0.5])),
    ("strong, a rare cell (OR = 48)", np.array([0.25, 0.02, 0.15, 0.58])),
]
MEASURES = ("odds_ratio", "phi", "p_a_given_b", "p_a_given_not_b")


def truth_of(pi: np.ndarray) -> dict[str, float]:
    p11, p10, p01, p00 = pi
    pa, pb = p11 + p10, p11 + p01
    return {
        "odds_ratio": p11 * p00 / (p10 * p01),
        "phi": (p11 * p00 - p10 * p01) / math.sqrt(pa * (1 - pa) * pb * (1 - pb)),
        "p_a_given_b": p11 / pb,
        "p_a_given_not_b": p10 / (1 - pb),
    }


def association_job(item) -> dict:
    name, mech, truth_name, pi, n, surveys, seed = item
    rng = np.random.default_rng(seed)
    pair = product_mechanism(mech, mech)
    tables = rng.multinomial(n, pair.matrix @ pi, size=surveys)
    unique, inverse = np.unique(tables, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    truth = truth_of(pi)
    per_table = []
    started = time.perf_counter()
    for counts in unique:
        result = association(mech, mech, counts.reshape(2, 2))
        found = result.measures()
        row = {m: (found[m].estimate, found[m].low, found[m].high) for m in MEASURES}
        # the peer's interval: the delta method on log OR from the unbiased table
        u, cov = result.joint.unbiased, result.joint.covariance
        if np.all(u > 0):
            gradient = np.array([1 / u[0], -1 / u[1], -1 / u[2], 1 / u[3]])
            centre = math.log(u[0] * u[3] / (u[1] * u[2]))
            half = Z * math.sqrt(max(gradient @ cov @ gradient, 0.0))
            row["delta_or"] = (centre - half, centre + half)  # on the log scale
        else:
            row["delta_or"] = None
        per_table.append(row)
    seconds = (time.perf_counter() - started) / len(unique)
    out = {"name": name, "truth": truth_name, "n": n, "surveys": surveys, "ms_per_table": seconds * 1e3}
    for m in MEASURES:
        estimates = np.array([per_table[i][m][0] for i in inverse])
        low = np.array([per_table[i][m][1] for i in inverse])
        high = np.array([per_table[i][m][2] for i in inverse])
        out[m] = {
            "coverage": float(np.mean((low <= truth[m]) & (truth[m] <= high))),
            "bias": float(np.nanmean(estimates) - truth[m]) if m != "odds_ratio" else math.nan,
            "undefined": float(np.mean(np.isnan(estimates))),
        }
        if m == "odds_ratio":
            finite = estimates[np.isfinite(estimates) & (estimates > 0)]
            out[m]["median_ratio"] = float(np.median(finite) / truth[m]) if finite.size else math.nan
            out[m]["unbounded"] = float(np.mean(np.isinf(high)))
            out[m]["whole_range"] = float(np.mean((low == 0) & np.isinf(high)))
    delta = [per_table[i]["delta_or"] for i in inverse]
    defined = [d for d in delta if d is not None]
    out["delta_or"] = {
        "coverage": float(np.mean([d is not None and d[0] <= math.log(truth["odds_ratio"]) <= d[1] for d in delta])),
        "defined": len(defined) / len(delta),
    }
    return out


# -- part 3: regression, simulated -----------------------------------------------------------------------

AGES = np.arange(16, 100)
REGRESSION_SETTINGS = [
    ("age", ("age",), np.array([-2.5, 0.04])),
    ("department (3 options)", ("department",), np.array([-1.0, 0.8, -0.5])),
    ("age + department", ("age", "department"), np.array([-2.0, 0.03, 0.7, -0.6])),
    ("age + department, no effect", ("age", "department"), np.array([-0.5, 0.0, 0.0, 0.0])),
]


def patterns_of(covariates: tuple[str, ...]) -> tuple[np.ndarray, list[str]]:
    columns: list[np.ndarray] = []
    names: list[str] = []
    if covariates == ("age",):
        return AGES[:, None].astype(float), ["age"]
    if covariates == ("department",):
        d = np.arange(3)
        return np.column_stack([d == 1, d == 2]).astype(float), ["dept 2", "dept 3"]
    ages, d = np.meshgrid(AGES, np.arange(3), indexing="ij")
    columns = [ages.ravel(), d.ravel() == 1, d.ravel() == 2]
    names = ["age", "dept 2", "dept 3"]
    return np.column_stack(columns).astype(float), names


def naive_logistic(x: np.ndarray, yes: np.ndarray, total: np.ndarray) -> np.ndarray | None:
    """Logistic regression of the reports themselves (ignoring the randomization): Newton's method."""
    design = np.column_stack([np.ones(len(x)), x])
    beta = np.zeros(design.shape[1])
    for _ in range(50):
        p = expit(design @ beta)
        info = (design.T * (total * p * (1 - p))) @ design
        try:
            step = np.linalg.solve(info, design.T @ (yes - total * p))
        except np.linalg.LinAlgError:
            return None
        beta += step
        if np.abs(step).max() < 1e-10:
            return beta
    return None


def regression_job(item) -> dict:
    name, mech, category, setting, n, surveys, seed = item
    _, covariates, beta = next(s for s in REGRESSION_SETTINGS if s[0] == setting)
    rng = np.random.default_rng(seed)
    x, names = patterns_of(covariates)
    a, b = mech.affine_coefficients(category)
    rate = b + a * expit(np.column_stack([np.ones(len(x)), x]) @ beta)
    p = beta.size
    fits, naive, refused, converged_flags = [], [], 0, []
    started = time.perf_counter()
    for _ in range(surveys):
        counts = rng.multinomial(n, np.full(len(x), 1.0 / len(x)))
        yes = rng.binomial(counts, rate)
        seen = counts > 0
        rows = np.vstack([x[seen], x[seen]])
        reports = np.repeat([1.0, 0.0], seen.sum())
        weights = np.concatenate([yes[seen], counts[seen] - yes[seen]])
        try:
            fit = rr_logistic(mech, rows, reports, weights, category=category)
        except ValueError:
            refused += 1
            continue
        fits.append((fit.params, fit.bse, fit.converged))
        converged_flags.append(fit.converged)
        naive.append(naive_logistic(x[seen], yes[seen].astype(float), counts[seen].astype(float)))
    seconds = (time.perf_counter() - started) / surveys
    params = np.array([f[0] for f in fits])
    bse = np.array([f[1] for f in fits])
    ok = np.array(converged_flags)
    held = np.abs(params - beta) <= Z * bse
    naive_ok = np.array([v is not None for v in naive])
    naive_params = np.array([v for v in naive if v is not None])
    out = {
        "name": name,
        "setting": setting,
        "n": n,
        "surveys": surveys,
        "names": ["const", *names],
        "beta": beta,
        "refused": refused,
        "converged": float(ok.mean()) if ok.size else math.nan,
        "ms_per_fit": seconds * 1e3,
        "coefficients": [],
    }
    for j in range(p):
        conv = params[ok, j]
        out["coefficients"].append(
            {
                "coverage_all": float(np.mean(held[:, j])),
                "coverage_converged": float(np.mean(held[ok, j])) if ok.any() else math.nan,
                "bias": float(np.mean(conv) - beta[j]) if conv.size else math.nan,
                "mse": float(np.mean((conv - beta[j]) ** 2)) if conv.size else math.nan,
                "naive_bias": float(np.mean(naive_params[:, j]) - beta[j]) if naive_params.size else math.nan,
                "naive_mse": float(np.mean((naive_params[:, j] - beta[j]) ** 2)) if naive_params.size else math.nan,
                "naive_converged": float(naive_ok.mean()),
            }
        )
    return out


# -- running and reporting ----------------------------------------------------------------------------


def run_job(job):
    kind, item = job
    jobs = {
        "difference": difference_job,
        "grid": grid_job,
        "association": association_job,
        "regression": regression_job,
    }
    return kind, jobs[kind](item)


def build_jobs(surveys: int, parts: set[str]) -> list[tuple[str, tuple]]:
    jobs: list[tuple[str, tuple]] = []
    seed = 20261123
    if "regression" in parts:
        for name, mech, category in designs("choice"):
            for setting, _, _ in REGRESSION_SETTINGS:
                for n in SIZES:
                    seed += 1
                    jobs.append(("regression", (name, mech, category, setting, n, surveys, seed)))
    if "association" in parts:
        for name, mech, _ in designs("yes/no"):
            for truth_name, pi in ASSOCIATION_TRUTHS:
                for n in SIZES:
                    seed += 1
                    jobs.append(("association", (name, mech, truth_name, pi, n, surveys, seed)))
    if "difference" in parts:
        for name, mech, category in designs("choice"):
            for n in SIZES:
                for split_name, split in SPLITS:
                    seed += 1
                    jobs.append(("difference", (name, mech, category, n, split_name, split, surveys, seed)))
            for size in GRID_GROUPS:
                jobs.append(("grid", (name, mech, category, size)))
    # the slowest first, so that two processes finish together
    weight = {"association": 0, "regression": 1, "grid": 2, "difference": 3}
    jobs.sort(key=lambda job: (weight[job[0]], -job[1][-3] if job[0] in ("association", "regression") else 0))
    return jobs


def _fmt(x: float, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.{digits}f}"


def report(results: dict[str, list[dict]], args: argparse.Namespace, elapsed: float, cpu: float, load: float) -> str:
    surveys = args.surveys
    lines = [
        "# Analyses for researchers: coverage, bias and error",
        "",
        f"`python benchmarks/analysis.py --workers {args.workers} --surveys {surveys}` ({time.strftime('%Y-%m-%d')}, "
        f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}; "
        f"{elapsed / 60:.1f} min on {args.workers} processes, {cpu / 60:.1f} min of processor time; the machine's "
        f"load average was {load:.1f} on {os.cpu_count()} cores, shared with other work). Intervals at 95%. "
        "Differences between groups are "
        "exact double binomial sums (no Monte-Carlo error); associations and regressions are simulated, "
        f"{surveys:,} surveys per cell, Monte-Carlo error ±2·sqrt(c(1 − c)/{surveys:,}) "
        f"(±{mc_error(0.95, surveys):.4f} at 0.95).",
        "",
        "Designs: the seed coin flip (ε = ln 3, P(yes report) = ¼ + θ/2), Warner with p = 0.2 (ε = ln 4; a "
        '"yes" report leans towards a true "no", the slope a = −0.6), and GRR at ε = 1 and 2 (for group '
        "differences and regressions, option 1 of a 3-option question, whose reported share is affine in its "
        "true share; for associations, the yes/no GRR, i.e. Warner at that ε).",
        "",
    ]
    targets = []
    # group differences
    diffs = results.get("difference", [])
    if diffs:
        cells = [(r, c) for r in diffs for c in r["cells"]]
        cov = [c["floored"]["coverage"] for _, c in cells]
        worst_r, worst_c = min(cells, key=lambda rc: rc[1]["floored"]["coverage"])
        targets.append(
            (
                "group differences (Newcombe from floored Wilson), exact",
                min(cov),
                float(np.mean(cov)),
                f"{worst_r['name']}, n = {worst_r['n']} ({worst_r['split']}), θ = {worst_c['theta_a']:g} vs "
                f"{worst_c['theta_b']:g}",
                0.0,
            )
        )
    grids = results.get("grid", [])
    if grids:
        worst_g = min(grids, key=lambda g: g["worst"]["floored"][0])
        worst, where = worst_g["worst"]["floored"]
        targets.append(
            (
                f"group differences, every population of a {GRID.size} × {GRID.size} grid, groups of "
                f"{min(GRID_GROUPS)} to {max(GRID_GROUPS)}, exact",
                worst,
                float(np.mean([g["mean"]["floored"] for g in grids])),
                f"{worst_g['name']}, {worst_g['size']} per group, θ = {where[0]:g} vs {where[1]:g}",
                0.0,
            )
        )
    assoc = results.get("association", [])
    for measure, title in (
        ("odds_ratio", "odds ratios (profile likelihood)"),
        ("phi", "correlations φ (profile likelihood)"),
        ("p_a_given_b", "conditional shares P(A | B), P(A | not B)"),
    ):
        if not assoc:
            break
        keys = (measure,) if measure != "p_a_given_b" else ("p_a_given_b", "p_a_given_not_b")
        values = [(r, r[k]["coverage"]) for r in assoc for k in keys]
        worst_r, worst = min(values, key=lambda v: v[1])
        targets.append(
            (
                title,
                worst,
                float(np.mean([v for _, v in values])),
                f"{worst_r['name']}, n = {worst_r['n']}, {worst_r['truth']}",
                mc_error(worst, surveys),
            )
        )
    regs = results.get("regression", [])
    if regs:
        values = [(r, j, c["coverage_converged"]) for r in regs for j, c in enumerate(r["coefficients"])]
        worst_r, worst_j, worst = min(values, key=lambda v: v[2])
        targets.append(
            (
                "regression coefficients (Wald, observed information), converged fits",
                worst,
                float(np.mean([v for _, _, v in values])),
                f"{worst_r['name']}, n = {worst_r['n']}, {worst_r['setting']}, {worst_r['names'][worst_j]}",
                mc_error(worst, surveys),
            )
        )
        big = [(r, j, c["coverage_converged"]) for r in regs if r["n"] >= 1000 for j, c in enumerate(r["coefficients"])]
        worst_r, worst_j, worst = min(big, key=lambda v: v[2])
        targets.append(
            (
                "regression coefficients, n ≥ 1000 only",
                worst,
                float(np.mean([v for _, _, v in big])),
                f"{worst_r['name']}, n = {worst_r['n']}, {worst_r['setting']}, {worst_r['names'][worst_j]}",
                mc_error(worst, surveys),
            )
        )
    lines += [
        "## Targets",
        "",
        "Coverage of the 95% intervals: at least 0.93 in every cell, at least 0.945 on average over the cells. "
        "A simulated cell counts as meeting 0.93 when it is within its Monte-Carlo error of it.",
        "",
        "| intervals | lowest cell | where | ≥ 0.93 every cell | average | ≥ 0.945 on average |",
        "|---|---|---|---|---|---|",
    ]
    for title, worst, mean, where, err in targets:
        error = f" ± {err:.4f}" if err else " (exact)"
        lines.append(
            f"| {title} | {worst:.4f}{error} | {where} | {verdict(worst + err >= 0.93)} | {mean:.4f} | "
            f"{verdict(mean >= 0.945)} |"
        )
    lines.append("")
    lines += difference_section(diffs, results.get("grid", [])) if diffs else []
    lines += association_section(assoc, surveys) if assoc else []
    lines += regression_section(regs, surveys) if regs else []
    return "\n".join(lines) + "\n"


def difference_section(diffs: list[dict], grids: list[dict]) -> list[str]:
    lines = [
        "## 1. Differences between two groups (exact)",
        "",
        "Per design, total respondents n split between the two groups as shown, and true shares θ_a, θ_b of the "
        "category: exact coverage of the 95% interval for θ_a − θ_b, its expected width, and the rejection rate "
        "of the test (p < 0.05; at a null difference this is the test's size, otherwise its power). **Newcombe, "
        "floored** is what `compare_groups` gives; **plain Wilson** is Newcombe's interval from Wilson intervals "
        "without the floor; **CP** from Clopper–Pearson intervals; **Wald** is the difference ± 1.96·SE. Bias: of "
        "the difference of the groups' consistent estimates (what the page shows) and of the unbiased estimates, "
        "simulated over the same number of surveys. `compare_groups` widens the interval, where need be, to hold "
        "the shown difference (the two part only when a group's reports lie beyond what the design can produce); "
        "widening can only raise the coverage and lower the rejection rate, so the coverage here is a lower bound, "
        "and the rejection rate an upper bound, of what the page shows.",
        "",
        "| design | n | split | θ_a | θ_b | Newcombe, floored | width | rejects | plain Wilson | CP | Wald | "
        "bias (shown) | bias (unbiased) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in diffs:
        for c in r["cells"]:
            lines.append(
                f"| {r['name']} | {r['n']} | {r['split']} | {c['theta_a']:g} | {c['theta_b']:g} | "
                f"{c['floored']['coverage']:.4f} | {c['floored']['width']:.3f} | {c['floored']['reject']:.3f} | "
                f"{c['wilson']['coverage']:.4f} | {c['exact']['coverage']:.4f} | {c['wald']['coverage']:.4f} | "
                f"{c['bias_shown']:+.4f} | {c['bias_unbiased']:+.4f} |"
            )
    mass = min(c["mass"] for r in diffs for c in r["cells"])
    lines += [
        "",
        f"Probability mass left out of the double sums: at most {1 - mass:.1e}.",
        "",
        f"Lowest exact coverage over every pair of true shares (θ_a, θ_b) on the grid 0, 0.05, …, 1 "
        f"({GRID.size**2} populations), two equal groups of the size shown (the average over the grid in brackets): "
        "is the floor of each group's interval needed? It is where groups are small: without it, Newcombe's "
        "interval inherits the dips of Wilson's at small counts.",
        "",
        "| design | each group | Newcombe, floored | where (θ_a, θ_b) | plain Wilson | where | CP | Wald |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for g in grids:
        f, w, e, d = (g["worst"][m] for m in ("floored", "wilson", "exact", "wald"))
        lines.append(
            f"| {g['name']} | {g['size']} | {f[0]:.4f} ({g['mean']['floored']:.4f}) | ({f[1][0]:g}, {f[1][1]:g}) | "
            f"{w[0]:.4f} ({g['mean']['wilson']:.4f}) | ({w[1][0]:g}, {w[1][1]:g}) | {e[0]:.4f} | {d[0]:.4f} |"
        )
    seen = {}
    for r in diffs:
        seen[r["name"]] = r["wide_below"]
    lines += [
        "",
        "Groups smaller than this have an expected half-width above ±0.25 at the worst-case share "
        "(`few_respondents_threshold`, the note the page shows): "
        + "; ".join(f"{name}: n < {n}" for name, n in seen.items())
        + ".",
        "",
    ]
    return lines


def association_section(assoc: list[dict], surveys: int) -> list[str]:
    lines = [
        "## 2. Associations between two yes/no questions (simulated)",
        "",
        "Both questions under the same design. Coverage of the 95% profile-likelihood intervals of "
        "`association(...)`; **delta OR** is the peer's interval (delta method on log OR from the unbiased "
        "table), undefined (counted as not covering) when an unbiased cell is ≤ 0 — the share where it is "
        "defined is given. Bias: mean estimate minus truth (φ and the conditional shares, where defined); for "
        "the odds ratio the median estimate over the truth among finite non-zero estimates. "
        "**unbounded**: share of surveys whose OR interval reaches ∞ (a zero cell is plausible); "
        "**whole range**: share whose interval is [0, ∞] (an answer nobody or everybody gives is plausible). "
        "ms: time of one `association(...).measures()`.",
        "",
        "| design | truth | n | OR | φ | P(A\\|B) | P(A\\|¬B) | delta OR (defined) | bias φ | bias P(A\\|B) | "
        "bias P(A\\|¬B) | OR median/truth | unbounded | whole range | ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in assoc:
        lines.append(
            f"| {r['name']} | {r['truth']} | {r['n']} | {r['odds_ratio']['coverage']:.4f} | "
            f"{r['phi']['coverage']:.4f} | {r['p_a_given_b']['coverage']:.4f} | "
            f"{r['p_a_given_not_b']['coverage']:.4f} | {r['delta_or']['coverage']:.4f} "
            f"({r['delta_or']['defined']:.2f}) | {r['phi']['bias']:+.4f} | {r['p_a_given_b']['bias']:+.4f} | "
            f"{r['p_a_given_not_b']['bias']:+.4f} | {_fmt(r['odds_ratio']['median_ratio'], 3)} | "
            f"{r['odds_ratio']['unbounded']:.3f} | {r['odds_ratio']['whole_range']:.3f} | "
            f"{r['ms_per_table']:.1f} |"
        )
    lines.append("")
    return lines


def regression_section(regs: list[dict], surveys: int) -> list[str]:
    lines = [
        "## 3. Logistic regression with a randomized outcome (simulated)",
        "",
        "Covariates: age, an integer uniform on 16–99, entered as a number; department, 3 options uniform, as "
        "two indicators (option 1 the baseline). Respondents fall on the covariate patterns at random; each "
        "survey is fitted on its counts per pattern. Per coefficient: coverage of the 95% Wald interval over "
        "converged fits (and over all fits), bias and mean squared error of the converged fits, beside the naive "
        "logistic regression of the randomized reports (its bias towards 0 is the attenuation the design "
        "causes). **converged**: share of fits that reached a maximum (the rest report separation: a pattern's "
        "fitted share at 0 or 1); **refused**: surveys in which a covariate was constant (rank error). "
        "ms: time of one `rr_logistic` fit.",
        "",
        "| design | setting | n | converged | refused | coefficient | β | coverage | (all fits) | bias | MSE | "
        "naive bias | naive MSE | ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in regs:
        for j, c in enumerate(r["coefficients"]):
            lines.append(
                f"| {r['name']} | {r['setting']} | {r['n']} | {r['converged']:.3f} | {r['refused']} | "
                f"{r['names'][j]} | {r['beta'][j]:g} | {_fmt(c['coverage_converged'])} | {_fmt(c['coverage_all'])} | "
                f"{c['bias']:+.4f} | {c['mse']:.4g} | {c['naive_bias']:+.4f} | {c['naive_mse']:.4g} | "
                f"{r['ms_per_fit']:.2f} |"
            )
    lines.append("")
    # MSE beside the naive fit, summarized
    ratios = defaultdict(list)
    for r in regs:
        for j, c in enumerate(r["coefficients"]):
            if j > 0 and r["beta"][j] != 0 and math.isfinite(c["mse"]):
                ratios[r["n"]].append(c["naive_mse"] / c["mse"])
    if ratios:
        lines += [
            "Naive MSE over the randomized-response MLE's MSE, for the slopes that are not 0 (median over designs "
            "and settings): "
            + "; ".join(f"n = {n}: {np.median(v):.2f}" for n, v in sorted(ratios.items()))
            + ". Above 1 the naive fit is worse (its bias dominates); below 1 its smaller variance wins, at the "
            "price of estimating an attenuated quantity, not β.",
            "",
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--surveys", type=int, default=SURVEYS, help="simulated surveys per cell")
    parser.add_argument(
        "--parts", default="difference,association,regression", help="comma-separated: which parts to run"
    )
    parser.add_argument("--results", type=Path, help="also keep the raw results in this pickle file")
    parser.add_argument("--from-results", type=Path, help="only write the report, from a --results file")
    args = parser.parse_args()
    if args.from_results:
        with args.from_results.open("rb") as f:
            saved = pickle.load(f)
        text = report(**saved)
        print(text)
        if args.markdown:
            args.markdown.write_text(text)
        return
    parts = set(args.parts.split(","))
    started = time.time()
    results: dict[str, list[dict]] = defaultdict(list)
    jobs = build_jobs(args.surveys, parts)
    with ProcessPoolExecutor(args.workers) as pool:
        for kind, result in pool.map(run_job, jobs, chunksize=1):
            results[kind].append(result)
    order = ("difference", "grid", "association", "regression")
    keys = {
        "difference": lambda r: (
            [d[0] for d in designs("choice")].index(r["name"]),
            r["n"],
            r["split"] != SPLITS[0][0],
        ),
        "association": lambda r: (
            [d[0] for d in designs("yes/no")].index(r["name"]),
            [t[0] for t in ASSOCIATION_TRUTHS].index(r["truth"]),
            r["n"],
        ),
        "regression": lambda r: (
            [d[0] for d in designs("choice")].index(r["name"]),
            [s[0] for s in REGRESSION_SETTINGS].index(r["setting"]),
            r["n"],
        ),
        "grid": lambda r: ([d[0] for d in designs("choice")].index(r["name"]), r["size"]),
    }
    for kind in order:
        results[kind].sort(key=keys[kind])
    cpu = sum(
        getattr(resource.getrusage(who), field)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for field in ("ru_utime", "ru_stime")
    )
    saved = {
        "results": dict(results),
        "args": argparse.Namespace(workers=args.workers, surveys=args.surveys),
        "elapsed": time.time() - started,
        "cpu": cpu,
        "load": os.getloadavg()[1],
    }
    if args.results:
        with args.results.open("wb") as f:
            pickle.dump(saved, f)
    text = report(**saved)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
