"""An audit of ε for the number mechanisms: does the browser's number sampler leak more than configured?

The browser's own sampler (``static/js/respond/numbers.js``, ``SurveyNumbers.reports`` with
``crypto.getRandomValues``), loaded into headless Chromium, draws ``--draws`` codes for a true
number at each end of the range (the pair of true values whose reports differ most: ε is attained
between them). The codes are grouped into ``--bins`` bins of the grid (grouping is
post-processing, so the binned ratio's ε is at most the sampler's), and :func:`epsilon_lower_bound`
of ``epsilon_audit.py`` gives the point estimate and a one-sided 99% lower confidence bound on the
sampler's ε over the bins' ratios (Clopper-Pearson, Bonferroni over the ratios). Beside them, the
*binned* ε of the exact code probabilities (``number_planning.code_probabilities``): the most any
audit with these bins can see (it equals ε where a bin lies wholly inside one window and outside
the other's).

PASS: the lower bound does not exceed the configured ε and no code outside the mechanism's domain
(or in a bin it gives probability 0) was drawn. A sanity row per mechanism samples with the
constants of a mechanism at 1.5 ε while the configured ε is the original: its lower bound must
exceed the configured ε (FAIL, detected).

Run ``python benchmarks/number_epsilon_audit.py --markdown benchmarks/number_epsilon_audit.md``.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from epsilon_audit import LEVEL, epsilon_lower_bound

from survey.privacy.number_planning import code_probabilities
from survey.privacy.numeric import (
    GRID_STEPS,
    DuchiNumber,
    HybridNumber,
    LaplaceNumber,
    NumberMechanism,
    PiecewiseNumber,
)
from tests.live import chromium

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "static/js/respond/randomizer.js", ROOT / "static/js/respond/numbers.js"]
LOW, HIGH = 0.0, 100.0
CHUNK = 50_000
#: Laplace codes are unbounded: its bins cover this many scales beyond the range on each side.
LAPLACE_SPAN = 6.0


def mechanisms() -> list[NumberMechanism]:
    found: list[NumberMechanism] = []
    for epsilon in (0.5, 1.0, 2.0, 4.0):
        found += [
            HybridNumber(epsilon, LOW, HIGH),
            PiecewiseNumber(epsilon, LOW, HIGH),
            DuchiNumber(epsilon, LOW, HIGH),
        ]
    found += [LaplaceNumber(1.0, LOW, HIGH), LaplaceNumber(4.0, LOW, HIGH)]
    return found


def _edges(mechanism: NumberMechanism, bins: int) -> np.ndarray:
    if math.isfinite(mechanism.bound):
        return np.linspace(0, GRID_STEPS + 1, bins + 1).round().astype(np.int64)
    reach = round(LAPLACE_SPAN * mechanism.scale / mechanism.step)
    inner = np.linspace(-reach, GRID_STEPS + reach, bins - 1).round().astype(np.int64)
    return np.concatenate([[np.iinfo(np.int64).min // 2], inner, [np.iinfo(np.int64).max // 2]])


def _exact_bins(mechanism: NumberMechanism, edges: np.ndarray) -> np.ndarray:
    """P(bin | t) for t = -1 and t = 1: rows bins, columns the two true values."""
    if not math.isfinite(mechanism.bound):
        return np.ones((len(edges) - 1, 2))  # Laplace: every bin is possible under both
    columns = []
    for t in (-1.0, 1.0):
        p = code_probabilities(mechanism, t)
        columns.append(np.add.reduceat(p, edges[:-1]))
    return np.stack(columns, axis=1)


def draw(page, sampler: dict, x: float, draws: int) -> np.ndarray:
    out = []
    for start in range(0, draws, CHUNK):
        n = min(CHUNK, draws - start)
        out.append(np.array(page.evaluate("([s, x, n]) => SurveyNumbers.reports(s, x, n)", [sampler, x, n])))
    return np.concatenate(out)


def audit_one(page, mechanism: NumberMechanism, sampled_with: NumberMechanism, draws: int, bins: int) -> dict:
    edges = _edges(mechanism, bins)
    exact = _exact_bins(mechanism, edges)
    counts = np.zeros((bins, 2), dtype=np.int64)
    outside = 0
    for column, x in enumerate((LOW, HIGH)):
        codes = draw(page, sampled_with.sampler(), x, draws)
        outside += int(sum(not mechanism.reports.contains(int(c)) for c in np.unique(codes)))
        counts[:, column] = np.histogram(codes, bins=edges)[0]
    bound = epsilon_lower_bound(counts, exact, LEVEL)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.abs(np.log(exact[:, 0] / exact[:, 1]))
    binned = (
        float(np.nanmax(np.where(np.isfinite(ratios), ratios, np.nan))) if math.isfinite(mechanism.bound) else math.nan
    )
    return {
        "mechanism": mechanism,
        "broken": sampled_with is not mechanism,
        "point": bound.point,
        "lower": bound.lower,
        "ratios": bound.ratios,
        "impossible": bound.impossible + outside,
        "binned": binned,
    }


def verdict(row: dict) -> str:
    passed = row["lower"] <= row["mechanism"].epsilon and row["impossible"] == 0
    if row["broken"]:
        return "FAIL (detected, as it must)" if not passed else "**PASS: the audit missed a broken sampler**"
    return "PASS" if passed else "**FAIL**"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200_000)
    parser.add_argument("--bins", type=int, default=40)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.set_content("<!doctype html><title>audit</title>")
        for script in SCRIPTS:
            page.add_script_tag(path=str(script))
        version = browser.version
        for mechanism in mechanisms():
            rows.append(audit_one(page, mechanism, mechanism, args.draws, args.bins))
            if mechanism.epsilon == 1.0:
                broken = type(mechanism)(1.5 * mechanism.epsilon, LOW, HIGH)
                rows.append(audit_one(page, mechanism, broken, args.draws, args.bins))
    seconds = time.perf_counter() - started
    honest = [r for r in rows if not r["broken"]]
    broken_rows = [r for r in rows if r["broken"]]
    lines = [
        "# ε audit of the browser's number sampler",
        "",
        f"`python benchmarks/number_epsilon_audit.py` (Chromium {version} headless; Python "
        f"{platform.python_version()}; {args.draws:,} codes per true value at each end of [{LOW:g}, {HIGH:g}], "
        f"{args.bins} bins; {seconds / 60:.1f} min). *Binned ε* is the largest log-ratio of the exact bin "
        "probabilities (what these bins can show at most); *99% lower bound* is a one-sided lower confidence "
        "bound on the sampler's ε from the counts (Clopper-Pearson, Bonferroni over the *m* ratios).",
        "",
        "| target | met |",
        "|---|---|",
        f"| every honest sampler passes (lower bound ≤ configured ε, no impossible code) | "
        f"{'yes' if all(verdict(r) == 'PASS' for r in honest) else 'NO'} ({len(honest)} rows) |",
        f"| every broken sampler (constants of 1.5 ε) is detected | "
        f"{'yes' if all(verdict(r).startswith('FAIL (detected') for r in broken_rows) else 'NO'} "
        f"({len(broken_rows)} rows) |",
        "",
        "| mechanism | configured ε | sampler | binned ε | point ε̂ | 99% lower bound | m | impossible | verdict |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        m = r["mechanism"]
        sampler = f"**broken**: constants of ε = {1.5 * m.epsilon:g}" if r["broken"] else "`SurveyNumbers.reports`"
        binned = "—" if math.isnan(r["binned"]) else f"{r['binned']:.4f}"
        lines.append(
            f"| {m.design} | {m.epsilon:g} | {sampler} | {binned} | {r['point']:.4f} | {r['lower']:.4f} | "
            f"{r['ratios']} | {r['impossible']} | {verdict(r)} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0 if all(verdict(r) == "PASS" for r in honest) else 1


if __name__ == "__main__":
    sys.exit(main())
