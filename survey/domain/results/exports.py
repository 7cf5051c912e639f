"""What a researcher downloads: the estimates (CSV, JSON), the randomized microdata and its codebook.

The estimates are exactly those of the results page: they come from
:func:`survey.domain.responses.tallies.survey_results` (the running tallies and
:func:`survey.privacy.estimate`), so a file can never disagree with the page. The microdata hold reported
values only, the values the respondents' browsers sent; with the codebook's matrices they are enough to redo
every estimate in R or Python (the R script, :mod:`survey.domain.results.rscript`, does). Codes are the
researcher's (:mod:`survey.domain.results.coding`: yes = 1, no = 0) in every file, and the codebook's matrices
use the same coding. A question's column is named by
:func:`survey.domain.surveys.variable_names.variable_names` in every file (its key, unless the key is a
reserved word or too long for R, Stata or SPSS), and the codebook and the estimates record which name belongs
to which key. Every field is described in ``docs/exports.md``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy.orm import Session, object_session

from survey.domain.models import Question, Survey
from survey.domain.responses.tallies import number_results, results_total_epsilon, survey_counts, survey_results
from survey.domain.results.coding import researcher_matrix, researcher_options, stored_order
from survey.domain.results.csvfile import ColumnType, CsvTable
from survey.domain.results.microdata import (
    IMPORTED_COLUMN,
    MICRODATA_BATCH_SIZE,
    MICRODATA_CHUNK_ROWS,
    has_imports,
    microdata_csv_lines,
    microdata_table,
)
from survey.domain.results.microdata import (  # re-exported: the microdata's columns are part of this module's surface
    MICRODATA_FIXED_COLUMNS as MICRODATA_FIXED_COLUMNS,
)
from survey.domain.results.microdata import microdata_columns as microdata_columns
from survey.domain.results.split_ballots import split_ballots
from survey.domain.surveys.kinds import NUMBERS, kind_of
from survey.domain.surveys.variable_names import NAME_LIMIT, variable_names
from survey.privacy.number_bins import bin_labels

#: The confidence level of every interval in the exports.
LEVEL = 0.95

#: The estimates CSV's columns and their types: text cells are neutralized against formulas
#: (survey.domain.results.csvfile), numbers are written as numbers.
ESTIMATE_TABLE: tuple[tuple[str, ColumnType], ...] = (
    ("survey_slug", "text"),
    ("question_key", "text"),
    ("variable", "text"),
    ("question_text", "text"),
    ("kind", "text"),
    ("randomized", "number"),
    ("design", "text"),
    ("epsilon", "number"),
    ("n", "number"),
    ("option_code", "number"),
    ("option_label", "text"),
    ("reported_count", "number"),
    ("observed_share", "number"),
    ("unbiased", "number"),
    ("consistent", "number"),
    ("standard_error", "number"),
    ("ci_low", "number"),
    ("ci_high", "number"),
    ("interval_method", "text"),
    ("simulated_truth", "number"),
    ("declined", "number"),
)
ESTIMATE_COLUMNS = tuple(name for name, _ in ESTIMATE_TABLE)

DECLINED_NOTE = (
    'declined: how many respondents chose "prefer not to say" on a sensitive question that allows it '
    "(null where the question does not allow it). A decline is not a report: n counts those who answered, "
    "and every estimate is about those who answered, not about those who declined."
)

MATRIX_NOTE = (
    "matrix[r][t] is the probability that a respondent whose true answer has code t reports code r: "
    "rows are reported codes, columns are true codes, and every column sums to 1. Codes are the "
    "microdata's (a yes/no question: 0 = no, 1 = yes)."
)

VARIABLE_NAMES_NOTE = (
    "Each question's column is named by its key, unless the key is a reserved word in R, Stata or SPSS "
    f"or longer than {NAME_LIMIT} characters: then by the first of the key cut to {NAME_LIMIT} characters, "
    "the key cut shorter with _1, _2, ... appended, that is reserved nowhere and not the name of another "
    "column (keys that need no renaming keep their names). The same names are used in every file: the "
    "microdata (CSV, SPSS, Stata), the R script and the estimates (their variable column). "
    "questions[].variable and columns[].question give the pairs."
)

CODING_NOTE = (
    "A yes/no question is coded 1 = yes, 0 = no (so the mean of its column is the share reporting yes); "
    "a choice question's options are coded 0 .. k-1 in the order listed; a number question's value is "
    "the number answered. Booleans are 1 (true) and 0 (false)."
)

HOW_TO_ESTIMATE = {
    "shares": (
        "For one question, drop the empty cells of its column; n is the number left and "
        "λ̂[r] = (number of cells holding code r) / n, for r = 0 .. k-1."
    ),
    "unbiased": "π̂ = Q⁻¹ λ̂ (solve Q π̂ = λ̂), with Q the question's design matrix.",
    "covariance": (
        "Cov(π̂) = Q⁻¹ (diag λ − λ λᵀ) Q⁻ᵀ / n with λ = λ̂, the observed shares, when π̂ has no negative "
        "share; otherwise with λ = Q π̃, the reported shares the consistent estimate π̃ implies (so a code "
        "nobody reported still gets a standard error above 0). The standard errors are the square roots of "
        "its diagonal."
    ),
    "direct_questions": (
        "A question asked directly has no design: its code is the answer itself (Q is the identity), so "
        "the shares are the estimates. It is not protected and not part of total_epsilon."
    ),
    "consistent": (
        "π̂ can fall below 0 or above 1. The consistent estimate of the estimates files is the "
        "maximum-likelihood estimate over shares that are at least 0 and sum to 1; it equals π̂ when "
        "no share of π̂ is negative."
    ),
    "number_questions": (
        "A number question (asked directly) is summarized by the mean of its non-empty cells. Its interval is "
        "the betting interval over the question's range [minimum, maximum] (Waudby-Smith & Ramdas 2024), which "
        "holds for every distribution in the range and every n: scale each answer to z = (x − minimum) / "
        "(maximum − minimum); for a candidate mean m, the evidence that the mean is above m is the average "
        "over eight bets λ of ∏ (1 + min(λ, 0.999/m) (z − m)), the bets being λ₁·1.45^j, j = 0..7, with "
        "λ₁ = √(2 log(2/α) / (n/4)); the lower end is the m where that evidence equals 2/α (α = 1 − level), "
        "found between 0 and the mean; the upper end the same on 1 − z. The R script computes it."
    ),
}


# -- estimates -------------------------------------------------------------------------------------


def _epsilon_fields(epsilon: float) -> dict[str, Any]:
    """JSON has no infinity: an infinite ε is null plus an explicit flag, never a silent null."""
    infinite = math.isinf(epsilon)
    return {"total_epsilon": None if infinite else epsilon, "total_epsilon_infinite": infinite}


def estimates_document(session: Session, survey: Survey, level: float = LEVEL) -> dict[str, Any]:
    """The JSON estimates: the survey, its total ε and every question's counts and estimates."""
    counts = survey_counts(session, survey)
    results = survey_results(session, survey, counts)
    numbers = number_results(session, survey, counts)
    names = variable_names([q.key for q in survey.questions])
    return {
        "survey": {
            "slug": survey.slug,
            "title": survey.title,
            "status": survey.status,
            "simulated": survey.is_simulated,
            "submissions": counts.submissions,
        },
        **_epsilon_fields(results_total_epsilon(results, numbers)),
        "level": level,
        "coding": CODING_NOTE,
        "declined": DECLINED_NOTE,
        "questions": [
            {"key": item["key"], "variable": names[item["key"]], **item}
            for item in _in_survey_order(
                survey,
                [_researcher_coded(result.question, result.to_dict(level)) for result in results]
                + [summary.to_dict() for summary in numbers],
            )
        ],
        "split_ballots": [b.to_dict() for b in split_ballots(survey.questions, results, level)],
    }


