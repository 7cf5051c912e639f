"""The lowest coverage of custom-matrix intervals, by exact enumeration over every count vector.

A custom (non-affine) matrix's interval for one category depends on every reported count, so its
coverage at a population ``π`` is the finite sum over every count vector ``x`` with ``Σx = n`` of
``Multinomial(x; n, Qπ)·1[π_v in CI_v(x)]``. This benchmark computes the intervals
``Estimate.ci()`` gives for *every* count vector at each ``n`` (the app's own code, nothing
re-implemented), then the sum at every population of a dense grid of the simplex (step 1/30 for
three categories, 1/20 for four) and at populations within 10⁻⁴–0.07 of every vertex and edge,
where the likelihood's boundary makes intervals fail. No simulation: the figures have no
Monte-Carlo error; they are exact at the populations listed, and the grid is what could be missed
between them.

It prints, per design, level and n, the lowest coverage over categories and populations, where it
is, the floor the interval promises (``1 − 1.4·(1 − level)``, the floored Wilson's), and the
expected width. ``--before`` also evaluates the plain profile-likelihood interval (without the
continuity correction and the vertex test of ``survey.privacy.estimation``), the interval the app
showed until now.

Run with ``make bench``; the committed ``coverage_exact.md`` beside this file is its last output.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.special import gammaln

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from estimators import custom_designs

from survey.privacy import Mechanism, estimate
from survey.privacy.estimation import FLOOR_FACTOR, _profile_interval, _z

#: (levels, sample sizes) per number of categories; four categories at n = 50 is 23,426 vectors.
CELLS = {
    3: [((0.95,), (10, 20, 30, 50, 100, 200)), ((0.9, 0.99), (30, 100))],
    4: [((0.95,), (10, 20, 30, 50)), ((0.9, 0.99), (30,))],
}
NEAR = (1e-4, 1e-3, 3e-3, 0.01, 0.02, 0.03, 0.05, 0.07)


def count_vectors(n: int, k: int) -> np.ndarray:
    """Every vector of k non-negative whole numbers summing to n (stars and bars)."""
    rows = []
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        edges = (-1, *bars, n + k - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(k)])
    return np.array(rows, dtype=float)


def populations(k: int) -> np.ndarray:
    """A grid of the simplex, and points near every vertex and along every edge."""
    steps = 30 if k == 3 else 20
    points = list(count_vectors(steps, k) / steps)
    for j in range(k):
        for near in NEAR:
            spread = np.full(k, near / (k - 1))
            spread[j] = 1.0 - near
            points.append(spread)
            for u in range(k):
                if u != j:
                    edge = np.zeros(k)
                    edge[j], edge[u] = 1.0 - near, near
                    points.append(edge)
    return np.unique(np.round(np.array(points), 12), axis=0)


def coverage(q: np.ndarray, x: np.ndarray, low: np.ndarray, high: np.ndarray, pops: np.ndarray):
    """Coverage and expected width per population and category (chunks keep memory small)."""
    n = x[0].sum()
    log_coef = gammaln(n + 1) - gammaln(x + 1).sum(axis=1)
    covered = np.empty((len(pops), q.shape[1]))
    width = np.empty_like(covered)
    for start in range(0, len(pops), 256):
        pop = pops[start : start + 256]
        lam = pop @ q.T
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(x[None] > 0, x[None] * np.log(lam[:, None, :]), 0.0)
        pmf = np.exp(log_coef[None] + terms.sum(axis=-1))
        for v in range(q.shape[1]):
            truth = pop[:, v, None]
            held = (low[None, :, v] <= truth + 1e-12) & (truth <= high[None, :, v] + 1e-12)
            covered[start : start + 256, v] = (pmf * held).sum(axis=1)
            width[start : start + 256, v] = pmf @ (high[:, v] - low[:, v])
    return covered, width


def cell(args: tuple[str, np.ndarray, float, int, bool]) -> dict:
    name, q, level, n, before = args
    t0 = time.perf_counter()
    k = q.shape[1]
    x = count_vectors(n, k)
    result = estimate(Mechanism(q), x)
    low, high = result.ci(level)
    pops = populations(k)
    covered, width = coverage(q, x, low, high, pops)
    worst = np.unravel_index(np.argmin(covered), covered.shape)
    out = {
        "name": name,
        "k": k,
        "level": level,
        "n": n,
        "vectors": len(x),
        "populations": len(pops),
        "lowest": float(covered[worst]),
        "where": (int(worst[1]), pops[worst[0]]),
        "width": float(width.mean()),
        "seconds": 0.0,
    }
    if before:
        # the plain profile interval, without the continuity correction and the vertex test
        old_low, old_high = _plain_profile(result, level)
        old_covered, old_width = coverage(q, x, old_low, old_high, pops)
        out["before"] = float(old_covered.min())
        out["before_width"] = float(old_width.mean())
    out["seconds"] = time.perf_counter() - t0
    return out


def _plain_profile(result, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The profile-likelihood interval alone, what ``ci()`` gave before this benchmark was written."""
    z = _z(level)
    q = result.mechanism.matrix
    low = np.empty(result.counts.shape)
    high = np.empty(result.counts.shape)
    for i, row in enumerate(result.counts):
        total = float(row.sum())
        for v in range(q.shape[1]):
            se = z * float(result.standard_errors[i, v])
            lo, hi = _profile_interval(q, row / total, result.proportions[i], v, z * z / (2.0 * total), se)
            low[i, v], high[i, v] = min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)
    return low, high


