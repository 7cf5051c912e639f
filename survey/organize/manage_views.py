"""Lifecycle, access and invitations, sharing, spec import/export, account (being built)."""

from . import bp  # noqa: F401
