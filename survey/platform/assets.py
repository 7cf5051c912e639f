"""Static files under content-hashed names, cached for a year, sent compressed.

``url_for('static', filename='css/site.css')`` gives ``/static/css/site.<hash>.css``, the hash being
the first 10 hex digits of the file's SHA-256: a template needs no change, and a file that changes
gets a new address. A hashed address is sent with ``Cache-Control: public, max-age=31536000,
immutable``, so a browser that has it asks for it never again (a respondent coming back makes one
request, the page's); before, every static file was sent ``no-cache`` and each visit asked for all
of them again. Text files are sent gzipped to browsers that accept it (compressed once, kept in
memory with the file: the respondent's scripts and stylesheet are 41 KB, 7 KB as sent).

Under a hashed name, scripts and stylesheets are sent minified (rjsmin, rcssmin: comments and
white space out, nothing renamed, so a stack trace still names the page's functions) and
compressed with brotli at its highest quality (11) for browsers that accept it, gzip (level 9) for
the others: done once per file version, so a request costs no compression. The respondent's page
and its four files come to about 11 KB on a first visit (tests/test_assets.py), against 60 KB
before.

An address without a hash, or with the hash of an earlier version of the file (a page rendered
before a deploy), gets the current file the way Flask sends it (revalidated on each use), never
cached for a year under a name that does not match its bytes.

The hash is read again when the file's modification time or size changes, so a file edited while
the development server runs gets a new address at once. Scripts stay same-origin, so the
Content-Security-Policy's ``script-src 'self'`` covers them whatever their name.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import mimetypes
import os
import re
import threading
from pathlib import Path

import brotli
import rcssmin
import rjsmin
from flask import Flask, Response, request
from werkzeug.security import safe_join

#: How a hashed address is cached: a year, and never revalidated (RFC 8246).
FOREVER = "public, max-age=31536000, immutable"
#: A hashed name: ``<stem>.<10 hex digits><.suffix>``.
HASHED = re.compile(r"^(?P<stem>.+)\.(?P<digest>[0-9a-f]{10})(?P<suffix>\.[A-Za-z0-9]+)$")
#: Media types sent gzipped when the browser accepts it (images and fonts are compressed already).
COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")
#: Below this many bytes gzip saves less than its own header costs a browser.
MINIMUM_TO_COMPRESS = 512


@dataclasses.dataclass(frozen=True)
class Asset:
    """A static file as read: what identifies the version read, its hash (of the file as stored),
    and what a hashed address sends: its bytes (minified, for scripts and stylesheets) and the same
    compressed (``{"br": ..., "gzip": ...}``, empty for what does not compress)."""

    version: tuple[int, int]
    digest: str
    body: bytes
    encoded: dict[str, bytes]
    mimetype: str


class Assets:
    """The static folder's files, read once per version (modification time and size)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._read: dict[str, Asset] = {}
        self._lock = threading.Lock()

    def get(self, filename: str) -> Asset | None:
        """The file ``filename`` (relative to the folder) as it is now, or None if there is none."""
        path = safe_join(self.folder, filename)
        if path is None:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        version = (stat.st_mtime_ns, stat.st_size)
        asset = self._read.get(filename)
        if asset is not None and asset.version == version:
            return asset
        stored = Path(path).read_bytes()
        mimetype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        body = minified(stored, mimetype)
        encoded = {}
        if mimetype.startswith(COMPRESSIBLE) and len(body) >= MINIMUM_TO_COMPRESS:
            encoded = {"br": brotli.compress(body, quality=11), "gzip": gzip.compress(body, compresslevel=9, mtime=0)}
        asset = Asset(version, hashlib.sha256(stored).hexdigest()[:10], body, encoded, mimetype)
        with self._lock:
            self._read[filename] = asset
        return asset

    def hashed_name(self, filename: str) -> str:
        """``css/site.css`` → ``css/site.<hash>.css``; a name with no file, or no suffix, stays as it is."""
        stem, dot, suffix = filename.rpartition(".")
        asset = self.get(filename) if dot and stem and "/" not in suffix else None
        return filename if asset is None else f"{stem}.{asset.digest}.{suffix}"

    def current(self, requested: str) -> tuple[str, Asset] | None:
        """The file a hashed name names and its current version, if the hash is that version's."""
        match = HASHED.match(requested)
        if match is None:
            return None
        filename = match["stem"] + match["suffix"]
        asset = self.get(filename)
        if asset is None or asset.digest != match["digest"]:
            return None
        return filename, asset


def minified(stored: bytes, mimetype: str) -> bytes:
    """A script or a stylesheet without its comments and spare white space; anything else as it is."""
    if mimetype in ("text/javascript", "application/javascript"):
        return rjsmin.jsmin(stored.decode()).encode()
    if mimetype == "text/css":
        return rcssmin.cssmin(stored.decode()).encode()
    return stored


def accepted_encoding(offered: tuple[str, ...] = ("br", "gzip")) -> str | None:
    """The first of ``offered`` that the request's ``Accept-Encoding`` takes (at a quality above 0)."""
    accepted = request.accept_encodings
    return next((encoding for encoding in offered if accepted[encoding] > 0), None)


def init_app(app: Flask) -> None:
    """Hash the static addresses ``url_for`` builds, and serve hashed ones forever-cacheable."""
    if not app.static_folder or "static" not in app.view_functions:
        return
    assets = Assets(app.static_folder)
    plain = app.view_functions["static"]
    app.extensions["assets"] = assets

    @app.url_defaults
    def hashed_static_names(endpoint: str, values: dict) -> None:
        if endpoint == "static" and "filename" in values:
            values["filename"] = assets.hashed_name(values["filename"])

    def static(filename: str) -> Response:
        found = assets.current(filename)
        if found is None:  # no hash, or an old one: the file as it is now, Flask's way, revalidated
            match = HASHED.match(filename)
            if match is not None and assets.get(match["stem"] + match["suffix"]) is not None:
                filename = match["stem"] + match["suffix"]
            return plain(filename=filename)
        _, asset = found
        body = asset.body
        response = Response(mimetype=asset.mimetype)
        if asset.encoded:
            response.vary.add("Accept-Encoding")
            encoding = accepted_encoding()
            if encoding is not None:
                body = asset.encoded[encoding]
                response.headers["Content-Encoding"] = encoding
        response.set_data(body)
        response.headers["Cache-Control"] = FOREVER
        return response

    app.view_functions["static"] = static
