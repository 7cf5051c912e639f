"""The questions of the respondent's page, each made once per process for as long as what it shows is
unchanged.

Made on every request, the questions' HTML (templates/respond/_question.html) cost about a quarter
of the CPU of the demo survey's page (benchmarks/respondent_page.md: 6.30 ms made every time, 4.65
ms kept), and it is the same for every respondent who opens the page in the same language. It is
kept here keyed on everything the macro reads, taken from the very rows this request has just
loaded: every stored column of the question, of its options and of its design, its texts as the
page's language shows them, its number on the page and that language. The key is the content, not a
version someone must remember to bump: an edit by any path (a form, the API, an import, a migration,
SQL typed by hand) makes a different key on the next request, on every host, and a copy that no page
asks for again falls out of the bounded store. Nothing of the request (the CSRF token, an invitation
code, a preview's banner) is in the macro, so nothing of one respondent can reach another's page.

The store hangs on the compiled macro template: a template reloaded (``TEMPLATES_AUTO_RELOAD`` in
development) or a Jinja cache cleared starts with an empty one, so an edited template shows at once.
"""

from __future__ import annotations

import functools
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

TEMPLATE = "respond/_question.html"
#: The attribute of the compiled template that holds its store.
STORE = "_survey_fragments"


class _Store:
    """A bounded least-recently-used map, safe across a worker's threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Markup] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Markup | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: str, html: Markup) -> None:
        with self._lock:
            self._items[key] = html
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@functools.cache
def _column_names(model: type) -> tuple[str, ...]:
    return tuple(attribute.key for attribute in inspect(model).column_attrs)


def _columns(row: Any) -> tuple:
    """Every mapped column of a stored row, as loaded."""
    return tuple(getattr(row, name) for name in _column_names(type(row)))


def content_key(view: QuestionView, number: int, language: str) -> str:
    """What the macro can show of ``view``, as one string: two questions with the same key show the same
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
    return repr((rows, texts, number, language))


def _store(template: Template) -> _Store:
    found = template.__dict__.get(STORE)
    if found is None:
        size = current_app.config["RESPONDENT_FRAGMENTS_KEPT"]
        found = template.__dict__.setdefault(STORE, _Store(size))
    return found


def question_html(view: QuestionView, number: int) -> Markup:
    """The question's HTML on the respondent's page: kept, or made now by the macro (and kept unless
    ``RESPONDENT_FRAGMENTS_KEPT`` is 0, as the benchmark's uncached arm sets it)."""
    template = current_app.jinja_env.get_template(TEMPLATE)
    kept = _store(template)
    if not kept.size:
        return Markup(template.module.question(view, number))
    key = content_key(view, number, str(get_locale() or "en"))
    html = kept.get(key)
    if html is None:
        html = Markup(template.module.question(view, number))
        kept.put(key, html)
    return html
