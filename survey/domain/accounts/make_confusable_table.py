"""Write ``confusable_table.py`` from Unicode's own data files (UTS #39 and the UCD), never by hand.

    python -m survey.domain.make_confusable_table confusables.txt DerivedCoreProperties.txt \\
        > survey/domain/confusable_table.py && ruff format survey/domain/confusable_table.py

``confusables.txt`` is the data of Unicode Technical Standard #39 (Unicode Security Mechanisms),
``DerivedCoreProperties.txt`` part of the Unicode Character Database; both are published by the
Unicode Consortium for every Unicode version. The table keeps every mapping of ``confusables.txt``
(a character and its prototype, the sequence it is confusable with) and the ranges of
Default_Ignorable_Code_Point, which the skeleton drops. Nothing is filtered by this Python's own
character database, which is older than Unicode's newest files. The source files' versions and
SHA-256 hashes are written into the table, so anyone can check it against the files Unicode
publishes by running this again. A new table changes some skeletons: give existing users their
new ``username_key`` in a migration, as ``0011_accounts_trust`` does.

Why a generated table rather than a library: the libraries on PyPI that were checked either do not
compute a UTS #39 skeleton at all (``confusable_homoglyphs`` flags mixed-script strings, so an
all-Cyrillic look-alike passes) or compare two strings pairwise through a symmetric closure with
accents stripped (``confusables``: nothing to index, and its ``normalize`` grows exponentially with
the length of the input), and the one real implementation (ICU's ``SpoofChecker``) is a compiled
dependency of some 40 MB. A skeleton is a lookup per character; the table is the data.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

_LINE = re.compile(r"^([0-9A-F]{4,6})\s*;\s*([0-9A-F ]+?)\s*;\s*MA\b")
_IGNORABLE = re.compile(r"^([0-9A-F]{4,6})(?:\.\.([0-9A-F]{4,6}))?\s*;\s*Default_Ignorable_Code_Point\b")
_VERSION = re.compile(r"^#\s*(?:Version:\s*|DerivedCoreProperties-)([0-9.]+)")


def _version(text: str) -> str:
    for line in text.splitlines()[:12]:
        found = _VERSION.match(line)
        if found:
            return found.group(1).rstrip(".")
    raise SystemExit("no version line in the file's header")


def prototypes(text: str) -> dict[int, list[int]]:
    table: dict[int, list[int]] = {}
    for line in text.splitlines():
        found = _LINE.match(line.lstrip("\ufeff"))
        if found:
            table[int(found.group(1), 16)] = [int(x, 16) for x in found.group(2).split()]
    return table


def ignorable_ranges(text: str) -> list[tuple[int, int]]:
    ranges = []
    for line in text.splitlines():
        found = _IGNORABLE.match(line)
        if found:
            start = int(found.group(1), 16)
            ranges.append((start, int(found.group(2) or found.group(1), 16)))
    return sorted(ranges)


def render(confusables: str, properties: str) -> str:
    table = prototypes(confusables)
    ranges = ignorable_ranges(properties)
    digest = [hashlib.sha256(text.encode()).hexdigest() for text in (confusables, properties)]
    lines = [
        '"""The data of usernames\' confusable skeletons (survey.domain.usernames): GENERATED, do not edit.',
        "",
        "Written by ``python -m survey.domain.make_confusable_table`` from Unicode's files:",
        f"confusables.txt {_version(confusables)} (UTS #39), SHA-256 {digest[0]},",
        f"DerivedCoreProperties.txt {_version(properties)}, SHA-256 {digest[1]}.",
        f"{len(table)} prototypes and {len(ranges)} ranges of Default_Ignorable_Code_Point.",
        '"""',
        "",
        f'UNICODE_VERSION = "{_version(confusables)}"',
        "",
        "#: source code point (hex), then the code points of its prototype",
        'PROTOTYPES = """',
    ]
    lines += [f"{s:04X} {' '.join(f'{c:04X}' for c in t)}" for s, t in sorted(table.items())]
    lines += ['"""', "", "#: first and last code point of each range", "DEFAULT_IGNORABLE = ("]
    lines += [f"    (0x{a:04X}, 0x{b:04X})," for a, b in ranges]
    lines += [")", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit(__doc__)
    confusables, properties = (Path(p).read_text(encoding="utf-8") for p in argv[1:])
    sys.stdout.write(render(confusables, properties))


if __name__ == "__main__":
    main(sys.argv)
