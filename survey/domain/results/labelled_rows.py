"""Rows added a batch at a time to a ``.sav`` or ``.dta`` file that pyreadstat wrote with one row.

pyreadstat writes a file from a whole DataFrame: at a million submissions the table, its Python
objects and pandas' copies took 377 MB of a worker (benchmarks/scale_exports.md). The two formats
keep their rows as fixed-width records after everything else that describes the file (SPSS), or
in one section between the descriptions and the value labels (Stata), so the file can be made in
bounded memory: pyreadstat writes the file's descriptions (names, types, formats, labels, value
labels: everything a researcher reads besides the numbers) with one template row; this module
takes that row out, writes the real rows in batches as the formats lay them out, and puts the
count of rows (and, in Stata's map, the places of the sections after the rows) where the format
keeps them. The result is the file pyreadstat writes from the whole table, byte for byte but for
its creation time (tests/test_exports_streaming.py compares them).

Only the column types the microdata have are handled: numbers stored as 8-byte doubles (SPSS:
every numeric variable; Stata: ``double``, dates included) and Stata's 4-byte ``long`` (pyreadstat's
type for a whole-number column); a file with another type is refused, not written wrong.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

import numpy as np

#: SPSS's system-missing value: the most negative double.
SPSS_SYSMIS = -np.finfo(np.float64).max
#: Where an uncompressed SPSS file's header keeps its count of cases (a 32-bit integer).
SPSS_CASES_AT = 80
#: The extension record that repeats the count as 64 bits (record type 7, subtype 16, 8-byte items, 2 of them).
SPSS_CASES_RECORD = struct.pack("<4i", 7, 16, 8, 2)
SPSS_DICTIONARY_END = struct.pack("<2i", 999, 0)

STATA_START = b"<stata_dta><header><release>118</release><byteorder>LSF</byteorder><K>"
#: Stata's type codes (format 118) and their missing value ".".
STATA_DOUBLE, STATA_LONG = 65526, 65528
STATA_MISSING = {STATA_DOUBLE: 2.0**1023, STATA_LONG: 2147483621}
STATA_DTYPES = {STATA_DOUBLE: "<f8", STATA_LONG: "<i4"}
#: The map's entries (0-based) that come after the data section and move with its size.
STATA_MAP_AFTER_DATA = range(10, 14)


class SavRows:
    """Appends cases to an uncompressed little-endian ``.sav`` with numeric variables only."""

    def __init__(self, handle: BinaryIO, width: int) -> None:
        data = handle.read()
        (cases,) = struct.unpack_from("<i", data, SPSS_CASES_AT)
        if data[64:68] != struct.pack("<i", 2) or data[72:76] != struct.pack("<i", 0):
            raise ValueError("expected an uncompressed little-endian .sav")
        self.start = len(data) - cases * width * 8
        if data[self.start - len(SPSS_DICTIONARY_END) : self.start] != SPSS_DICTIONARY_END:
            raise ValueError("the .sav's rows are not where expected (a string variable?)")
        self.long_count_at = data.rfind(SPSS_CASES_RECORD, 0, self.start) + len(SPSS_CASES_RECORD) + 8
        self.handle, self.width, self.rows = handle, width, 0
        handle.seek(self.start)
        handle.truncate()

    def write(self, values: np.ndarray) -> None:
        """``values``: rows × variables, float64, NaN where missing."""
        out = np.where(np.isnan(values), SPSS_SYSMIS, values).astype("<f8", copy=False)
        self.handle.write(out.tobytes())
        self.rows += len(values)

    def close(self) -> None:
        self.handle.seek(SPSS_CASES_AT)
        self.handle.write(struct.pack("<i", self.rows))
        if self.long_count_at >= len(SPSS_CASES_RECORD) + 8:
            self.handle.seek(self.long_count_at)
            self.handle.write(struct.pack("<q", self.rows))
        self.handle.seek(0, 2)


class DtaRows:
    """Appends observations to a little-endian format-118 ``.dta`` of ``double`` and ``long`` variables."""

    def __init__(self, handle: BinaryIO) -> None:
        data = handle.read()
        if not data.startswith(STATA_START):
            raise ValueError("expected a little-endian format-118 .dta")
        width = struct.unpack_from("<H", data, len(STATA_START))[0]
        self.count_at = data.index(b"<N>") + 3
        (count,) = struct.unpack_from("<Q", data, self.count_at)
        self.map_at = data.index(b"<map>") + 5
        offsets = list(struct.unpack_from("<14Q", data, self.map_at))
        types_at = offsets[2] + len(b"<variable_types>")
        types = struct.unpack_from(f"<{width}H", data, types_at)
        if any(t not in STATA_DTYPES for t in types):
            raise ValueError(f"only double and long variables can be appended, got the types {types}")
        self.dtype = np.dtype([(f"v{i}", STATA_DTYPES[t]) for i, t in enumerate(types)])
        self.missing = [STATA_MISSING[t] for t in types]
        data_start = offsets[9] + len(b"<data>")
        data_end = data_start + count * self.dtype.itemsize
        if data[data_end : data_end + len(b"</data>")] != b"</data>":
            raise ValueError("the .dta's rows are not where expected")
        self.tail = data[data_end:]
        self.offsets = offsets
        self.handle, self.rows = handle, 0
        handle.seek(data_start)
        handle.truncate()

    def write(self, values: np.ndarray) -> None:
        """``values``: rows × variables, float64, NaN where missing (a long column holds whole numbers)."""
        out = np.empty(len(values), dtype=self.dtype)
        for i, missing in enumerate(self.missing):
            column = values[:, i]
            out[f"v{i}"] = np.where(np.isnan(column), missing, column)
        self.handle.write(out.tobytes())
        self.rows += len(values)

    def close(self) -> None:
        moved = self.rows * self.dtype.itemsize - (self.offsets[10] - self.offsets[9] - len(b"<data></data>"))
        self.handle.write(self.tail)
        self.handle.seek(self.count_at)
        self.handle.write(struct.pack("<Q", self.rows))
        offsets = [o + moved if i in STATA_MAP_AFTER_DATA else o for i, o in enumerate(self.offsets)]
        self.handle.seek(self.map_at)
        self.handle.write(struct.pack("<14Q", *offsets))
        self.handle.seek(0, 2)


def open_rows(path: Path, file_format: str, width: int) -> tuple[BinaryIO, SavRows | DtaRows]:
    """The file at ``path`` (written by pyreadstat) open for appending rows, its rows taken out."""
    handle = path.open("r+b")
    try:
        rows: SavRows | DtaRows = SavRows(handle, width) if file_format == "sav" else DtaRows(handle)
    except Exception:
        handle.close()
        raise
    return handle, rows
