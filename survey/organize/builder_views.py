"""Survey and question editor, budget panel, and the privacy preview API (being built)."""

from . import bp  # noqa: F401
