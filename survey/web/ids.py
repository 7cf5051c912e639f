"""Database ids from a request: whole numbers the database can hold, or the request is refused.

Every id column is a 32-bit integer (``integer`` on PostgreSQL; SQLite's integers are wider, so
PostgreSQL's bound is the bound on both). A larger number used to reach the query: PostgreSQL
answered "integer out of range" (from 2^31), SQLite "Python int too large to convert to SQLite
INTEGER" (from 2^63), and the page a 500 where the answer is that no such row can exist.

Ids travel in forms (the users page, removing a member, withdrawing an account invitation), so
:class:`IdField` is the one field every form takes an id with: anything outside ``1 ..``
:data:`MAX_ID` makes the form invalid, and the view answers it as any invalid form (400, with the
page's sentence: "Choose a user."). No route takes an id in its path today; should one, Flask's
``int`` converter is replaced by :class:`BoundedIntConverter`, so ``<int:...>`` never matches a
number the database cannot hold (404, as for any id that does not exist).
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from werkzeug.routing import IntegerConverter
from wtforms import IntegerField
from wtforms.validators import InputRequired, NumberRange

#: The largest id the database holds: PostgreSQL's ``integer``.
MAX_ID = 2**31 - 1


class IdField(IntegerField):
    """An id typed into a form: a whole number from 1 to :data:`MAX_ID` (else the form is invalid)."""

    def __init__(self, label: str | None = None, validators: list[Any] | None = None, **kwargs: Any) -> None:
        bounds = [InputRequired(), NumberRange(1, MAX_ID, "This is not a valid id.")]
        super().__init__(label, [*bounds, *(validators or [])], **kwargs)


class BoundedIntConverter(IntegerConverter):
    """Flask's ``int`` converter, within PostgreSQL's ``integer`` whatever a route asks for."""

    def __init__(self, map: Any, *args: Any, **kwargs: Any) -> None:
        high, low = kwargs.get("max"), kwargs.get("min")
        kwargs["max"] = MAX_ID if high is None else min(high, MAX_ID)
        kwargs["min"] = -MAX_ID - 1 if low is None else max(low, -MAX_ID - 1)
        super().__init__(map, *args, **kwargs)


def init_app(app: Flask) -> None:
    """Bound every ``<int:...>`` of every route (register before the blueprints)."""
    app.url_map.converters["int"] = BoundedIntConverter
