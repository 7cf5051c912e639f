"""Every error has a catalogued code: raise sites name codes, not sentences; every code is used and
documented (docs/errors.md); Babel's extractor finds every template; JSON errors are RFC 9457
problems that keep the ``error`` member."""

from __future__ import annotations

import ast
import copy
import pickle
import shlex
from pathlib import Path

import pytest
from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po

from survey.domain.errors import Conflict, DomainError, Frozen, NotFound
from survey.domain.messages import MESSAGES, PHRASES, errors_table, placeholders
from survey.domain.surveys.wording import BROWSER_WORDS

ROOT = Path(__file__).resolve().parent.parent
SURVEY = ROOT / "survey"
#: What raises or makes a DomainError: the class and its subclasses, and Place.error.
ERROR_CALLS = {"DomainError", "NotFound", "Forbidden", "Conflict", "Frozen", "TooMany"}


def _sources() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(), str(path))) for path in sorted(SURVEY.rglob("*.py"))]


def _error_calls(tree: ast.Module) -> list[ast.Call]:
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in ERROR_CALLS) or (
            isinstance(func, ast.Attribute)
            and func.attr == "error"
            and isinstance(func.value, ast.Name)
            and func.value.id not in ("log", "logger", "logging", "app")
        ):
            calls.append(node)
    return calls


def test_an_unknown_code_is_refused_when_the_error_is_made():
    with pytest.raises(LookupError):
        DomainError("no.such.code")
    with pytest.raises(LookupError):
        Conflict("This survey is closed and no longer accepts answers.")  # a sentence is no code


def test_an_error_is_its_code_params_and_the_catalogs_english():
    error = DomainError("text.too_long", path=("title",), limit=200)
    assert (error.code, error.params, error.status, error.path) == ("text.too_long", {"limit": 200}, 400, ("title",))
    assert error.message == str(error) == "is longer than 200 characters"
    assert NotFound("page.nothing_here").status == 404 and Frozen().code == "survey.frozen" and Frozen().status == 409
    problem = error.to_json()
    assert problem["type"] == "urn:survey:error:text.too_long" and problem["title"] == "Bad Request"
    assert problem["detail"] == problem["error"] == "is longer than 200 characters"
    assert (problem["code"], problem["params"], problem["path"], problem["status"]) == (
        "text.too_long",
        {"limit": 200},
        ["title"],
        400,
    )


def test_an_error_survives_a_copy_and_pickling():
    for error in (DomainError("text.too_long", path=("title",), limit=200, where="survey"), Frozen(path=("q",))):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) == str(copy.copy(error))
        assert (again.code, again.params, again.status, again.path) == (
            error.code,
            error.params,
            error.status,
            error.path,
        )


def test_every_raise_site_names_a_catalogued_code_never_a_sentence():
    wrong = []
    for path, tree in _sources():
        for call in _error_calls(tree):
            where = f"{path.relative_to(ROOT)}:{call.lineno}"
            first = call.args[0] if call.args else None
            if first is None:
                if not (isinstance(call.func, ast.Name) and call.func.id == "Frozen"):
                    wrong.append(f"{where}: no code")
            elif isinstance(first, ast.Constant):
                if first.value not in MESSAGES:
                    wrong.append(f"{where}: {first.value!r} is not a catalogued code")
            elif isinstance(first, (ast.JoinedStr, ast.BinOp)) or (
                isinstance(first, ast.Call)
                and isinstance(first.func, (ast.Attribute, ast.Name))
                and getattr(first.func, "attr", getattr(first.func, "id", "")) in ("format", "str", "replace")
            ):
                wrong.append(f"{where}: a sentence made at the raise site, not a code")
    assert not wrong, "\n".join(wrong)


def test_every_catalogued_code_is_used_somewhere():
    used: set[str] = set()
    for path, tree in _sources():
        if path.name == "messages.py":
            continue
        used |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert sorted((set(MESSAGES) | set(PHRASES)) - used) == []


