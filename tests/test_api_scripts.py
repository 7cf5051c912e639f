"""The scripts of docs/api.md work: each is cut from the document as it is, run against a live site
with a personal API token, and must print the very estimates the API (and the results page's own
JSON) give, and the microdata's number of rows.

The Python script always runs (it needs the standard library only); the R one needs ``Rscript`` and
jsonlite (``make r``), and is skipped, saying why, only when they are missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from survey.domain.accounts.api_tokens import create_token
from survey.domain.models import NO_PASSWORD, User
from survey.domain.surveys.specs import create_survey_from_spec

from .live import live_site
from .surveys import SMALL_SPEC, SUBMISSIONS

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
RSCRIPT = shutil.which("Rscript")
#: The small survey and a number question (asked of every other respondent), so that both branches
#: of the scripts (shares and a mean) print something.
SPEC = {
    **SMALL_SPEC,
    "slug": "scripted",
    "questions": [
        *SMALL_SPEC["questions"],
        {"key": "days", "kind": "number", "text": "Days?", "minimum": 0, "maximum": 30, "required": False},
    ],
}
ANSWERS = [{**one, **({"days": (7 * i) % 31} if i % 2 else {})} for i, one in enumerate(SUBMISSIONS)]


def script(language: str) -> str:
    """The code block of docs/api.md marked ``<!-- script: language -->``."""
    found = re.search(rf"<!-- script: {language} -->\n```{language}\n(.*?)\n```", DOC.read_text(), re.S)
    assert found, f"docs/api.md has no {language} script"
    return found.group(1) + "\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A live site with the survey answered, and a ``results`` token of its owner's."""
    tokens = []

    def setup(session):
        alice = User(username="alice", password_hash=NO_PASSWORD)  # she signs in with her token only
        session.add(alice)
        session.flush()
        create_survey_from_spec(session, SPEC, owner=alice)
        tokens.append(create_token(session, alice, "docs", "results", 7)[1])

    folder = tmp_path_factory.mktemp("scripts")
    with live_site(folder, "scripts-secret", setup, RATELIMIT_ENABLED=False) as (_app, base):
        for answers in ANSWERS:
            body = json.dumps({"answers": answers}).encode()
            request = urllib.request.Request(
                f"{base}/api/v1/surveys/scripted/responses", body, {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 201
        yield base, tokens[0], folder


def fetch(base: str, path: str, token: str) -> dict:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def number(value: float | None) -> str:
    return "NA" if value is None else f"{value:.6f}"


def expected(base: str, token: str) -> list[list[str]]:
    """What the scripts must print, from /api/v1's estimates; which must be the results page's own."""
    document = fetch(base, "/api/v1/surveys/scripted/estimates", token)
    assert document == fetch(base, "/api/surveys/scripted/estimates", token)
    lines = []
    for q in document["questions"]:
        if "categories" in q:
            lines += [
                [q["key"], str(c["code"]), *map(number, (c["proportion"], c["ci_low"], c["ci_high"]))]
                for c in q["categories"]
            ]
        else:
            s = q["summary"]
            lines.append([q["key"], "mean", *map(number, (s["mean"], s["ci_low"], s["ci_high"]))])
    assert len(lines) == 2 + 2 + 4 + 2 + 1  # drugs, mirror, often, age, days
    assert sum(line[0] == "days" and line[2] != "NA" for line in lines) == 1
    return [*lines, ["microdata", "rows", str(len(ANSWERS))]]


def run(command: list[str], base: str, token: str) -> list[list[str]]:
    env = {**os.environ, "SURVEY_URL": base, "SURVEY_SLUG": "scripted", "SURVEY_TOKEN": token}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


def test_the_python_script_prints_the_apis_estimates(site):
    base, token, folder = site
    path = folder / "estimates.py"
    path.write_text(script("python"))
    assert run([sys.executable, str(path)], base, token) == expected(base, token)


def test_the_python_script_stops_on_a_refusal_with_the_problems_code(site):
    base, _, folder = site
    path = folder / "refused.py"
    path.write_text(script("python"))
    env = {**os.environ, "SURVEY_URL": base, "SURVEY_SLUG": "scripted", "SURVEY_TOKEN": "rrs_" + "x" * 43}
    done = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "401 token.unknown" in done.stderr


def _r_ready() -> str | None:
    """Why the R script cannot run here, or None."""
    if RSCRIPT is None:
        return "Rscript is not installed (make r installs it)"
    check = subprocess.run([RSCRIPT, "-e", "library(jsonlite)"], capture_output=True, timeout=60, check=False)
    return None if check.returncode == 0 else "R's jsonlite is not installed (apt-get install r-cran-jsonlite)"


def test_the_r_script_prints_the_apis_estimates(site):
    reason = _r_ready()
    if reason:
        pytest.skip(reason)
    base, token, folder = site
    path = folder / "estimates.R"
    path.write_text(script("r"))
    assert run([RSCRIPT, str(path)], base, token) == expected(base, token)
