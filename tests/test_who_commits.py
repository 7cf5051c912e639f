"""One rule for who commits: the domain never does; its caller does (a view through
``survey.web.common.commit_or_refuse``, a CLI command, a test). docs/architecture.md, "Who commits".

The exceptions are the functions below, each a step of a chain of short transactions whose order
is the point (the write path of a submission), each saying so in its docstring. This test reads the
source of every domain module and fails on a ``.commit()`` anywhere else.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOMAIN = ROOT / "survey" / "domain"

#: (module, function) → why it commits itself.
EXCEPTIONS = {
    ("responses/submissions.py", "_record"): "a submission is stored in a transaction of its own, committed at "
    "once, before what follows it (a batch's release, closing by itself) so no writer waits on it",
    ("responses/mixing.py", "release"): "a released batch is one transaction, all or nothing, committed as soon "
    "as it is made, whoever asked for it (SECURITY.md, section 4a)",
    ("results/live.py", "close_if_precise"): "decides by reading, then closes in a transaction of its own that "
    "takes the write lock first",
    ("responses/pending.py", "fold"): "a fold is one transaction, its pairs added and its submissions "
    "unlisted together, committed at once so that its locks are held no longer than one batch (a caller "
    "may ask it not to: a migration's downgrade)",
    ("responses/receipts.py", "purge_old_receipts"): "the day's purge of old receipts, after a submission, in "
    "a small transaction of its own",
}


def commits(source: str) -> list[tuple[str, int]]:
    """``(enclosing function, line)`` of every ``<anything>.commit()`` call in ``source``.

    >>> commits("def f(s):\\n    s.add(1)\\n    s.commit()\\n")
    [('f', 3)]
    >>> commits("def f(s):\\n    def g():\\n        db.session.commit()\\n    return g\\n")
    [('g', 3)]
    >>> commits("x = engine.begin()\\n")
    []
    """
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr == "commit"
                and not child.args
            ):
                found.append((function, child.lineno))
            visit(child, function)

    visit(ast.parse(source), "<module>")
    return found


def test_the_domain_commits_only_where_it_says_why():
    modules = sorted(DOMAIN.rglob("*.py"))
    assert len(modules) > 30  # the scan reads the domain (a guard against a path that finds nothing)
    found = {
        (path.relative_to(DOMAIN).as_posix(), function): line
        for path in modules
        for function, line in commits(path.read_text())
    }
    unexpected = {place: line for place, line in found.items() if place not in EXCEPTIONS}
    assert not unexpected, (
        f"domain code commits at {unexpected}: leave committing to the caller (docs/architecture.md, Who commits)"
    )
    assert set(found) == set(EXCEPTIONS), "an exception that no longer commits should leave EXCEPTIONS"


def test_each_exception_says_in_its_docstring_that_it_commits():
    for (module, function), _ in EXCEPTIONS.items():
        tree = ast.parse((DOMAIN / module).read_text())
        (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
        assert "commit" in (ast.get_docstring(node) or "").lower(), f"{module}:{function} should say it commits"
