"""The mean of a number question: how often its 95% interval covers, asked directly or randomized.

Written to ``number_intervals.md`` beside this file. For each distribution of true answers in the
range [0, 100] (whole numbers) and each n, ``--surveys`` simulated surveys; in each, the interval
for the population mean by:

- **t**: ``mean ± t·sd/√n``, what the app used for direct number questions before;
- **betting**: :func:`survey.privacy.bounded.mean_interval` on the answers (direct) or on the
  codes the default number mechanism's sampler sends (randomized: ``mechanism.estimate`` from their
  tallies; the reports are bounded by the grid's ends, so the same interval applies there);
- **Laplace normal**: ``LaplaceNumber.estimate``, ``mean ± z·sd/√n`` of its reports: they have no
  bound, so no interval can hold for every distribution.

Coverage is the share of surveys whose interval holds the true mean (± ``2·√(0.95·0.05/surveys)``,
about 0.01 at 2,000 surveys); width is the mean width, beside the t interval's (direct) as a ratio.
The distributions: uniform on 0..100; 95% zeros (else uniform 1..100); skewed counts (a log-normal,
rounded, capped at 100: median 3, mean ≈ 5.4); two points at the ends (10% at 100); all equal (every
answer 7).

Run ``python benchmarks/number_intervals.py --markdown benchmarks/number_intervals.md``
(``--surveys 300`` while developing).
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
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from survey.privacy.bounded import mean_interval
from survey.privacy.numeric import LaplaceNumber, default_number_mechanism

LOW, HIGH = 0, 100
LEVEL = 0.95
SIZES = (20, 30, 50, 100, 1000)
EPSILONS = (1.0, 2.0, 4.0)


def _uniform(rng, n):
    return rng.integers(0, 101, n)


def _mostly_zero(rng, n):
    return np.where(rng.random(n) < 0.95, 0, rng.integers(1, 101, n))


def _skewed(rng, n):
    return np.minimum(np.round(np.exp(rng.normal(1.1, 1.0, n))), 100)


def _ends(rng, n):
    return np.where(rng.random(n) < 0.1, 100, 0)


def _equal(rng, n):
    return np.full(n, 7)


DISTRIBUTIONS = {
    "uniform 0..100": _uniform,
    "95% zeros": _mostly_zero,
    "skewed counts": _skewed,
    "two points at the ends": _ends,
    "all equal (7)": _equal,
}


def true_mean(name: str) -> float:
    if name == "uniform 0..100":
        return 50.0
    if name == "95% zeros":
        return 0.05 * 50.5
    if name == "two points at the ends":
        return 10.0
    if name == "all equal (7)":
        return 7.0
    # skewed counts: exact sum over the rounded, capped log-normal
    edges = np.arange(0, 101) + 0.5
    cdf = stats.norm.cdf((np.log(edges) - 1.1) / 1.0)
    probabilities = np.diff(np.concatenate([[0.0], cdf[:-1], [1.0]]))
    return float(np.arange(0, 101) @ probabilities)


def _t(values: np.ndarray) -> tuple[float, float]:
    n = values.size
    mean, sd = values.mean(), values.std(ddof=1)
    half = stats.t.ppf(0.5 + LEVEL / 2, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def _from_codes(mechanism, truth: np.ndarray, rng: np.random.Generator):
    """The mechanism's estimate from the tallies of the codes its browser sampler would send."""
    codes, counts = np.unique(mechanism.randomize(truth, rng), return_counts=True)
    return mechanism.estimate(dict(zip(codes.tolist(), counts.tolist(), strict=True)), LEVEL)


