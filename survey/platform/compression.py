"""Pages compressed for respondents: brotli (quality 5) or gzip (level 6), whichever the browser takes.

A small ``after_request`` rather than Flask-Compress: what to compress is decided by a rule of this
app that a general extension does not know (below), and brotli (Google's binding) and the standard
library's ``gzip`` do the work. The demo survey's page, 19 KB of HTML, becomes 3.7 KB with brotli
at quality 5 (4.1 KB gzipped), which adds about a tenth to the CPU of making the page
(benchmarks/respondent_page.md); quality 11 would save another 0.5 KB for a hundred times the CPU,
which a page made per request cannot afford (static files get it, once:
:mod:`survey.platform.assets`).

Compressed: a whole (not streamed) response of at least :data:`MINIMUM_SIZE` bytes, of a text
media type, to a request whose ``Accept-Encoding`` takes br or gzip. **Not compressed: anything for a
signed-in user or a bearer token.** A compressed page whose size an attacker can watch while
choosing part of its text (a query parameter it echoes) leaks, guess by guess, a secret on the same
page (BREACH); an organizer's pages carry their results, invitation codes and CSRF tokens tied to
their session, so they are sent as they are. A respondent's page carries only the anonymous
session's CSRF token, which guards nothing but that visitor's own submission. Static files are
compressed once, ahead, by :mod:`survey.platform.assets`.
"""

from __future__ import annotations

import gzip

import brotli
from flask import Flask, Response, request

from .assets import accepted_encoding
from .security import _signed_in_or_unknown, is_bearer_request

#: Below this many bytes, gzip saves less than its own header and the time it takes.
MINIMUM_SIZE = 1024
#: brotli's quality for a page made per request: 5 is where it stops costing more than gzip's 6
#: for much (quality 11 takes a hundred times the CPU for 13% fewer bytes).
BROTLI_QUALITY = 5
#: zlib's default: level 9 takes half as much CPU again for 0.1% fewer bytes on these pages.
GZIP_LEVEL = 6
COMPRESSIBLE = ("text/html", "text/plain", "text/css", "application/json", "application/problem+json")


def worth_compressing(response: Response) -> bool:
    """Whether the response is one that is compressed for this request (see the module's rules)."""
    if response.direct_passthrough or response.is_streamed or response.status_code < 200:
        return False
    if response.status_code in (204, 304) or "Content-Encoding" in response.headers:
        return False
    if response.mimetype not in COMPRESSIBLE or (response.content_length or 0) < MINIMUM_SIZE:
        return False
    if is_bearer_request():
        return False
    return not _signed_in_or_unknown()  # (when the database cannot say who this is: as it is)


def init_app(app: Flask) -> None:
    @app.after_request
    def compress(response: Response) -> Response:
        if request.method == "HEAD" or not worth_compressing(response):
            return response
        response.vary.add("Accept-Encoding")
        encoding = accepted_encoding()
        if encoding is not None:
            response.set_data(compressed(response.get_data(), encoding))
            response.headers["Content-Encoding"] = encoding
        return response


def compressed(body: bytes, encoding: str) -> bytes:
    """``body`` compressed with ``encoding`` ("br" or "gzip") at the levels above."""
    if encoding == "br":
        return brotli.compress(body, quality=BROTLI_QUALITY)
    return gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)
