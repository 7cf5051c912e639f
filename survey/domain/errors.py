"""The one error type of the domain: a stable code, its parameters, an HTTP status, and where it is.

Every rule the domain refuses something by raises :class:`DomainError` (or one of the subclasses
below, which exist only so that a caller can ``except`` one kind). Each carries:

- ``code``: what is wrong, as a stable dotted name ("text.required", "code.used") from the message
  catalog (:mod:`survey.domain.messages`); an unknown code is refused when the error is made;
- ``params``: the values that fill the catalog's template ({"limit": 200});
- ``message``: the English sentence the two make ("must be a non-empty text");
- ``status``: the HTTP status a web view answers with (the catalog's, unless given);
- ``path``: where, as a tuple of keys and indices into the input, e.g.
  ``("questions", 1, "privacy", "epsilon")``, ``("title",)``, ``("answers", "q3")``; empty for the
  input as a whole.

A form puts the message next to the input its own small table maps the path to, and a JSON error is
an RFC 9457 problem (:meth:`DomainError.to_json`) carrying the code, the params and the path as a
list; nobody reads the message to find out what or where it is. ``where`` optionally says the place
in words for a reader who sees the message alone (an imported spec: "question 2 ('q2'), field
'privacy.epsilon'"); ``str(error)`` joins the two.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, ClassVar

from .messages import MESSAGES, PHRASES

Path = tuple[str | int, ...]

#: A problem's ``type`` is this followed by the code: a name that stays, not an address to fetch
#: (the codes are documented in docs/errors.md).
PROBLEM_TYPE = "urn:survey:error:"


def _json_value(value: Any) -> Any:
    """``value`` as JSON can carry it: numbers, texts, booleans, None and lists of them as they are,
    anything else as its text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return str(value)


class DomainError(ValueError):
    """Something the survey's rules refuse; ``code`` and ``params`` say what, ``path`` where."""

    #: The status of errors of this class when neither the catalog nor the raise site gives one.
    default_status: ClassVar[int] = 400

    def __init__(
        self, code: str, /, *, status: int | None = None, path: Path = (), where: str | None = None, **params: Any
    ) -> None:
        entry = MESSAGES.get(code)
        if entry is None:
            raise LookupError(f"unknown error code {code!r}: add it to survey/domain/messages.py")
        message = entry.template.format(**params)
        super().__init__(message)
        self.code = code
        self.params = params
        self.message = message
        self.status = entry.status if status is None else status
        self.path: Path = tuple(path)
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:
        # the exception's args hold the sentence, which is no code: copy and pickle by the code
        return (_rebuilt, (type(self), self.code, self.status, self.path, self.where, self.params))

    @property
    def template(self) -> str:
        """The catalog's English template of this error's code."""
        return MESSAGES[self.code].template

    def __str__(self) -> str:
        return (
            PHRASES["place.before_sentence"].format(where=self.where, message=self.message)
            if self.where
            else self.message
        )

    def to_json(self, detail: str | None = None, title: str | None = None) -> dict[str, Any]:
        """The body of a JSON error response, an RFC 9457 problem: ``type`` (a URN naming the
        code), ``title`` (the status's phrase), ``status``, ``detail`` (the sentence; ``detail`` when given, as a
        translated one), and the members ``code``, ``params``, ``path`` (a list) and ``error`` (the
        sentence again, for clients written before the problem members)."""
        text = str(self) if detail is None else detail
        return {
            "type": PROBLEM_TYPE + self.code,
            "title": title or HTTPStatus(self.status).phrase,
            "status": self.status,
            "detail": text,
            "code": self.code,
            "params": {name: _json_value(value) for name, value in self.params.items()},
            "path": list(self.path),
            "error": text,
        }


def _rebuilt(
    cls: type[DomainError], code: str, status: int, path: Path, where: str | None, params: dict[str, Any]
) -> DomainError:
    error = DomainError.__new__(cls)
    DomainError.__init__(error, code, status=status, path=path, where=where, **params)
    return error


class NotFound(DomainError):
    """No such thing, or none this user may know of (both are a 404, so that slugs leak nothing)."""

    default_status = 404


class Forbidden(DomainError):
    """Known, but not for this request (an invitation-only survey without a usable code)."""

    default_status = 403


class Conflict(DomainError):
    """Refused by the current state (a closed survey, a draft that cannot be published yet)."""

    default_status = 409


class Frozen(Conflict):
    """A change to a design, option or question list of a survey that has been opened."""

    def __init__(self, path: Path = ()) -> None:
        super().__init__("survey.frozen", path=path)
