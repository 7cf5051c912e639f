"""The development server's secret key: random, made on the first run, kept in ``instance/``.

Development used to sign its cookies with a key written in this repository (``dev-only-change-me``),
so anyone could forge a session cookie for a development server reachable on a network (a demo on
a laptop, a staging host). Now, when no ``SECRET_KEY`` is configured outside production, the first
start writes 32 random bytes (hex) to ``instance/secret_key``, readable by its owner only (0600),
and every later start reads them, so sign-ins survive a restart. Production never uses this file:
it refuses to start without ``SECRET_KEY`` (:func:`survey.platform.config.production_settings`).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FILE_NAME = "secret_key"
#: Shorter than this, a key in the file is refused rather than used.
MINIMUM_LENGTH = 32


def instance_secret_key(instance_path: str | Path) -> str:
    """The key in ``instance_path``/secret_key, made first if there is none.

    Two processes starting at once agree on one key: each writes its own to a private temporary
    file and links it into place, which fails if the other was first; both then read the file."""
    path = Path(instance_path) / FILE_NAME
    try:
        if not path.exists():
            _make(path)
        key = path.read_text().strip()
    except OSError as error:
        raise RuntimeError(f"cannot keep a secret key in {path} ({error}): set SECRET_KEY instead") from None
    if len(key) < MINIMUM_LENGTH:
        raise RuntimeError(f"{path} holds no usable secret key: delete it, and a new one is made at the next start")
    return key


def _make(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(secrets.token_hex(32) + "\n")
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass  # another process made it a moment ago: use that one
    finally:
        temporary.unlink()
