"""When two usernames are one: the key that makes ``demo`` and ``dеmo`` (a Cyrillic е) the same name.

A team member is chosen by username on the sharing form and known by it in every list; a look-alike
(``dеmo`` beside ``demo``, ``paypa1`` beside ``paypal``, ``ｄｅｍｏ`` in full-width letters) would be
offered roles meant for the other, and shown where the other is expected. So no two accounts may
have the same :func:`username_key`:

1. NFKC, then case folding: compatibility forms (full-width, ligatures, mathematical letters) and
   case become one (``ＤＥＭＯ`` → ``demo``);
2. the confusable *skeleton* of Unicode Technical Standard #39 (Unicode Security Mechanisms,
   section 4): NFD, remove every Default_Ignorable_Code_Point (invisible characters), replace each
   character by its prototype from Unicode's ``confusables.txt``, NFD again; so the Cyrillic е and
   the Latin e, ``0`` and ``O``, ``1``, ``I`` and ``l``, ``rn`` and ``m`` become one;
3. case folding again (some prototypes are capitals: ``0`` → ``O``).

The skeleton is for comparing, not for showing: ``demo`` has the skeleton ``derno``. The table is
generated from Unicode's files (:mod:`survey.domain.accounts.make_confusable_table`), never typed by hand.
A username also may not hold invisible characters at all (:func:`has_invisible`): a name that looks
like another plus nothing is refused outright.

>>> username_key("demo") == username_key("d\\u0435mo") == username_key("DEMO") == username_key("ｄｅｍｏ")
True
>>> username_key("demo") == username_key("dema")
False
"""

from __future__ import annotations

import bisect
import hashlib
import unicodedata
from functools import cache

from survey.domain.accounts.confusable_table import DEFAULT_IGNORABLE, PROTOTYPES


@cache
def _prototypes() -> dict[str, str]:
    table = {}
    for line in PROTOTYPES.split("\n"):
        if line:
            source, *target = line.split()
            table[chr(int(source, 16))] = "".join(chr(int(c, 16)) for c in target)
    return table


_STARTS = [start for start, _ in DEFAULT_IGNORABLE]


def is_ignorable(char: str) -> bool:
    """Whether ``char`` is a Default_Ignorable_Code_Point: drawn as nothing (joiners, fillers, tags)."""
    at = bisect.bisect_right(_STARTS, ord(char)) - 1
    return at >= 0 and ord(char) <= DEFAULT_IGNORABLE[at][1]


def has_invisible(text: str) -> bool:
    """Whether ``text``, in any normal form, holds a character that is drawn as nothing."""
    return any(is_ignorable(c) for c in unicodedata.normalize("NFKD", text))


def skeleton(text: str) -> str:
    """The UTS #39 skeleton of ``text``: equal for strings a reader could take for one another."""
    table = _prototypes()
    decomposed = unicodedata.normalize("NFD", text)
    mapped = "".join(table.get(c, c) for c in decomposed if not is_ignorable(c))
    return unicodedata.normalize("NFD", mapped)


def username_key(name: str) -> str:
    """What two usernames must not share: the skeleton of the name in NFKC and case-folded."""
    return skeleton(unicodedata.normalize("NFKC", name).casefold()).casefold()


def username_digest(name: str) -> str:
    """The stored form of :func:`username_key` (``users.username_key``): its SHA-256, 64 hex digits,
    whatever the length of the skeleton (NFKC alone makes 18 letters of one Arabic ligature)."""
    return hashlib.sha256(username_key(name).encode()).hexdigest()
