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

from survey.privacy.bounded import CAP, bet_grid, mean_interval
from survey.privacy.numeric import GRID_STEPS, LaplaceNumber, default_number_mechanism

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


#: The live interval is watched after every answer of a stream this long, tuned to it.
STREAM = 1000


def _ever_missed(z: np.ndarray, mu: float, bets: np.ndarray) -> np.ndarray:
    """For each stream (rows of ``z`` in [0, 1]), whether the live betting interval ever excluded
    ``mu`` after some answer: it excludes it exactly when either gambler's average wealth at ``mu``
    reaches ``2/α``, and each wealth is a running product, so no interval is solved."""
    threshold = math.log(2 / (1 - LEVEL))
    missed = np.zeros(z.shape[0], dtype=bool)
    for side, cap in ((z - mu, CAP / mu), (mu - z, CAP / (1 - mu))):
        for rows in range(0, z.shape[0], 200):  # 200 streams at a time: 8 bets × 200 × 1,000 doubles
            chunk = side[rows : rows + 200]
            logs = np.cumsum(np.log1p(np.minimum(bets, cap)[:, None, None] * chunk[None, :, :]), axis=2)
            top = logs.max(axis=0)
            average = top + np.log(np.mean(np.exp(logs - top), axis=0))
            missed[rows : rows + 200] |= (average >= threshold).any(axis=1)
    return missed


def _t_ever_missed(x: np.ndarray, mu: float) -> np.ndarray:
    """Whether the t interval, recomputed after every answer from the second on, ever excluded ``mu``."""
    n = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / n
    second = np.cumsum(x**2, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(second - mean**2, 0) * n / np.maximum(n - 1, 1))
        half = stats.t.ppf(0.5 + LEVEL / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
    outside = np.abs(mean - mu) > half
    return outside[:, 1:].any(axis=1)


def _live_cell(job: tuple[str, str, float | None, int, int]) -> dict:
    name, how, epsilon, streams, seed = job
    rng = np.random.default_rng(seed)
    mu = true_mean(name)
    bets = bet_grid(STREAM, LEVEL)
    truth = DISTRIBUTIONS[name](rng, streams * STREAM).astype(float).reshape(streams, STREAM)
    if how == "direct":
        low, high, values = LOW, HIGH, truth
    else:
        mechanism = default_number_mechanism(epsilon, LOW, HIGH)
        values = mechanism.value_of(mechanism.randomize(truth, rng))
        low, high = (float(v) for v in mechanism.value_of([0, GRID_STEPS]))
    z = (values - low) / (high - low)
    m = (mu - low) / (high - low)
    return {
        "name": name,
        "how": how,
        "epsilon": epsilon,
        "betting": float(_ever_missed(z, m, bets).mean()),
        "t": float(_t_ever_missed(values, mu).mean()) if how == "direct" else None,
    }


def run_live(streams: int, workers: int) -> list[dict]:
    jobs = []
    seed = 20261129
    for name in DISTRIBUTIONS:
        jobs.append((name, "direct", None, streams, seed := seed + 1))
        for epsilon in (1.0, 4.0):
            jobs.append((name, "randomized", epsilon, streams, seed := seed + 1))
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_live_cell, jobs))


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


def report(results: list[dict], surveys: int, seconds: float, live: list[dict], streams: int) -> str:
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
        f"| the live interval, watched after every answer up to {STREAM:,}: ever misses ≤ 0.05 in every cell | "
        f"highest {max(r['betting'] for r in live):.3f} (± {2 * math.sqrt(0.05 * 0.95 / streams):.3f}) | "
        f"{'yes' if max(r['betting'] for r in live) <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / streams) else 'NO'} |",
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
    lines += [
        "",
        f"## Watched after every answer (live interval, {streams:,} streams of {STREAM:,} answers)",
        "",
        "The share of streams in which the interval excluded the true mean at some moment. The live interval is "
        f"the betting interval with its bets tuned to {STREAM:,} answers (valid at every look, by Ville's "
        "inequality); beside it the t interval recomputed after every answer, what a results page watched "
        "as answers arrive would show without it.",
        "",
        "| distribution | asked | live interval ever missed | t interval ever missed |",
        "|---|---|---:|---:|",
    ]
    for r in live:
        asked = "directly" if r["how"] == "direct" else f"randomized, ε = {r['epsilon']:g}"
        t = "—" if r["t"] is None else f"{r['t']:.3f}"
        lines.append(f"| {r['name']} | {asked} | {r['betting']:.3f} | {t} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surveys", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    started = time.perf_counter()
    results = run(args.surveys, args.workers)
    live = run_live(args.streams, args.workers)
    text = report(results, args.surveys, time.perf_counter() - started, live, args.streams)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
