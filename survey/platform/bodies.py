"""Request bodies are refused above the size limit, whatever their framing.

``MAX_CONTENT_LENGTH`` (64 KiB: a submission is a few hundred bytes) is checked against the
``Content-Length`` header before anything is read. A chunked body has no such header: the server
(gunicorn, Werkzeug's development server) decodes the chunks and marks the stream as ending on its
own (``wsgi.input_terminated``), and Werkzeug then reads at most the limit, stops there, and
returns what it read as if it were the whole body. A valid submission followed by 200 KB of spaces
was so cut at 64 KiB, parsed, and stored (201) where the same bytes with a ``Content-Length`` were
refused (413). Here a body without a length is read through a stream that, on reaching the limit,
looks one byte further: if there is more, the request is refused with 413 like any other; a body of
exactly the limit is still accepted.
"""

from __future__ import annotations

from typing import IO

from flask import Request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.utils import cached_property
from werkzeug.wsgi import LimitedStream, get_input_stream


class NoLongerThan(LimitedStream):
    """A stream of at most ``limit`` bytes that raises 413 when the body goes on past it."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        super().__init__(stream, limit, is_max=True)
        self._source = stream

    def on_exhausted(self) -> None:
        if self._source.read(1):
            raise RequestEntityTooLarge()

    def readall(self) -> bytes:
        data = super().readall()
        if self.is_exhausted:
            self.on_exhausted()
        return data


class BoundedRequest(Request):
    """Flask's request, whose body stream refuses a body without a length that is too long."""

    @cached_property
    def stream(self) -> IO[bytes]:
        limit = self.max_content_length  # a view may raise it for itself before reading (a spec import)
        if self.content_length is None and limit is not None and self.environ.get("wsgi.input_terminated"):
            return NoLongerThan(self.environ["wsgi.input"], limit)
        return get_input_stream(self.environ, max_content_length=limit)