def _in_survey_order(survey: Survey, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    position = {q.key: i for i, q in enumerate(survey.questions)}
    return sorted(items, key=lambda item: position[item["key"]])


def _researcher_coded(question: Question, item: dict[str, Any]) -> dict[str, Any]:
    """A ``QuestionResult.to_dict()`` document in the researcher's codes: its categories in code
    order with their codes, and its design's matrix and labels in the same coding."""
    order = stored_order(question)
    categories = item["categories"]
    item["categories"] = [{**categories[stored], "code": code} for code, stored in enumerate(order)]
    design = item.get("design")
    if design is not None:
        design = dict(design)
        design["matrix"] = researcher_matrix(question, design["matrix"])
        if "labels" in design:
            design["labels"] = [design["labels"][stored] for stored in order]
        item["design"] = design
    return item


def _epsilon_cell(question: dict[str, Any]) -> float | None:
    """Empty for a direct question, ``inf`` for a one-sided design (written by survey.domain.results.csvfile)."""
    if not question["randomized"]:
        return None
    return math.inf if question["epsilon_infinite"] else question["epsilon"]


def _number_row(survey: Survey, q: dict[str, Any]) -> list[Any]:
    """A number question's one row: its mean, with its betting interval over the question's range, where
    an option's estimate goes."""
    m = q["summary"]
    ran = m["mean"] is not None
    return [
        survey.slug,
        q["key"],
        q["variable"],
        q["text"],
        q["kind"],
        0,
        "",
        None,
        q["n"],
        None,
        "mean",
        None,
        None,
        m["mean"],
        m["mean"],
        None if m["standard_deviation"] is None else m["standard_deviation"] / math.sqrt(q["n"]),
        m["ci_low"],
        m["ci_high"],
        m["interval_method"] if ran and m["ci_low"] is not None else "",
        None,
        None,
    ]


def _randomized_number_row(survey: Survey, q: dict[str, Any]) -> list[Any]:
    """A randomized number's one row: the mean its mechanism estimates from the reports, with the
    mechanism's interval (betting; normal for Laplace), where an option's estimate goes."""
    m = q["summary"]
    return [
        survey.slug,
        q["key"],
        q["variable"],
        q["text"],
        q["kind"],
        1,
        q["design"]["design"],
        _epsilon_cell(q),
        q["n"],
        None,
        "mean",
        None,
        None,
        m["mean"],
        m["mean"],
        None,
        m["ci_low"],
        m["ci_high"],
        m["interval_method"],
        m.get("simulated_mean"),
        q.get("declined"),
    ]


def estimate_rows(survey: Survey, questions: Iterable[dict[str, Any]]) -> Iterator[list[Any]]:
    """One CSV row per (question, option), from ``QuestionResult.to_dict()`` documents (a number
    question: one row, its mean)."""
    for q in questions:
        if kind_of(q["kind"]).randomized_number:
            yield _randomized_number_row(survey, q)
            continue
        if kind_of(q["kind"]).result == NUMBERS:
            yield _number_row(survey, q)
            continue
        design = q["design"]["design"] if q["design"] is not None else ""
        for c in q["categories"]:
            yield [
                survey.slug,
                q["key"],
                q["variable"],
                q["text"],
                q["kind"],
                1 if q["randomized"] else 0,
                design,
                _epsilon_cell(q),
                q["n"],
                c["code"],
                c["label"],
                c["reported"],
                c.get("observed_share"),
                c.get("unbiased"),
                c.get("proportion"),
                c.get("standard_error"),
                c.get("ci_low"),
                c.get("ci_high"),
                c.get("interval_method", ""),
                c.get("simulated_truth"),
                q.get("declined"),
            ]


def estimates_csv(session: Session, survey: Survey, level: float = LEVEL) -> str:
    """The estimates as CSV text (a few rows per question, so built whole rather than streamed).

    Numbers are written in their shortest exact form (``repr``), so they parse back to the very floats
    the page was computed from; texts (question texts, option labels) are neutralized against formulas.
    """
    table = CsvTable(ESTIMATE_TABLE)
    return table.header() + table.rows(estimate_rows(survey, estimates_document(session, survey, level)["questions"]))


# -- microdata -------------------------------------------------------------------------------------


def microdata_csv(
    session: Session,
    survey: Survey,
    *,
    chunk_rows: int = MICRODATA_CHUNK_ROWS,
    batch_size: int = MICRODATA_BATCH_SIZE,
) -> Iterator[str]:
    """The randomized microdata as CSV text chunks: the header, then ``chunk_rows`` submissions at a
    time, one row per submission (:mod:`survey.domain.results.microdata`: on PostgreSQL the server's
    own ``COPY`` output, elsewhere rows fetched in batches of ``batch_size``).

    Everything about the survey is read before the first chunk (a streamed response outlives the
    view that made it)."""
    imported = has_imports(session, survey)
    table = microdata_table(survey, imported)
    lines = microdata_csv_lines(session, survey, chunk_rows=chunk_rows, batch_size=batch_size, imported=imported)
    return itertools.chain([table.header()], lines)


# -- codebook --------------------------------------------------------------------------------------


def _design_entry(question: Question) -> dict[str, Any] | None:
    """The frozen design as stored: the matrix the respondents' browsers sampled from."""
    design = question.design
    if design is None:
        return None
    return {
        "name": design.mechanism_name,
        "parameters": design.parameters,
        "matrix": researcher_matrix(question, design.matrix),
        "matrix_note": MATRIX_NOTE,
        "epsilon": design.epsilon,
        "epsilon_infinite": design.epsilon is None,
    }


#: How a randomized number's column reads (the codebook's note beside its design).
REPORT_NOTE = (
    "Each value is a randomized report in the question's units: the browser clamped the true number to the "
    "range and sent a code of its design's report grid; the value is that code's report "
    "(low + (high - low)(y + 1)/2 for the grid point y). A report can lie outside the range (Laplace's far "
    "outside); its expectation is the respondent's clamped number, so the mean of the reports estimates the "
    "mean of the clamped numbers (the results give it with the design's interval). No single value says "
    "anything reliable about its respondent."
)


def _report_design_entry(question: Question) -> dict[str, Any] | None:
    """A randomized number's frozen design: its mechanism (its design id, ε and the range), its report
    grid (codes and their values) and how to read the column."""
    mechanism = question.mechanism()
    first, last = mechanism.reports.low, mechanism.reports.high
    return {
        "name": mechanism.design,
        "parameters": question.design.parameters,
        "mechanism": mechanism.to_dict(),
        "grid": {
            "codes": [int(first), int(last)],
            "origin": float(mechanism.origin),
            "step": float(mechanism.step),
            "values": [float(mechanism.value_of(first)), float(mechanism.value_of(last))],
        },
        "values_note": REPORT_NOTE,
        "epsilon": question.design.epsilon,
        "epsilon_infinite": question.design.epsilon is None,
    }


#: How a number question's bins read (the codebook's note beside them).
BINS_NOTE = (
    "The organizer cut the range at these edges; the results give each bin's share with an interval. A value "
    "on an edge belongs to the bin above it; the last bin holds the range's upper end. Asked directly, a bin's "
    "share is the share of answers in it (Wilson's interval). Randomized, it is not the share of reports in "
    "it (a report can lie in any bin, or outside the range): it is estimated from the reports by maximum "
    "likelihood of the true numbers' distribution, with a profile-likelihood interval (docs/statistics.md)."
)


def _codebook_bins(question: Question) -> dict[str, Any] | None:
    """A number question's bins as the results give them: the edges, and each bin's label and ends."""
    if not question.bins:
        return None
    low, high = float(question.minimum), float(question.maximum)
    edges = [float(e) for e in question.bins]
    ends = [low, *edges, high]
    return {
        "edges": edges,
        "bins": [
            {"label": label, "from": ends[i], "to": ends[i + 1]} for i, label in enumerate(bin_labels(low, high, edges))
        ],
        "note": BINS_NOTE,
    }


def _codebook_question(question: Question, variable: str) -> dict[str, Any]:
    if question.kind_entry.randomized_number:
        return {
            "key": question.key,
            "variable": variable,
            "text": question.text,
            "kind": question.kind,
            "randomized": True,
            "required": question.required,
            "range": {"minimum": question.minimum, "maximum": question.maximum},
            "bins": _codebook_bins(question),
            "options": [],
            "design": _report_design_entry(question),
            "simulated_truth": None,
        }
    if question.is_number:
        return {
            "key": question.key,
            "variable": variable,
            "text": question.text,
            "kind": question.kind,
            "randomized": False,
            "required": question.required,
            "range": {"minimum": question.minimum, "maximum": question.maximum},
            "bins": _codebook_bins(question),
            "options": [],
            "design": None,
            "simulated_truth": None,
        }
    return {
        "key": question.key,
        "variable": variable,
        "text": question.text,
        "kind": question.kind,
        "randomized": question.is_randomized,
        "required": question.required,
        "options": researcher_options(question),
        "design": _design_entry(question),
        "simulated_truth": None
        if question.simulated_truth is None
        else [question.simulated_truth[stored] for stored in stored_order(question)],
    }


def _codebook_columns(survey: Survey, names: dict[str, str]) -> list[dict[str, Any]]:
    columns: list[dict[str, Any]] = [
        {"name": "submission", "type": "integer", "description": "Row number 1..N in the order stored."},
        {"name": "submitted_on", "type": "date", "description": "Day of the submission (YYYY-MM-DD)."},
    ]
    for q in survey.questions:
        if q.kind_entry.randomized_number:
            columns.append(
                {
                    "name": names[q.key],
                    "type": "number or empty",
                    "question": q.key,
                    "description": f"The randomized report in the question's units (its range {q.minimum} to "
                    f"{q.maximum}; a report can lie outside it): see the question's design, values_note; "
                    "empty when the question was not answered.",
                }
            )
            continue
        if q.is_number:
            columns.append(
                {
                    "name": names[q.key],
                    "type": "integer or empty",
                    "question": q.key,
                    "description": f"The number answered, from {q.minimum} to {q.maximum} (not randomized); "
                    "empty when the question was not answered.",
                }
            )
            continue
        what = "reported (randomized) option code" if q.is_randomized else "option code as answered (not randomized)"
        what += q.kind_entry.coding_note
        columns.append(
            {
                "name": names[q.key],
                "type": "integer or empty",
                "question": q.key,
                "description": f"The {what}; empty when the question was not answered.",
            }
        )
    session = object_session(survey)
    if session is not None and has_imports(session, survey):
        columns.append(
            {
                "name": IMPORTED_COLUMN,
                "type": "integer",
                "description": "1 for a response collected elsewhere and imported (paper, telephone, another "
                "tool), 0 for one submitted on the web. Present only when the survey holds imported responses.",
            }
        )
    return columns


#: What the microdata holds for a declined answer (survey.domain.results.microdata: an empty cell).
DECLINED_CELLS_NOTE = (
    'A question with decline true let respondents choose "prefer not to say" instead of answering; a '
    "declined answer is an empty cell in the microdata, like a question left out, and the estimates files "
    "give each question's count of declines. Estimates are about those who answered."
)


def codebook(survey: Survey) -> dict[str, Any]:
    """Everything needed to analyse the microdata: columns, options, design matrices, total ε."""
    names = variable_names([q.key for q in survey.questions])
    return {
        "survey": {"slug": survey.slug, "title": survey.title, "status": survey.status},
        "microdata_file": f"{survey.slug}-responses.csv",
        "r_script": f"{survey.slug}-estimates.R",
        "coding": CODING_NOTE,
        "variable_names": VARIABLE_NAMES_NOTE,
        "columns": _codebook_columns(survey, names),
        "questions": [
            {
                **_codebook_question(q, names[q.key]),
                "decline": q.decline,
                # a split ballot's arm: the ballot and the chance of being asked this way (null otherwise)
                "arm": None if q.arm_group is None else {"group": q.arm_group, "share": q.arm_share},
                "own_coin": bool(q.own_coin),
            }
            for q in survey.questions
        ],
        "declined": DECLINED_CELLS_NOTE,
        **_epsilon_fields(survey.total_epsilon()),
        "how_to_estimate": HOW_TO_ESTIMATE,
    }
