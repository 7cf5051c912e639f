"""A randomized number's bins: how often each bin's 95% interval covers its share.

Written to ``number_bins.md`` beside this file. The range is [0, 30] cut at 1, 5 and 15 (bins
"0 to under 1", "1 to under 5", "5 to under 15", "15 to 30": a count of drinks, say). For each
distribution of true numbers, n and mechanism, ``--surveys`` simulated surveys; in each, the
browser's codes are drawn (``mechanism.randomize``) and tallied, and every bin's share is estimated
two ways:

- **from the number's reports** (:func:`survey.privacy.number_bins.randomized_bin_shares`): the
  nonparametric MLE of the true numbers' distribution over a grid in each bin, with each bin's
  profile-likelihood interval. No ε beyond the number's.
- **a second report** (for comparison): the bin itself reported through k-RR at the same ε again
  (so the survey spends twice the ε), estimated as a randomized choice question is
  (:func:`survey.privacy.estimate`, its default interval).

Coverage is the share of surveys whose interval holds the bin's share in the distribution (± about
``2·√(0.95·0.05/surveys)``); "lowest" is the lowest over the four bins; width is the mean width,
averaged over the bins. The distributions: 60% zeros (else uniform on the range); uniform; a bump
(normal, mean 8, sd 3, clipped); the two ends (half at 0, half at 30).

Run ``python benchmarks/number_bins.py --markdown benchmarks/number_bins.md``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from survey.privacy import GeneralizedRR, estimate
from survey.privacy.number_bins import randomized_bin_shares
from survey.privacy.numeric import DuchiNumber, HybridNumber, NumberMechanism

LOW, HIGH = 0.0, 30.0
EDGES = (1.0, 5.0, 15.0)
LEVEL = 0.95
SIZES = (100, 1000)


def _mostly_zero(rng, n):
    return np.where(rng.random(n) < 0.6, 0.0, rng.uniform(LOW, HIGH, n))


def _uniform(rng, n):
    return rng.uniform(LOW, HIGH, n)


def _bump(rng, n):
    return np.clip(rng.normal(8, 3, n), LOW, HIGH)


def _ends(rng, n):
    return np.where(rng.random(n) < 0.5, LOW, HIGH)


DISTRIBUTIONS = {
    "60% zeros": _mostly_zero,
    "uniform": _uniform,
    "bump at 8": _bump,
    "two ends": _ends,
}


def _mechanisms() -> dict[str, NumberMechanism]:
    return {
        "hybrid ε=1 (default)": HybridNumber(1.0, LOW, HIGH),
        "hybrid ε=3 (default)": HybridNumber(3.0, LOW, HIGH),
        "Duchi ε=1": DuchiNumber(1.0, LOW, HIGH),
    }


def _bin_of(x: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(EDGES), x, side="right")


def _true_shares(name: str) -> np.ndarray:
    draws = DISTRIBUTIONS[name](np.random.default_rng(12345), 2_000_000)
    return np.bincount(_bin_of(draws), minlength=len(EDGES) + 1) / draws.size


def _cell(args: tuple[str, str, int, int, int]) -> dict:
    distribution, mechanism_name, n, surveys, seed = args
    mechanism = _mechanisms()[mechanism_name]
    truth = _true_shares(distribution)
    rng = np.random.default_rng(seed)
    k = len(EDGES) + 1
    grr = GeneralizedRR(k, epsilon=mechanism.epsilon)
    hits = np.zeros(k)
    width = np.zeros(k)
    grr_hits = np.zeros(k)
    grr_width = np.zeros(k)
    started = time.perf_counter()
    for _ in range(surveys):
        x = DISTRIBUTIONS[distribution](rng, n)
        codes = mechanism.randomize(x, rng)
        values, counts = np.unique(codes, return_counts=True)
        r = randomized_bin_shares(mechanism, dict(zip(values.tolist(), counts.tolist(), strict=True)), EDGES, LEVEL)
        lo, hi = np.array(r.ci_low), np.array(r.ci_high)
        hits += (lo <= truth) & (truth <= hi)
        width += hi - lo
        reported = grr.randomize(_bin_of(x), rng)
        e = estimate(grr, np.bincount(reported, minlength=k))
        glo, ghi = (np.asarray(v, dtype=float).ravel() for v in e.ci(LEVEL))
        grr_hits += (glo <= truth) & (truth <= ghi)
        grr_width += ghi - glo
    return {
        "distribution": distribution,
        "mechanism": mechanism_name,
        "n": n,
        "coverage": hits / surveys,
        "width": width / surveys,
        "grr_coverage": grr_hits / surveys,
        "grr_width": grr_width / surveys,
        "seconds_per_survey": (time.perf_counter() - started) / surveys,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--surveys", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    cells = [
        (d, m, n, args.surveys, 1000 + 97 * i)
        for i, (d, m, n) in enumerate((d, m, n) for m in _mechanisms() for d in DISTRIBUTIONS for n in SIZES)
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(_cell, cells))
    seconds = time.perf_counter() - started
    se = 2 * np.sqrt(0.95 * 0.05 / args.surveys)
    lowest = min(float(r["coverage"].min()) for r in results)
    lowest_grr = min(float(r["grr_coverage"].min()) for r in results)
    per_survey = np.median([r["seconds_per_survey"] for r in results])
    lines = [
        "# A randomized number's bins: coverage of each bin's 95% interval",
        "",
        f"{args.surveys} simulated surveys per cell (coverage ± {se:.3f}, two standard errors at 0.95); "
        f"range [0, 30] cut at {', '.join(f'{e:g}' for e in EDGES)}. Produced by `benchmarks/number_bins.py` "
        f"in {seconds:.0f} s (Python {platform.python_version()}, {args.workers} workers on a shared 2-core "
        f"machine); one survey's bins took {per_survey:.2f} s (median over cells, both estimates).",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| from the number's reports: each bin's coverage ≥ 0.95 in every cell | lowest {lowest:.3f} | "
        f"{'yes' if lowest >= 0.95 else ('within noise' if lowest >= 0.95 - se else 'no')} |",
        f"| (for comparison) a second k-RR report of the bin at the same ε again | lowest {lowest_grr:.3f} | — |",
        "",
        "## Per cell",
        "",
        "Coverage per bin (in bin order), the lowest, and the mean width over the bins; the second report's beside it.",
        "",
        "| mechanism | distribution | n | coverage per bin | lowest | width | 2nd report: lowest | 2nd report: width |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in results:
        per_bin = " / ".join(f"{c:.3f}" for c in r["coverage"])
        lines.append(
            f"| {r['mechanism']} | {r['distribution']} | {r['n']:,} | {per_bin} | {r['coverage'].min():.3f} | "
            f"{r['width'].mean():.3f} | {r['grr_coverage'].min():.3f} | {r['grr_width'].mean():.3f} |"
        )
    text = "\n".join(lines) + "\n"
    if args.markdown:
        args.markdown.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
