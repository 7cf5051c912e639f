"""gettext for the templates and the respondent's words, the request's catalog found once.

Flask-Babel's ``gettext`` finds the request's translations anew at every call: the domain, the
context three times over (each a look through Flask's ``g`` proxy), the locale, and the locale's name
built to key its cache. A survey page of ten questions calls it about 120 times; alone, that was 1
to 2 ms of the page's 11 ms of CPU (benchmarks/respondent_page.md).

Here the catalog Flask-Babel returns is kept beside the request's locale and domain, in Flask-Babel's
own per-request namespace, and given again while both are still the very objects it was found for.
So ``force_locale`` (which puts another locale object there) and ``refresh`` (which removes it) are
obeyed as by Flask-Babel itself. Outside any context, and wherever that namespace is not as Flask-Babel
4 keeps it (a context where no word was looked up yet, or another version: pyproject.toml holds it
below 5), a call goes to Flask-Babel's own lookup; in an app context without a request (a command, a
mail sent after the response) the catalog is kept as in a request, for as long as Flask-Babel keeps
the locale there.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, g
from flask_babel import get_translations

#: The name this module keeps its catalog under, in Flask-Babel's per-request namespace.
KEPT = "survey_translations"


def translations() -> Any:
    """The request's catalog: Flask-Babel's ``get_translations()``, looked up once per locale."""
    context = g.get("_flask_babel") if g else None
    locale = getattr(context, "babel_locale", None)
    domain = getattr(context, "babel_domain", None)
    if locale is None or domain is None:
        return get_translations()
    kept = getattr(context, KEPT, None)
    if kept is not None and kept[0] is locale and kept[1] is domain:
        return kept[2]
    found = get_translations()
    setattr(context, KEPT, (locale, domain, found))
    return found


def gettext(string: str, **variables: Any) -> str:
    """As ``flask_babel.gettext``: the translation, with ``variables`` put in by ``%``."""
    translated = translations().ugettext(string)
    return translated % variables if variables else translated


def install(app: Flask) -> None:
    """The templates' ``_``, ``gettext``, ``ngettext``, ``pgettext`` and ``npgettext`` through
    :func:`translations` (after ``Babel.init_app``, which installs Flask-Babel's own)."""
    app.jinja_env.install_gettext_callables(
        gettext=lambda s: translations().ugettext(s),
        ngettext=lambda s, p, n: translations().ungettext(s, p, n),
        newstyle=True,
        pgettext=lambda c, s: translations().upgettext(c, s),
        npgettext=lambda c, s, p, n: translations().unpgettext(c, s, p, n),
    )
