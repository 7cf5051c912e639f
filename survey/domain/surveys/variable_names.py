"""The name a question's column has in every file: one name, valid in R, Stata and SPSS alike.

A question key (``[a-z][a-z0-9_]{0,39}``, :mod:`survey.domain.validation`) is a fine name almost
everywhere, but not always: ``in`` and ``next`` are reserved in R (``read.csv`` turns them into
``in.`` and ``next.``, so a script looking for ``in`` finds nothing), ``if``, ``int``, ``long`` or
``str5`` in Stata (which refuses the file), ``with``, ``to`` or ``by`` in SPSS syntax, and Stata
allows 32 characters where a key may have 40. A researcher merging the CSV with the Stata file, or
running the survey's R script on either, needs the *same* name in each, so every export (the
microdata CSV, the SPSS and Stata files, the R script, the estimates and the codebook, which records
the pairs) takes its names from :func:`variable_names`.

The rule, deterministic and documented in docs/exports.md ("Variable names"):

1. a key that is at most :data:`NAME_LIMIT` characters long and reserved in none of the three
   tools is its own name;
2. every other key, in survey order, gets the first of ``key[:NAME_LIMIT]``, ``key[:L-2] + "_1"``,
   ``key[:L-2] + "_2"``, ... (cut so that the whole name fits in ``L = NAME_LIMIT``) that is
   reserved nowhere and not yet taken, where the names of rule 1 and the microdata's fixed columns
   are taken first. So a name never changes because another question was renamed, and no two
   columns share a name.

:data:`NAME_LIMIT` is 29, not Stata's 32: the Stata file's value-label sets are named after their
variable followed by its number among the labelled variables (pyreadstat, which writes the file,
does so), and those names share Stata's limit of 32 characters; a survey has at most 200 questions,
so that number has at most three digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from survey.domain.surveys.specs import MAX_QUESTIONS, RESERVED_KEYS

#: R's reserved words (``?Reserved``); ``make.names`` appends a dot to them. Keys are lowercase, so
#: only the lowercase ones can occur, but the list is R's whole list.
R_RESERVED = frozenset(
    {
        "if",
        "else",
        "repeat",
        "while",
        "function",
        "for",
        "next",
        "break",
        "in",
        "TRUE",
        "FALSE",
        "NULL",
        "Inf",
        "NaN",
        "NA",
        "NA_integer_",
        "NA_real_",
        "NA_complex_",
        "NA_character_",
    }
)

#: Stata's reserved names (User's Guide, 11.3 "Naming conventions"), plus ``str1`` .. ``str2045``
#: (:data:`STATA_STR_TYPE`). ``strl`` is listed beside Stata's ``strL``: names are case-sensitive in
#: Stata, but a lowercase spelling of a type name is asking for trouble in a do-file.
STATA_RESERVED = frozenset(
    {
        "_all",
        "_b",
        "byte",
        "_coef",
        "_cons",
        "double",
        "float",
        "if",
        "in",
        "int",
        "long",
        "_n",
        "_N",
        "_pi",
        "_pred",
        "_rc",
        "_skip",
        "strL",
        "strl",
        "using",
        "with",
    }
)
STATA_STR_TYPE = re.compile(r"str([1-9][0-9]{0,3})")
STATA_STR_MAX = 2045

#: SPSS's reserved keywords (Command Syntax Reference, "Variable names"); SPSS compares names
#: without regard to case.
SPSS_RESERVED = frozenset({"all", "and", "by", "eq", "ge", "gt", "le", "lt", "ne", "not", "or", "to", "with"})

#: Stata's 32 characters, less the widest number pyreadstat appends to a value-label set's name.
NAME_LIMIT = 32 - len(str(MAX_QUESTIONS - 1))

#: What every tool accepts: a letter, then letters, digits and underscores (R also allows dots,
#: SPSS also ``@ # $ .``, Stata neither).
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def is_reserved(name: str) -> bool:
    """Whether ``name`` is a reserved word in R, Stata or SPSS."""
    if name in R_RESERVED or name in STATA_RESERVED or name.lower() in SPSS_RESERVED:
        return True
    match = STATA_STR_TYPE.fullmatch(name)
    return match is not None and int(match.group(1)) <= STATA_STR_MAX


def is_valid_name(name: str) -> bool:
    """Whether ``name`` can name a variable as it is in R, Stata and SPSS."""
    return len(name) <= NAME_LIMIT and NAME_PATTERN.fullmatch(name) is not None and not is_reserved(name)


def _candidates(key: str) -> Iterable[str]:
    yield key[:NAME_LIMIT]
    number = 1
    while True:
        suffix = f"_{number}"
        yield key[: NAME_LIMIT - len(suffix)] + suffix
        number += 1


def variable_names(keys: Sequence[str]) -> dict[str, str]:
    """``{key: name}`` for the question keys of one survey, in survey order (the rule above)."""
    names = {key: key for key in keys if is_valid_name(key)}
    taken = set(RESERVED_KEYS) | set(names.values())
    for key in keys:
        if key in names:
            continue
        name = next(c for c in _candidates(key) if c not in taken and is_valid_name(c))
        taken.add(name)
        names[key] = name
    return {key: names[key] for key in keys}
