"""An audit of ε: does the respondent's page really sample with no more privacy loss than configured?

For every design the app offers we create a survey, serve it, open its page in headless Chromium,
read each question's matrix columns from the page (``data-columns``), and let the page's own
randomizer (``SurveyRandomizer.sampleCounts``, the code that randomizes real answers) draw
``--draws`` reports for every true answer. From the counts we compute:

* the point estimate of the empirical ε: the largest ``ln(P̂(r | t) / P̂(r | t'))`` over pairs of
  true answers ``t ≠ t'`` and reports ``r`` the matrix gives a non-zero probability under both;
* a one-sided 99% lower confidence bound on the sampler's true ε: for each such ratio, the
  Clopper-Pearson lower bound of the numerator probability over the Clopper-Pearson upper bound of
  the denominator, maximized over the ratios. The 1% is split by Bonferroni equally over the ``m``
  ratios examined for the design, and each ratio's share equally between its two bounds, so with
  probability at least 99% every ratio's bound holds at once and their maximum is at most the
  sampler's true ε.

A design PASSES when that lower bound does not exceed the configured ε (computed by
``survey.privacy.epsilon_of_matrix`` on the matrix stored in the database) and no report the matrix
rules out was ever drawn. A lower bound above the configured ε would mean, with 99% confidence, that
the browser leaks more than the survey promises. Sanity rows show that the audit can fail: a
deliberately broken sampler injected into the page reports the truth 10 percentage points more often
than its column says (the OpenDP #480 kind of bug), and its lower bound must exceed the configured ε.

Run with ``make bench``; the committed ``epsilon_audit.md`` beside this file is its last output.
The statistics (:func:`clopper_pearson_lower`, :func:`clopper_pearson_upper`,
:func:`epsilon_lower_bound`) are pure functions that ``tests/test_epsilon_audit.py`` checks.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import math
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from survey.privacy import epsilon_of_matrix
from tests.live import chromium, live_site

LEVEL = 0.99
DRAWS = 200_000
CHUNK = 50_000
BROKEN_BIAS = 0.10
#: The page renders the matrix rebuilt from the stored parameters; it must equal the stored one to rounding.
PAGE_TOLERANCE = 1e-12


# -- the statistics (pure; unit-tested without a browser) ----------------------------------------------


def clopper_pearson_lower(successes: int, n: int, alpha: float) -> float:
    """One-sided ``1 − alpha`` Clopper-Pearson lower bound on a binomial probability (0 when none seen)."""
    if not 0 <= successes <= n or n <= 0:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes} of {n}")
    return 0.0 if successes == 0 else float(beta.ppf(alpha, successes, n - successes + 1))


def clopper_pearson_upper(successes: int, n: int, alpha: float) -> float:
    """One-sided ``1 − alpha`` Clopper-Pearson upper bound on a binomial probability (1 when all seen)."""
    if not 0 <= successes <= n or n <= 0:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes} of {n}")
    return 1.0 if successes == n else float(beta.ppf(1.0 - alpha, successes + 1, n - successes))


@dataclass(frozen=True)
class EpsilonBound:
    """What the counts of one design say about its ε."""

    point: float  #: largest empirical log-ratio (∞ if a denominator count is 0)
    lower: float  #: one-sided lower confidence bound on the sampler's ε
    ratios: int  #: number of ratios examined (the Bonferroni divisor)
    alpha_each: float  #: error probability spent on each one-sided Clopper-Pearson bound
    impossible: int  #: draws of reports the matrix gives probability 0 for that true answer
    worst: tuple[int, int, int] | None  #: (report, numerator truth, denominator truth) of the lower bound


def epsilon_lower_bound(counts: Any, matrix: Any, level: float = LEVEL) -> EpsilonBound:
    """Point estimate and one-sided ``level`` lower confidence bound on ε from sampled counts.

    ``counts[r, t]`` is how often report ``r`` was drawn among the draws for true answer ``t``
    (columns may have different totals); ``matrix[r, t]`` is the configured design, used only to
    decide, before looking at the counts, which ratios exist: ``(r, t, t')`` with ``t ≠ t'`` and a
    non-zero configured probability of ``r`` under both. The ``1 − level`` error is split equally
    over those ratios (Bonferroni) and, within a ratio, equally between the lower bound of its
    numerator and the upper bound of its denominator.
    """
    c = np.asarray(counts, dtype=np.int64)
    q = np.asarray(matrix, dtype=float)
    if c.shape != q.shape or c.ndim != 2:
        raise ValueError(f"counts {c.shape} and matrix {q.shape} must have the same 2-d shape")
    if not 0.0 < level < 1.0:
        raise ValueError(f"the level must be between 0 and 1, got {level!r}")
    n = c.sum(axis=0)
    if np.any(n <= 0) or np.any(c < 0):
        raise ValueError("every true answer needs draws, and counts cannot be negative")
    k_r, k = q.shape
    ratios = [(r, t, u) for r in range(k_r) for t in range(k) for u in range(k) if t != u and q[r, t] > 0 < q[r, u]]
    impossible = int(c[q == 0].sum())
    if not ratios:
        return EpsilonBound(0.0, 0.0, 0, 0.0, impossible, None)
    alpha_each = (1.0 - level) / len(ratios) / 2.0
    lows = {(r, t): clopper_pearson_lower(int(c[r, t]), int(n[t]), alpha_each) for r, t, _ in ratios}
    highs = {(r, u): clopper_pearson_upper(int(c[r, u]), int(n[u]), alpha_each) for r, _, u in ratios}
    point, lower, worst = -math.inf, -math.inf, None
    for r, t, u in ratios:
        share_t, share_u = c[r, t] / n[t], c[r, u] / n[u]
        if share_u == 0:
            ratio = math.inf if share_t > 0 else -math.inf
        else:
            ratio = -math.inf if share_t == 0 else math.log(share_t / share_u)
        point = max(point, ratio)
        bound = -math.inf if lows[r, t] == 0 else math.log(lows[r, t] / highs[r, u])
        if bound > lower:
            lower, worst = bound, (r, t, u)
    # ε is never below 0 (the log-ratio and its mirror image cannot both be negative).
    return EpsilonBound(max(point, 0.0), max(lower, 0.0), len(ratios), alpha_each, impossible, worst)


def false_alarm_bound(matrix: Any, level: float = LEVEL) -> float:
    """How likely an honest sampler of ``matrix`` is to FAIL the audit, at most.

    A lower bound can only exceed ε through a ratio whose true value is ε, and a ratio's bound only
    exceeds its true value when one of its two Clopper-Pearson bounds fails, which has probability at
    most ``(1 − level)/m``. So the chance is at most ``(1 − level)·(ratios at ε)/m``; 0 when ε = ∞.
    """
    q = np.asarray(matrix, dtype=float)
    k_r, k = q.shape
    ratios = [(r, t, u) for r in range(k_r) for t in range(k) for u in range(k) if t != u and q[r, t] > 0 < q[r, u]]
    eps = epsilon_of_matrix(q)
    if not ratios or math.isinf(eps):
        return 0.0
    at_max = sum(math.log(q[r, t] / q[r, u]) >= eps - 1e-12 for r, t, u in ratios)
    return (1.0 - level) * at_max / len(ratios)


def biased_column(column: list[float], truth: int, bias: float = BROKEN_BIAS) -> list[float]:
    """The column of a broken sampler: the truth ``bias`` more likely, the other reports scaled down."""
    keep = column[truth]
    raised = min(1.0, keep + bias)
    rest = 1.0 - keep
    return [raised if r == truth else (p * (1.0 - raised) / rest if rest > 0 else 0.0) for r, p in enumerate(column)]


# -- the surveys audited -----------------------------------------------------------------------------


def _yes_no(key: str, privacy: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "kind": "yes_no", "text": f"Audit question {key}?", "privacy": privacy}


def _choice(key: str, k: int, privacy: dict[str, Any]) -> dict[str, Any]:
    options = [f"option {i + 1}" for i in range(k)]
    return {"key": key, "kind": "choice", "text": f"Audit question {key}?", "options": options, "privacy": privacy}


SPECS: list[dict[str, Any]] = [
    {
        "title": "Audit: coin flip",
        "slug": "audit-coin-flip",
        "questions": [
            _yes_no("cf_seed", {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5}),
            _yes_no("cf_low", {"design": "coin_flip", "truth_probability": 0.25, "yes_probability": 0.5}),
            _yes_no("cf_skew", {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 0.3}),
            _yes_no("cf_high", {"design": "coin_flip", "truth_probability": 0.8, "yes_probability": 0.2}),
            _yes_no(
                "cf_one_sided",
                {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 1.0, "allow_one_sided": True},
            ),
        ],
    },
    {
        "title": "Audit: Warner and unrelated question",
        "slug": "audit-warner-unrelated",
        "questions": [
            _yes_no("warner_75", {"design": "warner", "p": 0.75}),
            _yes_no("warner_30", {"design": "warner", "p": 0.3}),
            _yes_no(
                "unrelated", {"design": "unrelated_question", "sensitive_probability": 0.6, "unrelated_yes_rate": 0.3}
            ),
        ],
    },
    {
        "title": "Audit: GRR yes/no",
        "slug": "audit-grr-binary",
        "questions": [
            _yes_no(f"grr2_eps{e:g}".replace(".", "_"), {"design": "grr", "epsilon": e}) for e in (0.5, 1, 2, 4)
        ],
    },
    {
        "title": "Audit: GRR five options",
        "slug": "audit-grr-five",
        "questions": [
            _choice(f"grr5_eps{e:g}".replace(".", "_"), 5, {"design": "grr", "epsilon": e}) for e in (0.5, 1, 2, 4)
        ],
    },
    {
        "title": "Audit: forced response",
        "slug": "audit-forced",
        "questions": [
            _choice("forced3", 3, {"design": "forced_response", "forced": [0.1, 0.15, 0.05]}),
            _choice("forced5", 5, {"design": "forced_response", "forced": [0.05, 0.1, 0.05, 0.1, 0.1]}),
        ],
    },
]
#: Questions also audited with the broken sampler (the sanity rows).
BROKEN = ("cf_seed", "grr5_eps1")


# -- serving the surveys and sampling in the browser ----------------------------------------------------


@dataclass
class Question:
    slug: str
    key: str
    design: str
    parameters: dict[str, Any]
    matrix: np.ndarray  # as stored in the database
    configured: float  # epsilon_of_matrix(matrix)
    page_difference: float = math.nan  # largest |page column entry − stored matrix entry|


@contextmanager
def live_server() -> Iterator[tuple[str, dict[str, Question]]]:
    """Serve the audit surveys from a temporary SQLite database; yields the base URL and the questions."""
    from survey.domain.models import Survey
    from survey.domain.surveys.specs import create_survey_from_spec

    questions: dict[str, Question] = {}

    def setup(session) -> None:
        from sqlalchemy import select

        for spec in SPECS:
            create_survey_from_spec(session, spec)
        session.flush()
        for survey in session.scalars(select(Survey).order_by(Survey.id)):
            for q in survey.randomized_questions:
                stored = np.array(q.design.matrix, dtype=float)
                configured = epsilon_of_matrix(stored)
                rebuilt = q.mechanism().epsilon
                if not math.isclose(configured, rebuilt, rel_tol=1e-12):
                    raise SystemExit(f"{q.key}: ε of the stored matrix {configured!r} differs from {rebuilt!r}")
                questions[q.key] = Question(
                    survey.slug, q.key, q.design.mechanism_name, dict(q.design.parameters), stored, configured
                )

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp, live_site(Path(tmp), "epsilon-audit", setup) as (_app, base):
        yield base, questions


BROKEN_SAMPLER = """() => {
  window.__auditBrokenSampleCounts = (column, truth, draws, bias) => {
    // Deliberately wrong: the true answer is reported `bias` more often than the column says.
    const keep = column[truth], raised = Math.min(1, keep + bias), rest = 1 - keep;
    const wrong = column.map((p, r) => r === truth ? raised : (rest > 0 ? p * (1 - raised) / rest : 0));
    return SurveyRandomizer.sampleCounts(wrong, draws);
  };
}"""


MEMO_SAMPLER = """() => {
  window.__auditMemoSampleCounts = async (column, slug, key, truth, draws) => {
    // The memoized path of a real submission (memo.js): each draw is one browser with a fresh secret,
    // reporting for this survey, question and true answer. Batches keep the promises in check.
    const counts = new Array(column.length).fill(0);
    for (let done = 0; done < draws; ) {
      const jobs = [];
      for (const end = Math.min(draws, done + 5000); done < end; done++) {
        const secret = new Uint8Array(32);
        crypto.getRandomValues(secret);
        jobs.push(SurveyMemo.importSecret(secret).then(k => SurveyMemo.report(k, column, slug, key, truth)));
      }
      for (const r of await Promise.all(jobs)) counts[r] += 1;
    }
    return counts;
  };
  return Boolean(window.SurveyMemo && SurveyMemo.importSecret && SurveyMemo.report && SurveyMemo.available());
}"""

#: The samplers audited: the page's fresh draws, its memoized draws (where the page has them), and the
#: deliberately broken one.
FRESH, MEMO, BROKEN_PATH = "fresh", "memo", "broken"
SAMPLER_NAMES = {
    FRESH: "`SurveyRandomizer.sampleCounts`",
    MEMO: "`SurveyMemo.report` (HMAC, fresh secret per draw)",
    BROKEN_PATH: f"**broken**: truth +{BROKEN_BIAS:.0%}",
}


def sample_counts(page, question: Question, column: list[float], truth: int, draws: int, path: str) -> np.ndarray:
    """``draws`` reports for one true answer, in chunks, from one of the page's samplers."""
    total = np.zeros(len(column), dtype=np.int64)
    left = draws
    while left > 0:
        n = min(CHUNK, left)
        if path == BROKEN_PATH:
            got = page.evaluate(
                "([c, t, n, b]) => window.__auditBrokenSampleCounts(c, t, n, b)", [column, truth, n, BROKEN_BIAS]
            )
        elif path == MEMO:
            got = page.evaluate(
                "([c, s, k, t, n]) => window.__auditMemoSampleCounts(c, s, k, t, n)",
                [column, question.slug, question.key, truth, n],
            )
        else:
            got = page.evaluate("([c, n]) => SurveyRandomizer.sampleCounts(c, n)", [column, n])
        total += np.asarray(got, dtype=np.int64)
        left -= n
    return total


@dataclass
class Row:
    question: Question
    path: str
    bound: EpsilonBound
    seconds: float

    @property
    def broken(self) -> bool:
        return self.path == BROKEN_PATH

    @property
    def passes(self) -> bool:
        return self.bound.impossible == 0 and self.bound.lower <= self.question.configured


def audit(draws: int, level: float, memo: bool = True) -> tuple[list[Row], str, bool]:
    rows: list[Row] = []
    memo_found = False
    with live_server() as (base, questions), chromium() as browser:
        version = browser.version
        page = browser.new_page()
        for slug in dict.fromkeys(q.slug for q in questions.values()):
            page.goto(f"{base}/s/{slug}")
            page.evaluate(BROKEN_SAMPLER)
            has_memo = bool(page.evaluate(MEMO_SAMPLER))
            memo_found = memo_found or has_memo
            found = page.eval_on_selector_all(
                "fieldset[data-randomized]", "els => els.map(e => [e.dataset.key, JSON.parse(e.dataset.columns)])"
            )
            for key, columns in found:
                question = questions[key]
                page_matrix = np.array(columns, dtype=float).T
                if page_matrix.shape != question.matrix.shape:
                    raise SystemExit(f"{key}: the page carries a {page_matrix.shape} matrix, the database another")
                question.page_difference = float(np.abs(page_matrix - question.matrix).max())
                if question.page_difference > PAGE_TOLERANCE:
                    raise SystemExit(f"{key}: the page's columns differ from the stored matrix")
                paths = [FRESH] + ([MEMO] if memo and has_memo else []) + ([BROKEN_PATH] if key in BROKEN else [])
                for path in paths:
                    start = time.perf_counter()
                    counts = np.column_stack(
                        [sample_counts(page, question, column, t, draws, path) for t, column in enumerate(columns)]
                    )
                    bound = epsilon_lower_bound(counts, question.matrix, level)
                    rows.append(Row(question, path, bound, time.perf_counter() - start))
                    print(f"  {key} [{path}]: {format_row(rows[-1])}", file=sys.stderr)
    return rows, version, memo_found


# -- the report ----------------------------------------------------------------------------------------


def eps_text(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.4f}"


def params_text(q: Question) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in q.parameters.items())