def report(rows: list[dict], args: argparse.Namespace, elapsed: float) -> str:
    import numpy  # noqa: F401  (version below)

    lines = [
        "# Custom matrices: the lowest coverage over every count vector",
        "",
        f"`python benchmarks/coverage_exact.py --workers {args.workers}{' --before' if args.before else ''}` "
        f"({time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, numpy {np.__version__}; "
        f"{elapsed / 60:.1f} min on {args.workers} processes).",
        "",
        "Every count vector at each n is enumerated and weighted by its multinomial probability: the "
        "figures are exact sums, not simulations. Populations: a grid of the simplex (step 1/30 for "
        "three categories, 1/20 for four) and points 10⁻⁴ to 0.07 from every vertex, toward every other "
        "vertex and spread evenly. The interval is `Estimate.ci(level)` (profile likelihood, widened to the "
        "counts a quarter report away and to 1 where an exact test keeps a vertex); the floor is "
        "1 − 1.4·(1 − level), the floored Wilson interval's promise for "
        "every affine design."
        + (" **Before** is the plain profile-likelihood interval (the app until now)." if args.before else ""),
        "",
    ]
    header = (
        "| design | level | n | count vectors | populations | lowest coverage "
        "| where (category: population) | floor | met |"
    )
    rule = "|---|---|---|---|---|---|---|---|---|"
    if args.before:
        header += " before: lowest |"
        rule += "---|"
    header += " mean width |"
    rule += "---|"
    if args.before:
        header += " width before |"
        rule += "---|"
    lines += [header, rule]
    for r in sorted(rows, key=lambda r: (r["k"], r["name"], r["level"], r["n"])):
        floor = 1.0 - FLOOR_FACTOR * (1.0 - r["level"])
        v, pop = r["where"]
        line = (
            f"| {r['name']} | {r['level']:g} | {r['n']} | {r['vectors']:,} | {r['populations']:,} "
            f"| {r['lowest']:.4f} | {v}: ({', '.join(f'{p:.4g}' for p in pop)}) | {floor:.3f} "
            f"| {'yes' if r['lowest'] >= floor - 1e-9 else '**no**'} |"
        )
        if args.before:
            line += f" {r['before']:.4f} |"
        line += f" {r['width']:.4f} |"
        if args.before:
            line += f" {r['before_width']:.4f} |"
        lines.append(line)
    misses = [r for r in rows if r["lowest"] < 1.0 - FLOOR_FACTOR * (1.0 - r["level"]) - 1e-9]
    lines += [""]
    if misses:
        worst = min(misses, key=lambda r: r["lowest"] - (1.0 - FLOOR_FACTOR * (1.0 - r["level"])))
        lines.append(
            f"The floor is **not** kept everywhere: the lowest is {worst['lowest']:.4f} at level {worst['level']:g} "
            f"({worst['name']}, n = {worst['n']}). That is the figure the docs state."
        )
    else:
        lines.append("The floor is kept in every cell.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--before", action="store_true", help="also the interval without the vertex test")
    parser.add_argument("--quick", action="store_true", help="n ≤ 30 only")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    jobs = []
    for name, q in custom_designs():
        for levels, sizes in CELLS[q.shape[1]]:
            for level in levels:
                for n in sizes:
                    if not args.quick or n <= 30:
                        jobs.append((name, q, level, n, args.before))
    jobs.sort(key=lambda j: -(j[3] ** (j[1].shape[1] - 1)))
    t0 = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = []
        for row in pool.map(cell, jobs):
            print(
                f"{row['name']} {row['level']} n={row['n']}: {row['lowest']:.4f} ({row['seconds']:.0f} s)", flush=True
            )
            rows.append(row)
    text = report(rows, args, time.perf_counter() - t0)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
