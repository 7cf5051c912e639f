"""The one error type of the domain: a message for a person, an HTTP status, and where it is.

Every rule the domain refuses something by raises :class:`DomainError` (or one of the subclasses
below, which exist only so that a caller can ``except`` one kind). Each carries the same three
things:

- ``message``: what is wrong, in words a person can act on ("must be a non-empty text");
- ``status``: the HTTP status a web view answers with (400, 403, 404, 409);
- ``path``: where, as a tuple of keys and indices into the input, e.g.
  ``("questions", 1, "privacy", "epsilon")``, ``("title",)``, ``("answers", "q3")``; empty for the
  input as a whole.

A form puts the message next to the input its own small table maps the path to, and a JSON error
carries the path as a list (:meth:`DomainError.to_json`); nobody reads the message to find out
where it belongs. ``where`` optionally says the place in words for a reader who sees the message
alone (an imported spec: "question 2 ('q2'), field 'privacy.epsilon'"); ``str(error)`` joins the two.
"""

from __future__ import annotations

from typing import Any, ClassVar

Path = tuple[str | int, ...]


class DomainError(ValueError):
    """Something the survey's rules refuse; ``message``, ``status`` and ``path`` say what and where."""

    #: The status of errors of this class when none is given.
    default_status: ClassVar[int] = 400

    def __init__(self, message: str, status: int | None = None, path: Path = (), where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = self.default_status if status is None else status
        self.path: Path = tuple(path)
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message

    def to_json(self) -> dict[str, Any]:
        """The body of a JSON error response: ``{"error", "status", "path"}``."""
        return {"error": str(self), "status": self.status, "path": list(self.path)}


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

    MESSAGE = (
        "This survey has been opened, so its questions, options and designs are frozen: only texts can "
        "be corrected. To change a design, duplicate the survey and edit the copy."
    )

    def __init__(self, message: str = "", path: Path = ()) -> None:
        super().__init__(message or self.MESSAGE, path=path)
