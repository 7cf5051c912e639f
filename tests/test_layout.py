"""The suite's own layout: a test module imports helpers, never another test module.

A test module that imports from another (or from ``conftest.py``) ties the two together: running one
file alone runs the other's module-level code, a rename in one breaks the other, and a helper's home
is wherever it happened to be written first. Shared helpers live in the helper modules beside the
tests (tests/surveys.py, accounts.py, ...), fixtures in conftest.py (docs/testing.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .timing import SLOW

TESTS = Path(__file__).resolve().parent
#: What a test module may not import: another test module, or conftest (pytest loads it; its fixtures
#: reach tests by name, never by import).
FORBIDDEN = ("test_", "conftest")


def imported_test_modules(source: str) -> list[str]:
    """The modules of this package that ``source`` imports and may not: ``from .test_x import y``,
    ``from tests.conftest import y``, ``from . import test_x``, ``import tests.test_x``, at any depth
    (an import inside a function counts too).

    >>> imported_test_modules("from .surveys import SMALL_SPEC\\nimport json")
    []
    >>> imported_test_modules("def f():\\n    from .test_manage import sign_in")
    ['test_manage']
    >>> imported_test_modules("from tests.conftest import SMALL_SPEC\\nfrom . import test_a, live")
    ['conftest', 'test_a']
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            local = node.level > 0 or (node.module or "").split(".")[0] == "tests"
            if not local:
                continue
            parts = [p for p in (node.module or "").split(".") if p and p != "tests"]
            names = parts[:1] if parts else [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1] for a in node.names if a.name.startswith("tests.")]
        else:
            continue
        found += [name for name in names if name.startswith(FORBIDDEN)]
    return found


@pytest.mark.parametrize("path", sorted(TESTS.glob("*.py")), ids=lambda p: p.name)
def test_no_module_imports_a_test_module(path: Path) -> None:
    assert imported_test_modules(path.read_text()) == [], (
        f"{path.name} imports from a test module or conftest.py: move what it needs into a helper module "
        "(tests/surveys.py, accounts.py, builder.py, databases.py, servers.py, pages.py) or a fixture"
    )


def test_every_test_module_is_seen() -> None:
    """The check above reads every test module (a guard against a glob that finds nothing)."""
    assert len(list(TESTS.glob("test_*.py"))) >= 40


#: Names a test module may not import, because conftest marks tests by the fixtures that wrap them:
#: a test that launched Chromium or its own PostgreSQL server itself would miss its marker and run in
#: ``make test-fast``.
WRAPPED = {"chromium": "the browser fixture", "private_postgres": "the private_pg fixture"}


def launched_directly(source: str) -> list[str]:
    """The names of :data:`WRAPPED` that ``source`` imports from the package.

    >>> launched_directly("from .live import chromium, live_site")
    ['chromium']
    >>> launched_directly("from .private_postgres import PrivatePostgres")
    []
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("tests")):
            found += [alias.name for alias in node.names if alias.name in WRAPPED]
    return found


@pytest.mark.parametrize("path", sorted(TESTS.glob("test_*.py")), ids=lambda p: p.name)
def test_browsers_and_private_servers_come_from_fixtures(path: Path) -> None:
    names = launched_directly(path.read_text())
    assert names == [], f"{path.name} launches {names} itself: use {', '.join(WRAPPED[n] for n in names)}"


def test_every_slow_entry_names_a_test() -> None:
    """tests/timing.py lists slow tests by name; a renamed or removed test must leave the list too,
    or the new name would run in ``make test-fast`` unmeasured and the old one mean nothing."""
    defined = set()
    for path in TESTS.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                defined.add(f"{path.name}::{node.name}")
    assert SLOW, "no test is listed as slow"
    assert sorted(SLOW - defined) == []