def _cell(job: tuple[str, int, str, float | None, int, int]) -> dict:
    name, n, how, epsilon, surveys, seed = job
    rng = np.random.default_rng(seed)
    mu = true_mean(name)
    draw = DISTRIBUTIONS[name]
    hits = {"t": 0, "betting": 0, "laplace": 0}
    widths = {"t": 0.0, "betting": 0.0, "laplace": 0.0}
    for _ in range(surveys):
        truth = draw(rng, n).astype(float)
        if how == "direct":
            lo, hi = _t(truth)
            hits["t"] += lo <= mu <= hi
            widths["t"] += hi - lo
            values, counts = np.unique(truth, return_counts=True)
            r = mean_interval(values, counts, LOW, HIGH, LEVEL)
        else:
            r = _from_codes(default_number_mechanism(epsilon, LOW, HIGH), truth, rng)
            noisy = _from_codes(LaplaceNumber(epsilon, LOW, HIGH), truth, rng)
            hits["laplace"] += noisy.low <= mu <= noisy.high
            widths["laplace"] += noisy.high - noisy.low
        hits["betting"] += r.low <= mu <= r.high
        widths["betting"] += r.high - r.low
    return {
        "name": name,
        "n": n,
        "how": how,
        "epsilon": epsilon,
        "coverage": {k: v / surveys for k, v in hits.items()},
        "width": {k: v / surveys for k, v in widths.items()},
    }


def run(surveys: int, workers: int) -> list[dict]:
    jobs = []
    seed = 20261128
    for name in DISTRIBUTIONS:
        for n in SIZES:
            jobs.append((name, n, "direct", None, surveys, seed := seed + 1))
            for epsilon in EPSILONS:
                jobs.append((name, n, "randomized", epsilon, surveys, seed := seed + 1))
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_cell, jobs))


def report(results: list[dict], surveys: int, seconds: float) -> str:
    error = 2 * math.sqrt(LEVEL * (1 - LEVEL) / surveys)
    lines = [
        "# The mean of a number question: coverage of its 95% interval",
        "",
        f"{surveys:,} simulated surveys per cell (coverage ± {error:.3f}, two standard errors at 0.95); "
        f"answers in [{LOW}, {HIGH}]. Produced by `benchmarks/number_intervals.py` in {seconds:.0f} s "
        f"(Python {platform.python_version()}).",
        "",
        "## Targets",
        "",
    ]
    direct = [r for r in results if r["how"] == "direct"]
    randomized = [r for r in results if r["how"] == "randomized"]
    worst_direct = min(r["coverage"]["betting"] for r in direct)
    worst_randomized = min(r["coverage"]["betting"] for r in randomized)
    worst_t = min(r["coverage"]["t"] for r in direct)
    lines += [
        "| target | measured | met |",
        "|---|---|---|",
        f"| direct, betting interval: coverage ≥ 0.95 in every cell | lowest {worst_direct:.3f} | "
        f"{'yes' if worst_direct >= LEVEL - error else 'NO'} |",
        f"| randomized (default mechanism), betting interval: ≥ 0.95 in every cell | lowest {worst_randomized:.3f} | "
        f"{'yes' if worst_randomized >= LEVEL - error else 'NO'} |",
        f"| (for comparison) the t interval, direct | lowest {worst_t:.3f} | — |",
        "",
        "## Asked directly",
        "",
        "| distribution | n | t coverage | betting coverage | t width | betting width | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in direct:
        c, w = r["coverage"], r["width"]
        ratio = w["betting"] / w["t"] if w["t"] > 0 else math.inf
        lines.append(
            f"| {r['name']} | {r['n']:,} | {c['t']:.3f} | {c['betting']:.3f} | {w['t']:.2f} | "
            f"{w['betting']:.2f} | {ratio:.2f} |"
        )
    lines += [
        "",
        "The t interval has zero width when every answer is equal (it covers only by luck of the "
        "distribution being a single point); the ratio is then infinite.",
        "",
        "## Randomized in the browser (default mechanism: the hybrid), beside Laplace",
        "",
        "| distribution | n | ε | betting coverage | Laplace normal coverage | betting width | Laplace width |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in randomized:
        c, w = r["coverage"], r["width"]
        lines.append(
            f"| {r['name']} | {r['n']:,} | {r['epsilon']:g} | {c['betting']:.3f} | {c['laplace']:.3f} | "
            f"{w['betting']:.1f} | {w['laplace']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surveys", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    started = time.perf_counter()
    results = run(args.surveys, args.workers)
    text = report(results, args.surveys, time.perf_counter() - started)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
