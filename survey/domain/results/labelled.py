"""The microdata for SPSS (``.sav``) and Stata (``.dta``), with variable and value labels.

Same rows and codes as ``responses.csv`` (:func:`survey.domain.results.microdata.microdata_batches`): yes = 1 and
no = 0, a choice question's options 0 .. k-1, a number question's value as answered, an unanswered
question missing. What the CSV cannot carry is carried here: each variable's label is its question's
text, and each coded variable has value labels, so SPSS and Stata (and R through ``haven``) show
"Yes"/"No" instead of bare codes. pyreadstat writes both formats (it is what pandas itself uses to
read them). Columns have the names every export uses (:mod:`survey.domain.surveys.variable_names`), valid in
SPSS and Stata alike, and the Stata file is format 118 (Stata 14 and later), the one docs/exports.md
names and R's ``haven`` reads.

The file is written in bounded memory: pyreadstat writes its descriptions (names, labels, value
labels, formats) from a one-row template of the right types, and the rows follow a batch at a time
(:mod:`survey.domain.results.labelled_rows`), so a million submissions cost the worker the memory of
one batch, not of the table (377 MB before, benchmarks/scale_exports.md). The download streams the
finished file from a temporary file.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyreadstat
from sqlalchemy.orm import Session

from survey.domain.models import Survey
from survey.domain.results.coding import researcher_options, stored_order
from survey.domain.results.labelled_rows import open_rows
from survey.domain.results.microdata import (
    IMPORTED_COLUMN,
    MICRODATA_BATCH_SIZE,
    MICRODATA_FIXED_COLUMNS,
    has_imports,
    microdata_arrays,
    microdata_columns,
)
from survey.domain.surveys.variable_names import variable_names
from survey.domain.surveys.wording import COMBINED_OPTIONS

#: Stata's limit on a variable label and the file's label: 80 characters.
STATA_LABEL_LIMIT = 80

#: The .dta format pyreadstat writes for Stata 14 (format 118): what docs/exports.md promises, read by
#: Stata 14 and later and by R's haven (``foreign::read.dta`` stops at format 115).
STATA_VERSION = 14

#: SPSS keeps a file's note as lines of at most 80 bytes.
SPSS_NOTE_WIDTH = 80


#: The template row's day (any day: the row is replaced by the real ones).
TEMPLATE_DAY = dt.date(2000, 1, 1)
#: Day numbers of each format's dates: SPSS counts seconds from 1582-10-14, Stata days from 1960-01-01.
DATE_ORIGIN = {"sav": dt.date(1582, 10, 14), "dta": dt.date(1960, 1, 1)}
DATE_UNIT = {"sav": 86400.0, "dta": 1.0}


def template_frame(survey: Survey, imported: bool = False) -> pd.DataFrame:
    """One row with the microdata's column types: whole numbers that may be missing (pandas'
    ``Int32``), a date, and a randomized number's reports as ``Float64``; with ``imported``, the
    0/1 column of imported rows last, as in the CSV. pyreadstat decides each variable's type from
    these, never from the values."""
    names = microdata_columns(survey, imported)
    frame = pd.DataFrame(
        {
            MICRODATA_FIXED_COLUMNS[0]: np.array([1], dtype=np.int32),
            MICRODATA_FIXED_COLUMNS[1]: [TEMPLATE_DAY],
        }
    )
    reports = set(report_columns(survey))
    for name in names[len(MICRODATA_FIXED_COLUMNS) :]:
        frame[name] = pd.array([None], dtype="Float64" if name in reports else "Int32")
    return frame


def report_columns(survey: Survey) -> list[str]:
    """The columns of randomized numbers: reports in the question's units, not whole numbers (a
    numeric column with decimals, no value labels)."""
    names = variable_names([q.key for q in survey.questions])
    return [names[q.key] for q in survey.questions if q.kind_entry.randomized_number]


def _labels(survey: Survey) -> tuple[dict[str, str], dict[str, dict[int, str]]]:
    """Variable labels and value labels, by column name."""
    names = variable_names([q.key for q in survey.questions])
    column_labels = {
        MICRODATA_FIXED_COLUMNS[0]: "Row number (order stored)",
        MICRODATA_FIXED_COLUMNS[1]: "Day of the submission",
    }
    value_labels: dict[str, dict[int, str]] = {}
    for q in survey.questions:
        randomized = " [randomized report]" if q.is_randomized else ""
        column_labels[names[q.key]] = f"{q.text}{randomized}"
        combined = COMBINED_OPTIONS.get(q.design.mechanism_name) if q.design is not None else None
        if combined is not None:  # a combined question's reports are its combined answers ("same", ...)
            value_labels[names[q.key]] = {code: combined[stored] for code, stored in enumerate(stored_order(q))}
        elif q.kind_entry.has_options:
            value_labels[names[q.key]] = {o["code"]: o["label"] for o in researcher_options(q)}
    return column_labels, value_labels


def write_labelled(
    session: Session, survey: Survey, file_format: str, path: Path, *, batch_size: int = MICRODATA_BATCH_SIZE
) -> None:
    """Write the labelled microdata of ``survey`` as ``file_format`` ("sav" or "dta") to ``path``:
    the descriptions by pyreadstat, then the rows ``batch_size`` at a time."""
    imported = has_imports(session, survey)
    frame = template_frame(survey, imported)
    write_frame(frame, survey, file_format, path)
    _write_rows(session, survey, file_format, path, len(frame.columns), batch_size, imported)


def write_frame(frame: pd.DataFrame, survey: Survey, file_format: str, path: Path) -> None:
    """pyreadstat's file of ``frame`` (the microdata's columns) with the survey's labels."""
    column_labels, value_labels = _labels(survey)
    if IMPORTED_COLUMN in frame.columns:
        column_labels[IMPORTED_COLUMN] = "Collected elsewhere and imported (1) or submitted on the web (0)"
        value_labels[IMPORTED_COLUMN] = {0: "submitted on the web", 1: "imported"}
    reports = set(report_columns(survey))
    note = (
        f"Randomized microdata of the survey {survey.slug!r}: randomized questions hold the reported "
        "(randomized) answer, never the true one; estimate shares with the design matrices of the "
        "codebook (codebook.json) or the R script beside it. A randomized number holds its report in "
        "the question's units: the mean of the reports estimates the mean."
    )
    if file_format == "sav":
        pyreadstat.write_sav(
            frame,
            str(path),
            file_label=survey.title[:64],
            column_labels=column_labels,
            variable_value_labels=value_labels,
            note=textwrap.wrap(note, SPSS_NOTE_WIDTH),
            variable_format={
                name: "F12.4" if name in reports else "F8.0"
                for name in frame.columns
                if name != MICRODATA_FIXED_COLUMNS[1]
            },
            variable_measure={
                name: ("nominal" if name in value_labels else "scale")
                for name in frame.columns[len(MICRODATA_FIXED_COLUMNS) :]
            },
        )
    elif file_format == "dta":
        pyreadstat.write_dta(
            frame,
            str(path),
            file_label=survey.title[:STATA_LABEL_LIMIT],
            column_labels={name: label[:STATA_LABEL_LIMIT] for name, label in column_labels.items()},
            variable_value_labels=value_labels,
            version=STATA_VERSION,
        )
    else:
        raise ValueError(f"unknown format {file_format!r}")


def _write_rows(
    session: Session, survey: Survey, file_format: str, path: Path, width: int, batch_size: int, imported: bool
) -> None:
    handle, rows = open_rows(path, file_format, width)
    with handle:
        origin = DATE_ORIGIN[file_format]
        for values in microdata_arrays(session, survey, origin, batch_size=batch_size, imported=imported):
            values[:, 1] *= DATE_UNIT[file_format]
            rows.write(values)
        rows.close()


def labelled_file(session: Session, survey: Survey, file_format: str) -> Any:
    """The written file, open for reading; deleted when closed (so a download leaves nothing behind)."""
    handle = tempfile.NamedTemporaryFile(suffix=f".{file_format}")
    write_labelled(session, survey, file_format, Path(handle.name))
    handle.seek(0)
    return handle
