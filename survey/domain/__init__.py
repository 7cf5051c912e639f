"""The survey's own rules: models, specs, the builder, submissions, tallies, lifecycle, access, exports.

Everything here takes plain values and a SQLAlchemy session and leaves committing to its caller
(except the steps of a submission's write path, which say so: docs/architecture.md, "Who commits"). It
knows nothing of requests, forms or Flask (an import-linter contract in ``pyproject.toml`` holds it
to that), so the web views, the CLI, the demo and the tests all call the same functions.
"""
