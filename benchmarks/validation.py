"""Split ballots over simulated two-arm surveys: coverage of their 95% intervals, and bias.

Written to ``validation.md`` beside this file. For n ∈ {300, 1000, 5000} respondents (split evenly
between two arms) and compliance from 0.6 to 1.0, ``--surveys`` simulated surveys per cell:

- **Randomized minus direct** (a direct arm beside a coin flip at 0.5 and 0.5, the validation
  demo's ballot): a prevalence of 0.3; asked directly, a carrier admits it with the chance c (the
  compliance), so the direct arm's share is ``0.3·c`` and the difference the randomized arm finds
  is ``0.3·(1 − c)``; the MOVER interval (``survey.privacy.arms``) is checked for covering it, and
  the direct arm's share, a one-arm survey's naive estimate, is biased by ``−0.3·(1 − c)``.

- **Cheating detection model** (arms prompting "yes" with p = 0.2 and 0.7): a prevalence of 0.3
  among compliant respondents; the honest carriers ``π = 0.3·c``, honest non-carriers
  ``β = 0.7·c`` and cheaters ``γ = 1 − c`` for compliance c.
- **Stochastic lie detector** (non-carriers say "no" with p = 0.8 and 0.3): prevalence ``π = 0.3``
  and the share of carriers answering honestly ``t = c``.

Each parameter's profile-likelihood interval (``survey.privacy.noncompliance``) is checked for
covering the truth; coverage is ± ``2·√(0.95·0.05/surveys)`` (0.0097 at 2,000). Beside the models,
the **naive** estimate of the prevalence from one arm alone, as a single-arm survey would compute it
(assuming everyone complied), and its bias: what the second arm buys.

Run ``python benchmarks/validation.py --markdown benchmarks/validation.md`` (``--surveys 200`` while
developing).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from survey.privacy import CoinFlip
from survey.privacy.arms import randomized_minus_direct
from survey.privacy.noncompliance import cheating_detection, stochastic_lie_detector

SIZES = (300, 1000, 5000)
COMPLIANCE = (0.6, 0.7, 0.8, 0.9, 1.0)
PREVALENCE = 0.3
CDM_P = (0.2, 0.7)
SLD_P = (0.8, 0.3)
TARGET = 0.93


def _truth(model: str, compliance: float) -> dict[str, float]:
    if model == "CDM":
        return {"pi": PREVALENCE * compliance, "beta": (1 - PREVALENCE) * compliance, "gamma": 1 - compliance}
    return {"pi": PREVALENCE, "t": compliance}


def _yes_rates(model: str, truth: dict[str, float]) -> np.ndarray:
    if model == "CDM":
        return truth["pi"] + truth["beta"] * np.array(CDM_P)
    return truth["pi"] * truth["t"] + (1 - truth["pi"]) * (1 - np.array(SLD_P))


def _naive(model: str, yes: int, n: int) -> float:
    """The prevalence from arm 1 alone, assuming every respondent followed the procedure."""
    rate = yes / n
    if model == "CDM":  # forced "yes" with p: P(yes) = π + (1 − π) p
        return (rate - CDM_P[0]) / (1 - CDM_P[0])
    return (rate - (1 - SLD_P[0])) / SLD_P[0]  # SLD with t = 1: P(yes) = π + (1 − π)(1 − p)


#: The randomized arm of the "more is better" ballot, and its chance of reporting "yes".
DIFF_DESIGN = CoinFlip(0.5, 0.5)


def _difference_cell(n: int, compliance: float, surveys: int, rng: np.random.Generator) -> dict:
    arms = np.array([n // 2, n - n // 2])
    reported = float(DIFF_DESIGN.matrix[0] @ np.array([PREVALENCE, 1 - PREVALENCE]))
    truth = PREVALENCE * (1 - compliance)
    hits, difference, randomized, direct = 0, 0.0, 0.0, 0.0
    for _ in range(surveys):
        yes_r, yes_d = rng.binomial(arms, [reported, PREVALENCE * compliance])
        result = randomized_minus_direct(DIFF_DESIGN, [yes_r, arms[0] - yes_r], int(yes_d), int(arms[1]))
        hits += result.low <= truth <= result.high
        difference += result.difference
        randomized += result.randomized
        direct += result.direct
    return {
        "model": "DIFF",
        "n": n,
        "compliance": compliance,
        "coverage": {"difference": hits / surveys},
        "bias": {"difference": difference / surveys - truth, "randomized": randomized / surveys - PREVALENCE},
        "naive_bias": direct / surveys - PREVALENCE,
        "model_prevalence_bias": randomized / surveys - PREVALENCE,
    }


def _cell(job: tuple[str, int, float, int, int]) -> dict:
    model, n, compliance, surveys, seed = job
    rng = np.random.default_rng(seed)
    if model == "DIFF":
        return _difference_cell(n, compliance, surveys, rng)
    truth = _truth(model, compliance)
    rates = _yes_rates(model, truth)
    arms = np.array([n // 2, n - n // 2])
    fit = cheating_detection if model == "CDM" else stochastic_lie_detector
    p = CDM_P if model == "CDM" else SLD_P
    hits = dict.fromkeys(truth, 0)
    estimates = {name: 0.0 for name in truth}
    naive = 0.0
    prevalence_truth = PREVALENCE
    for _ in range(surveys):
        yes = rng.binomial(arms, rates)
        result = fit(yes, arms, p)
        for name, value in truth.items():
            low, high = result.intervals[name]
            hits[name] += low <= value <= high
            estimates[name] += result.estimates[name] if math.isfinite(result.estimates[name]) else value
        naive += _naive(model, int(yes[0]), int(arms[0]))
    model_prevalence = estimates["pi"] / surveys
    if model == "CDM":  # the prevalence among compliant respondents: π / (π + β)
        model_prevalence = estimates["pi"] / (estimates["pi"] + estimates["beta"])
    return {
        "model": model,
        "n": n,
        "compliance": compliance,
        "coverage": {k: v / surveys for k, v in hits.items()},
        "bias": {k: estimates[k] / surveys - truth[k] for k in truth},
        "naive_bias": naive / surveys - prevalence_truth,
        "model_prevalence_bias": model_prevalence - prevalence_truth,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surveys", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    jobs, seed = [], 20261128
    for model in ("DIFF", "CDM", "SLD"):
        for n in SIZES:
            for compliance in COMPLIANCE:
                jobs.append((model, n, compliance, args.surveys, seed := seed + 1))
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(_cell, jobs))
    seconds = time.perf_counter() - started
    error = 2 * math.sqrt(0.95 * 0.05 / args.surveys)
    lowest = min(min(r["coverage"].values()) for r in results)
    lines = [
        "# Split ballots: coverage of their 95% intervals over simulated two-arm surveys",
        "",
        f"{args.surveys:,} simulated surveys per cell (coverage ± {error:.4f}, two standard errors at 0.95), "
        f"two equal arms. Produced by `benchmarks/validation.py` in {seconds / 60:.1f} min "
        f"(Python {platform.python_version()}).",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| every parameter's interval covers in ≥ {TARGET} of surveys, every cell | lowest {lowest:.3f} | "
        f"{'yes' if lowest >= TARGET else 'NO'} |",
        "",
        "## Randomized minus direct (coin flip 0.5, 0.5 beside a direct arm; prevalence 0.3)",
        "",
        "Compliance c: the chance that a carrier asked directly admits it (the true difference is 0.3·(1 − c)).",
        "",
        "| n | compliance | difference coverage | bias of the difference | bias of the randomized arm | "
        "naive (direct arm) bias |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in (r for r in results if r["model"] == "DIFF"):
        lines.append(
            f"| {r['n']:,} | {r['compliance']:.1f} | {r['coverage']['difference']:.3f} | "
            f"{r['bias']['difference']:+.4f} | {r['bias']['randomized']:+.4f} | {r['naive_bias']:+.4f} |"
        )
    lines += [
        "",
        "## Cheating detection model (p = 0.2, 0.7; prevalence 0.3 among the compliant)",
        "",
        "| n | compliance | π coverage | β coverage | γ coverage | bias of γ | naive one-arm prevalence bias | "
        "model prevalence bias |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in (r for r in results if r["model"] == "CDM"):
        c, b = r["coverage"], r["bias"]
        lines.append(
            f"| {r['n']:,} | {r['compliance']:.1f} | {c['pi']:.3f} | {c['beta']:.3f} | {c['gamma']:.3f} | "
            f"{b['gamma']:+.4f} | {r['naive_bias']:+.4f} | {r['model_prevalence_bias']:+.4f} |"
        )
    lines += [
        "",
        "## Stochastic lie detector (p = 0.8, 0.3; prevalence 0.3)",
        "",
        "| n | compliance (t) | π coverage | t coverage | bias of π | bias of t | naive one-arm prevalence bias |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in (r for r in results if r["model"] == "SLD"):
        c, b = r["coverage"], r["bias"]
        lines.append(
            f"| {r['n']:,} | {r['compliance']:.1f} | {c['pi']:.3f} | {c['t']:.3f} | {b['pi']:+.4f} | "
            f"{b['t']:+.4f} | {r['naive_bias']:+.4f} |"
        )
    lines += [
        "",
        'The naive estimate reads arm 1 as a one-arm survey would; where some respondents say "no" '
        "whatever happens it is biased down by about the share they hide, which the two-arm models remove.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
