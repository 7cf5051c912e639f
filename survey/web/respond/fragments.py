"""The questions of the respondent's page, each made once per process for as long as what it shows is
unchanged.

Made on every request, the questions' HTML (templates/respond/_question.html) cost a quarter to a
third of the CPU of the demo survey's page (benchmarks/respondent_page.md: kept, 0.70 of the CPU of
making them every time), and it is the same for every respondent who opens the page in the same
language. It is kept here keyed on everything the macro reads, taken from the very rows this request
has just loaded: every stored column of the question, of its options and of its design, its texts as
the page's language shows them, its number on the page and that language. The key is the content,
not a version someone must remember to bump: an edit by any path (a form, the API, an import, a
migration, SQL typed by hand) makes a different key on the next request, on every host, and a copy
that no page asks for again falls out of the bounded store. Nothing of the request (the CSRF token,
an invitation code, a preview's banner) is in the macro, so nothing of one respondent can reach
another's page.

The store is bounded by the memory its HTML takes (``RESPONDENT_FRAGMENTS_BYTES``; its keys are
digests). It hangs on the compiled macro template and names the template that macro imports: either
reloaded (``TEMPLATES_AUTO_RELOAD`` in development) or a Jinja cache cleared starts an empty one, so
an edited template shows at once.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import threading
from collections import OrderedDict
from typing import Any

from flask import current_app
from flask_babel import get_locale
from jinja2 import Template
from markupsafe import Markup
from sqlalchemy import inspect

from survey.domain.models import Question

from .page import QuestionView

#: The macro, and the template it imports: a kept question is good for as long as both are the ones
#: the app has (with ``TEMPLATES_AUTO_RELOAD``, an edit of either makes a new store).
TEMPLATES = ("respond/_question.html", "respond/_answers.html")
#: The attribute of the compiled macro template that holds its store.
STORE = "_survey_fragments"


class _Store:
    """A least-recently-used map bounded by the memory its HTML takes, safe across a worker's threads.
    Keys are digests, so a question with long labels and a large matrix costs its HTML alone."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._items: OrderedDict[bytes, Markup] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: bytes) -> Markup | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: bytes, html: Markup) -> None:
        size = sys.getsizeof(html)
        if size > self.budget:
            return  # larger than the whole store: made every time
        with self._lock:
            if key in self._items:
                return
            self._items[key] = html
            self.used += size
            while self.used > self.budget:
                _, dropped = self._items.popitem(last=False)
                self.used -= sys.getsizeof(dropped)

    def __len__(self) -> int:
        return len(self._items)


@functools.cache
def _column_names(model: type) -> tuple[str, ...]:
    return tuple(attribute.key for attribute in inspect(model).column_attrs)


def _columns(row: Any) -> tuple:
    """Every mapped column of a stored row, as loaded."""
    return tuple(getattr(row, name) for name in _column_names(type(row)))


def content_key(view: QuestionView, number: int, language: str) -> bytes:
    """What the macro can show of ``view``, as a digest: two questions with the same key show the same
    HTML. Its stored rows' columns (the design's matrix and parameters among them), then the texts it
    shows in ``language`` (the question read through its translation, which falls back to the
    original's), the number and the language."""
    shown = view.question
    stored: Question = getattr(shown, "_original", shown)
    rows = (
        _columns(stored),
        tuple(_columns(option) for option in stored.options),
        None if stored.design is None else _columns(stored.design),
    )
    texts = (shown.text, shown.help_text, getattr(shown, "unrelated_question", None), tuple(shown.labels))
    return hashlib.blake2b(repr((rows, texts, number, language)).encode(), digest_size=20).digest()


def _macro_and_store() -> tuple[Template, _Store | None]:
    """The macro template the app has now and its store: a new store when the macro or the template
    it imports was reloaded; None when ``RESPONDENT_FRAGMENTS_BYTES`` keeps nothing."""
    macro, imported = (current_app.jinja_env.get_template(name) for name in TEMPLATES)
    found = macro.__dict__.get(STORE)
    if found is None or found[0] is not imported:
        found = (imported, _Store(current_app.config["RESPONDENT_FRAGMENTS_BYTES"]))
        macro.__dict__[STORE] = found  # two threads may both make one: each is right, one stays
    return macro, (found[1] if found[1].budget > 0 else None)


def store() -> _Store | None:
    """The store the app's pages use now (None when it keeps nothing)."""
    return _macro_and_store()[1]


def question_html(view: QuestionView, number: int) -> Markup:
    """The question's HTML on the respondent's page: kept, or made now by the macro (and kept unless
    ``RESPONDENT_FRAGMENTS_BYTES`` is 0, as the benchmark's arm that keeps nothing sets it)."""
    macro, kept = _macro_and_store()
    if kept is None:
        return Markup(macro.module.question(view, number))
    key = content_key(view, number, str(get_locale() or "en"))
    html = kept.get(key)
    if html is None:
        html = Markup(macro.module.question(view, number))
        kept.put(key, html)
    return html