def format_row(row: Row) -> str:
    b = row.bound
    return f"configured {eps_text(row.question.configured)}, point {eps_text(b.point)}, lower {eps_text(b.lower)}"


def verdict(row: Row) -> str:
    if row.broken:
        return "FAIL (detected, as it must)" if not row.passes else "**PASS: the audit missed the broken sampler**"
    return "PASS" if row.passes else "**FAIL**"


def report(rows: list[Row], *, draws: int, level: float, seconds: float, version: str, memo_found: bool) -> str:
    import numpy
    import scipy

    today = dt.date.today().isoformat()
    total = sum(r.question.matrix.shape[1] for r in rows) * draws
    lines = [
        "# ε audit of the browser's randomizer",
        "",
        f"`python benchmarks/epsilon_audit.py` ({today}; Chromium {version} headless; Python "
        f"{platform.python_version()}, numpy {numpy.__version__}, scipy {scipy.__version__}; "
        f"{draws:,} draws per true answer per design and sampler, from the page's own code; "
        f"{total:,} draws in all; {seconds / 60:.1f} min).",
        "",
        "Each row is one question of a served survey, its matrix columns read from the page's `data-columns` "
        "(checked equal to the matrix stored in the database), sampled by one of the page's samplers: "
        "`SurveyRandomizer.sampleCounts` (fresh draws from `crypto.getRandomValues`, what a submission uses where "
        "the browser cannot keep a secret) and, where the page has memo.js, `SurveyMemo.report` (what a submission "
        "uses otherwise: the uniform comes from HMAC-SHA256 of a per-browser secret and the survey, question and "
        "true answer; each draw here is a fresh secret, i.e. another browser). *Configured ε* is "
        "`epsilon_of_matrix` of the stored matrix. *Point* is the largest empirical log-ratio "
        "ln(P̂(r|t)/P̂(r|t′)) over true answers t ≠ t′ and reports r with a non-zero configured probability under "
        f"both. *Lower bound* is a one-sided {level:.0%} lower confidence bound on the sampler's ε: for each such "
        "ratio, the Clopper-Pearson lower bound of the numerator over the Clopper-Pearson upper bound of the "
        f"denominator, maximized; the {1 - level:.0%} error is split by Bonferroni equally over the *m* ratios "
        "examined for that design, and each ratio's share equally between its two bounds. *Impossible* counts "
        "draws of a report the matrix rules out for that true answer. PASS: lower bound ≤ configured ε and no "
        "impossible draw.",
        "",
        f"| survey | question | design | parameters | k | sampler | configured ε | point ε̂ | {level:.0%} lower bound "
        "| m | impossible | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        q, b = row.question, row.bound
        lines.append(
            f"| {q.slug} | `{q.key}` | {q.design} | {params_text(q)} | {q.matrix.shape[1]} | {SAMPLER_NAMES[row.path]} "
            f"| {eps_text(q.configured)} | {eps_text(b.point)} | {eps_text(b.lower)} | {b.ratios} | {b.impossible} "
            f"| {verdict(row)} |"
        )
    real = [r for r in rows if not r.broken]
    sanity = [r for r in rows if r.broken]
    finite = [r for r in real if math.isfinite(r.question.configured)]
    slack = min(r.question.configured - r.bound.lower for r in finite)
    designs = len({r.question.key for r in real})
    alarm = sum(false_alarm_bound(r.question.matrix, level) for r in real)
    by_path = {path: [r for r in real if r.path == path] for path in (FRESH, MEMO)}
    lines += [
        "",
        "## Summary",
        "",
        *[
            f"- {SAMPLER_NAMES[path]}: {len(found)} designs audited, {sum(r.passes for r in found)} pass."
            for path, found in by_path.items()
            if found
        ],
    ]
    if not memo_found:
        lines.append("- The page has no memoized sampler (memo.js), so only fresh draws were audited.")
    lines += [
        f"- Smallest margin between a configured ε and its lower bound: {slack:.4f}.",
        f"- The page's columns equal the stored matrices to within {max(r.question.page_difference for r in real):.1e} "
        "(the page renders the matrix rebuilt from the stored parameters, which must agree with the stored one).",
        f"- Broken-sampler sanity rows: {len(sanity)}; detected (lower bound above the configured ε): "
        f"{sum(not r.passes for r in sanity)}.",
        f"- A right sampler FAILs a row with probability at most {1 - level:.0%} by construction, and less: only the "
        "ratios whose configured value is ε can cross it, so at most (1 − level)·(ratios at ε)/m per row; over the "
        f"{len(real)} rows of {designs} designs, at most {alarm:.1%} "
        "(union bound). A FAIL on an honest sampler would not repeat on a second run; a broken one fails every time.",
        "- The one-sided design (`cf_one_sided`, forced “yes” probability 1) has ε = ∞ by configuration: its "
        "rows check that a true “yes” never produced a “no” (impossible draws 0) and that the finite ratios "
        "stay finite.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument("--draws", type=int, default=DRAWS, help=f"draws per true answer (default {DRAWS:,})")
    parser.add_argument("--level", type=float, default=LEVEL, help=f"confidence level (default {LEVEL})")
    parser.add_argument("--no-memo", action="store_true", help="audit the fresh draws only, not memo.js's")
    args = parser.parse_args()
    start = time.perf_counter()
    rows, version, memo_found = audit(args.draws, args.level, memo=not args.no_memo)
    seconds = time.perf_counter() - start
    text = report(rows, draws=args.draws, level=args.level, seconds=seconds, version=version, memo_found=memo_found)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    ok = all(r.passes for r in rows if not r.broken) and not any(r.passes for r in rows if r.broken)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