def test_every_template_fills_and_its_code_is_dotted_lowercase():
    assert all(code == code.lower() and "." in code for code in PHRASES)
    for code, entry in MESSAGES.items():
        assert code == code.lower() and " " not in code and "." in code, code
        assert entry.status in (400, 401, 403, 404, 409, 415, 422, 429, 503), code
        for name in placeholders(entry.template):
            assert name.isidentifier() and name not in ("status", "path", "where"), (code, name)


def test_docs_errors_md_is_the_catalog():
    """Run `make errors-doc` when this fails."""
    assert (ROOT / "docs" / "errors.md").read_text() == errors_table()


def test_make_messages_extracts_every_error_template(tmp_path, monkeypatch):
    """`make messages` (its pybabel command, as the Makefile writes it, run here) puts every template
    of the catalog, and the respondent's words for each design, into messages.pot."""
    (recipe,) = [line for line in (ROOT / "Makefile").read_text().splitlines() if "pybabel extract" in line]
    argv = shlex.split(recipe.strip())
    argv[0] = "pybabel"
    argv[argv.index("-o") + 1] = str(tmp_path / "messages.pot")
    monkeypatch.chdir(ROOT)
    CommandLineInterface().run(argv)
    with (tmp_path / "messages.pot").open("rb") as pot:
        found = {message.id for message in read_po(pot)}
    missing = [code for code, entry in MESSAGES.items() if entry.template not in found]
    assert missing == []
    assert set(BROWSER_WORDS.values()) | set(PHRASES.values()) <= found


def test_a_json_error_is_a_problem_that_keeps_its_error_member(client, small_survey):
    response = client.post("/api/surveys/small-test/responses", json={"answers": {"drugs": 1, "nope": 0}})
    assert response.status_code == 400 and response.mimetype == "application/problem+json"
    problem = response.get_json()
    assert problem["code"] == "submission.unknown_question" and problem["params"] == {"key": "nope"}
    assert problem["path"] == ["answers", "nope"] and problem["status"] == 400 and problem["title"] == "Bad Request"
    assert problem["type"] == "urn:survey:error:submission.unknown_question"
    assert problem["detail"] == problem["error"] == "unknown question 'nope': this survey has no such question"
    missing = client.get("/api/surveys/no-such-survey/results", headers={"Accept": "application/json"})
    assert missing.mimetype == "application/problem+json" and missing.get_json()["code"].startswith(("http.", "auth."))


def test_every_registered_design_has_words_for_respondents():
    """The privacy core holds no sentences for people; each design's are in wording.py, by id."""
    from survey.domain.surveys.wording import DESIGN_WORDS
    from survey.privacy.designs import DESIGNS

    assert set(DESIGN_WORDS) == set(DESIGNS)


def test_the_catalogs_status_is_the_one_answered():
    """A raise site gives no status of its own but the catalog's, and a subclass (NotFound 404,
    Forbidden 403, Conflict 409, TooMany 429) raises only codes whose catalogued status is its own,
    so that docs/errors.md says the status a client gets."""
    from survey.domain.accounts.quota import TooMany
    from survey.domain.errors import Forbidden

    classes = {cls.__name__: cls for cls in (NotFound, Forbidden, Conflict, Frozen, TooMany)}
    wrong = []
    for path, tree in _sources():
        for call in _error_calls(tree):
            first = call.args[0] if call.args else None
            if not (isinstance(first, ast.Constant) and first.value in MESSAGES):
                continue
            where = f"{path.relative_to(ROOT)}:{call.lineno} {first.value}"
            status = MESSAGES[first.value].status
            if any(keyword.arg == "status" for keyword in call.keywords):
                wrong.append(f"{where}: a status of its own")
            name = call.func.id if isinstance(call.func, ast.Name) else None
            if name in classes and classes[name].default_status != status:
                wrong.append(f"{where}: a {name} catalogued as {status}")
    assert not wrong, "\n".join(wrong)
