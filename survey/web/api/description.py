"""The OpenAPI 3.1 description of /api/v1, written here as data beside the views it describes.

It is written by hand rather than generated from the views: what a client may rely on (each
document's members, each refusal's status) is a promise, and a promise is written on purpose. The
tests keep it true both ways: ``openapi-spec-validator`` checks it is a valid description, every
route of the blueprint is in it and nothing else is, and ``schemathesis`` sends requests generated
from it to the running app and checks every answer against it (no 5xx, each status listed, each
body matching its schema). The response schemas name the members a client can count on; the
documents may carry more (``additionalProperties`` is left open so that adding a member is not a
breaking change).
"""

from __future__ import annotations

from typing import Any

#: The media types of the labelled microdata (as IANA and the formats' makers name them).
LABELLED_TYPES = {"sav": "application/x-spss-sav", "dta": "application/x-stata-dta"}
VERSION = "1.0.0"
PROBLEM_JSON = "application/problem+json"

NUMBER = {"type": "number"}
NUMBER_OR_NULL = {"type": ["number", "null"]}
STRING = {"type": "string"}
INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}


def _object(required: dict[str, Any], optional: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """An object that must have the members of ``required`` (with their schemas) and may have the
    members of ``optional``; others are allowed."""
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
        **extra,
    }


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


SCHEMAS: dict[str, Any] = {
    "Problem": _object(
        {
            "type": STRING,
            "title": STRING,
            "status": INTEGER,
            "detail": STRING,
            "code": {**STRING, "description": "Stable: what a client keys on (docs/errors.md lists them all)."},
            "params": {"type": "object", "description": "The values that fill the sentence."},
            "path": {
                **_array({"type": ["string", "integer"]}),
                "description": "Where in the input: a field's path, e.g. ['answers', 'q3']; empty for the whole.",
            },
        },
        {"error": {**STRING, "description": "The sentence again (for clients older than the problem members)."}},
        description="An RFC 9457 problem: every refusal of this API has this shape.",
    ),
    "SurveyList": _object(
        {
            "surveys": _array(
                _object(
                    {
                        "slug": STRING,
                        "title": STRING,
                        "status": {"enum": ["draft", "open", "closed", "archived"]},
                        "role": {"enum": ["owner", "organizer", "researcher"]},
                        "submissions": INTEGER,
                        "links": _object(
                            {"estimates": STRING, "live": STRING, "microdata": STRING, "codebook": STRING},
                            {"spec": STRING},
                        ),
                    }
                )
            )
        }
    ),
    "Spec": _object(
        {"title": STRING, "questions": _array(_object({"key": STRING, "kind": STRING, "text": STRING}))},
        description="A survey spec: import it (the import page, or flask import-survey) to make a copy.",
    ),
    "Estimates": _object(
        {
            "survey": _object(
                {"slug": STRING, "title": STRING, "status": STRING, "simulated": BOOLEAN, "submissions": INTEGER}
            ),
            "level": NUMBER,
            "questions": _array(
                _object(
                    {"key": STRING, "kind": STRING, "text": STRING, "randomized": BOOLEAN, "variable": STRING},
                    {
                        "n": INTEGER,
                        "epsilon": NUMBER_OR_NULL,
                        "categories": _array(
                            _object(
                                {"code": INTEGER, "label": STRING},
                                {
                                    "reported": INTEGER,
                                    "proportion": NUMBER_OR_NULL,
                                    "unbiased": NUMBER_OR_NULL,
                                    "standard_error": NUMBER_OR_NULL,
                                    "ci_low": NUMBER_OR_NULL,
                                    "ci_high": NUMBER_OR_NULL,
                                },
                            )
                        ),
                    },
                )
            ),
            "total_epsilon": NUMBER_OR_NULL,
            "split_ballots": _array(
                _object(
                    {"group": STRING, "arms": _array(_object({"key": STRING, "share": NUMBER, "n": INTEGER}))},
                    {
                        "randomized_minus_direct": _array({"type": "object"}),
                        "noncompliance": {"type": ["object", "null"]},
                        "notes": _array(STRING),
                    },
                    description="One question asked in several ways (arms), each respondent assigned one by "
                    "chance: randomized minus direct, and the non-compliance models fitted on two arms.",
                )
            ),
        }
    ),
    "Live": _object(
        {
            "level": NUMBER,
            "all_reached": BOOLEAN,
            "questions": _array(
                _object(
                    {
                        "key": STRING,
                        "n": INTEGER,
                        "reached": BOOLEAN,
                        "intervals": _array(
                            _object({"code": INTEGER, "label": STRING}, {"low": NUMBER_OR_NULL, "high": NUMBER_OR_NULL})
                        ),
                        "timeline": {"type": "object"},
                    }
                )
            ),
            "numbers": _array({"type": "object"}),
        }
    ),
    "AnytimeTest": _object(
        {
            "question": STRING,
            "category": INTEGER,
            "threshold": NUMBER,
            "alternative": {"enum": ["greater", "less", "two-sided"]},
            "e_value": NUMBER_OR_NULL,
            "p_value": NUMBER_OR_NULL,
            "t": INTEGER,
        }
    ),
    "Comparison": _object(
        {"kind": STRING, "survey": STRING, "question": STRING, "by": STRING, "level": NUMBER},
        {"groups": _array({"type": "object"}), "cells": _array({"type": "object"}), "measures": {"type": "object"}},
        description="A breakdown by a direct question or by week (groups), or an association (cells, measures).",
    ),
    "Regression": _object(
        {
            "survey": STRING,
            "outcome": STRING,
            "converged": BOOLEAN,
            "level": NUMBER,
            "covariates": _array(_object({"key": STRING, "text": STRING})),
            "coefficients": _array(
                _object({"name": STRING}, {"estimate": NUMBER_OR_NULL, "standard_error": NUMBER_OR_NULL})
            ),
        }
    ),
    "Codebook": _object(
        {
            "survey": _object({"slug": STRING, "title": STRING, "status": STRING}),
            "columns": _array({"type": "object"}),
            "questions": _array({"type": "object"}),
        }
    ),
    "Submission": _object(
        {
            "answers": {
                "type": "object",
                "description": "Question key → the reported (randomized) code, or a number question's whole number;"
                ' "declined" for a question that lets respondents decline it.',
                "additionalProperties": {"type": ["integer", "string"]},
            }
        },
        {
            "invitation": {**STRING, "description": "The respondent's code, for a survey by invitation."},
            "submission_key": {**STRING, "description": "One per filling of the form: a resend is received once."},
        },
        additionalProperties=False,
    ),
    "Stored": _object({"status": {"enum": ["stored", "already received"]}, "message": STRING}),
    "ImportRows": {
        "type": "array",
        "description": "One object per response: `submitted_on` (YYYY-MM-DD) and each answered question's column "
        "(its variable name in the exports, or its key) with the value the microdata export writes.",
        "items": {"type": "object", "additionalProperties": {"type": ["integer", "number", "string", "null"]}},
    },
    "Imported": _object(
        {
            "rows": INTEGER,
            "added": INTEGER,
            "already_imported": BOOLEAN,
            "dry_run": BOOLEAN,
            "sha256": STRING,
            "import": {"type": ["integer", "null"]},
        },
        description="What an upload did: `added` is 0 when the same rows came before, or for a dry run.",
    ),
    "ImportProblem": _object(
        {"type": STRING, "status": INTEGER, "code": STRING},
        {
            "errors": _array(
                _object(
                    {
                        "row": {**INTEGER, "description": "1 = the first row after the header; 0 = the header."},
                        "column": {"type": ["string", "null"]},
                        "code": STRING,
                        "message": STRING,
                    }
                )
            ),
        },
        description="A refused upload: an RFC 9457 problem; with `import.rows_invalid`, `errors` lists every "
        "row and column at fault (at most 200). Nothing was written.",
    ),
}

SLUG = {
    "name": "slug",
    "in": "path",
    "required": True,
    "description": "The survey's address (as in /s/<slug>).",
    "schema": STRING,
}


def _query(name: str, description: str, schema: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": schema or STRING, **more}


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {PROBLEM_JSON: {"schema": _ref("Problem")}}}


#: The refusals every operation that reads a survey may answer.
READ_REFUSALS = {
    "400": _problem("The query is not text the site takes (`http.400`), or an analysis was asked wrongly."),
    "401": _problem(
        "No token and no sign-in (`api.unauthenticated`), or a token refused: `token.unknown`, `token.revoked`, "
        "`token.expired`, `token.user_disabled`."
    ),
    "403": _problem("The token's scope does not cover this (`token.scope`)."),
    "404": _problem(
        "No such survey, or none this user (or token) may read: the same answer (`http.404`), so a slug tells nothing."
    ),
    "429": _problem("Too many requests from this token or address (`http.429`)."),
}
#: The refusals of a public operation.
PUBLIC_REFUSALS = {"400": READ_REFUSALS["400"], "429": READ_REFUSALS["429"]}


def _json(schema: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


def _file(media_type: str, description: str) -> dict[str, Any]:
    schema = {"type": "string"} if media_type == "text/csv" else {"type": "string", "format": "binary"}
    return {"description": description, "content": {media_type: {"schema": schema}}}


def _read(
    operation_id: str,
    summary: str,
    description: str,
    ok: dict[str, Any],
    *,
    scopes: tuple[str, ...] = ("results",),
    parameters: tuple[dict[str, Any], ...] = (),
    with_slug: bool = True,
    conflict: str | None = None,
    tag: str = "results",
) -> dict[str, Any]:
    responses = {"200": ok, **READ_REFUSALS}
    if conflict:
        responses["409"] = _problem(conflict)
    if not with_slug:
        del responses["404"]
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "description": description,
            "tags": [tag],
            "security": [{"token": list(scopes)}, {"session": []}],
            "parameters": ([SLUG] if with_slug else []) + list(parameters),
            "responses": dict(sorted(responses.items())),
        }
    }


NOT_YET = "An analysis that cannot be made yet (nobody answered: `analysis.no_answers`)."
CATEGORY = _query("category", "The option whose share is used (its code in the exports; the first by default).")

PATHS: dict[str, Any] = {
    "/surveys": _read(
        "listSurveys",
        "The surveys you may read",
        "Every survey the user owns or has an accepted role on (archived ones too), within the token's surveys. "
        "With a `manage` token, only those the user may edit.",
        _json("SurveyList", "The surveys, newest first."),
        scopes=("results", "manage"),
        with_slug=False,
        tag="surveys",
    ),
    "/surveys/{slug}/spec": _read(
        "getSpec",
        "The survey's spec",
        "The JSON spec that re-creates the survey's questions and designs. Its organizers only (owner, organizer).",
        _json("Spec", "The spec."),
        scopes=("manage",),
        tag="surveys",
    ),
    "/surveys/{slug}/estimates": _read(
        "getEstimates",
        "Estimates",
        "Per question: counts, consistent and unbiased estimates, 95% intervals, ε; the survey's total ε. The "
        "numbers of the results page (docs/exports.md).",
        _json("Estimates", "The estimates."),
    ),
    "/surveys/{slug}/live": _read(
        "getLive",
        "Live intervals",
        "Every randomized question's live (anytime-valid) intervals and timeline, the stopping rule's state, and "
        "every number question's live interval for its mean (docs/analysis.md).",
        _json("Live", "The live intervals."),
    ),
    "/surveys/{slug}/anytime-test": _read(
        "getAnytimeTest",
        "Anytime-valid test",
        "The anytime-valid test of one share of a randomized question against a threshold.",
        _json("AnytimeTest", "The test."),
        parameters=(
            _query("question", "The randomized question's key.", required=True),
            _query("threshold", "The share to test against, 0 to 1.", {"type": "number"}, required=True),
            _query("alternative", "The alternative hypothesis.", {"enum": ["greater", "less", "two-sided"]}),
            CATEGORY,
        ),
    ),
    "/surveys/{slug}/compare": _read(
        "getComparison",
        "Comparison",
        "A randomized question by a direct question's options, by week of submission (`by=week`), or against "
        "another randomized question (their association).",
        _json("Comparison", "The comparison."),
        parameters=(
            _query("question", "The randomized question's key.", required=True),
            _query("by", "A question's key, or `week`.", required=True),
            CATEGORY,
        ),
        conflict=NOT_YET,
    ),
    "/surveys/{slug}/regression": _read(
        "getRegression",
        "Logistic regression",
        "What predicts a sensitive answer: a logistic regression of a randomized outcome on questions asked directly.",
        _json("Regression", "The fitted model (or why it did not converge)."),
        parameters=(
            _query("outcome", "The randomized question's key.", required=True),
            _query(
                "covariates",
                "The keys of questions asked directly, one parameter each.",
                _array(STRING),
                required=True,
                style="form",
                explode=True,
            ),
            CATEGORY,
        ),
        conflict=NOT_YET,
    ),
    "/surveys/{slug}/responses.csv": _read(
        "getMicrodataCsv",
        "Microdata (CSV)",
        "The randomized microdata, one row per submission, in the codebook's codes (docs/exports.md).",
        _file("text/csv", "The CSV file."),
    ),
    "/surveys/{slug}/responses.sav": _read(
        "getMicrodataSav",
        "Microdata for SPSS",
        "The microdata with the questions' texts and the options' labels, as an SPSS .sav file.",
        _file(LABELLED_TYPES["sav"], "The .sav file."),
    ),
    "/surveys/{slug}/responses.dta": _read(
        "getMicrodataDta",
        "Microdata for Stata",
        "The microdata with the questions' texts and the options' labels, as a Stata .dta file.",
        _file(LABELLED_TYPES["dta"], "The .dta file."),
    ),
    "/surveys/{slug}/codebook": _read(
        "getCodebook",
        "Codebook",
        "Everything needed to analyse the microdata: columns, options, design matrices, total ε; in the "
        "survey's first language (English), or in another of its languages (the same codes).",
        _json("Codebook", "The codebook."),
        parameters=(
            _query(
                "language",
                "One of the survey's languages (`es`, `ar`): the questions' texts and the options' labels in it "
                "(400 for a language the survey does not have).",
            ),
        ),
    ),
}
PATHS["/surveys/{slug}/responses"] = {
    "post": {
        "operationId": "submitResponse",
        "summary": "Submit a respondent's answers",
        "description": "Public, as the survey page's own submission: only randomized codes travel. A resend with "
        "the same `submission_key` (or `Idempotency-Key` header) is received once. No token is read.",
        "tags": ["respondents"],
        "security": [{}],
        "parameters": [SLUG],
        "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("Submission")}}},
        "responses": {
            "200": _json("Stored", "Already received: a resend of a stored submission (stored once)."),
            "201": _json("Stored", "Stored."),
            **PUBLIC_REFUSALS,
            "403": _problem("By invitation, and the code is missing, unknown or used."),
            "404": _problem("No such survey, or a draft (`http.404`)."),
            "409": _problem("The survey does not accept answers now (closed, not yet open)."),
            "413": _problem("The body is too large (`http.413`)."),
            "415": _problem("Not JSON (`submission.not_json`)."),
        },
    }
}
PATHS["/surveys/{slug}/imports"] = {
    "post": {
        "operationId": "importResponses",
        "summary": "Import responses collected elsewhere",
        "description": "Reports collected on paper, by telephone or in another tool under the survey's design, as "
        "CSV or JSON in the microdata export's shape (docs/analysis.md, 'Importing responses collected "
        "elsewhere'). Every row is checked as a web submission is; if any fails, nothing is written and every "
        "row and column at fault is listed. The same rows uploaded again add nothing. By the survey's owner or "
        "organizers, with an `imports` token only.",
        "tags": ["imports"],
        "security": [{"token": ["imports"]}],
        "parameters": [
            SLUG,
            _query("dry_run", "`true`: check every row and say what would be added; write nothing."),
        ],
        "requestBody": {
            "required": True,
            "content": {
                "text/csv": {"schema": STRING},
                "application/json": {"schema": _ref("ImportRows")},
                "multipart/form-data": {
                    "schema": _object({"file": {"type": "string", "format": "binary"}}),
                },
            },
        },
        "responses": {
            "200": _json("Imported", "The same rows were imported before (nothing added), or a dry run."),
            "201": _json("Imported", "Imported."),
            "400": {
                "description": "A row or the file is refused (`import.rows_invalid` lists them; `import.*`).",
                "content": {PROBLEM_JSON: {"schema": _ref("ImportProblem")}},
            },
            "401": READ_REFUSALS["401"],
            "403": _problem(
                "The token's scope is not `imports` (`token.scope`), or the user is not the survey's owner or "
                "an organizer (`import.not_organizer`)."
            ),
            "404": READ_REFUSALS["404"],
            "409": _problem("The survey is a draft (`import.draft`)."),
            "413": _problem("The body is too large (`http.413`)."),
            "429": READ_REFUSALS["429"],
        },
    }
}
for _path, _refusal in (("/openapi.json", "This description."), ("/docs", "This description, as a page.")):
    PATHS[_path] = {
        "get": {
            "operationId": "getDescription" if _path.endswith("json") else "getReference",
            "summary": _refusal,
            "tags": ["description"],
            "security": [{}],
            "responses": {
                "200": {
                    "description": _refusal,
                    "content": {"application/json": {"schema": {"type": "object"}}}
                    if _path.endswith("json")
                    else {"text/html": {"schema": STRING}},
                },
                **PUBLIC_REFUSALS,
            },
        }
    }


def description(server: str) -> dict[str, Any]:
    """The description, with ``server`` (this site's /api/v1 address) as its server."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Sensitive questions, private answers: the researcher's API",
            "version": VERSION,
            "description": "Read a survey's estimates, live intervals, analyses and exports with a personal API "
            "token (made on your account page), and submit a respondent's randomized answers. Every refusal is an "
            "RFC 9457 problem with a stable `code` and the `path` of the field it is about. docs/api.md has "
            "complete scripts in R and Python.",
        },
        "servers": [{"url": server}],
        "tags": [
            {"name": "surveys", "description": "Which surveys you may read, and their specs."},
            {"name": "results", "description": "Estimates, live intervals, analyses and exports."},
            {"name": "respondents", "description": "What a respondent's device sends."},
            {"name": "imports", "description": "Responses collected elsewhere (paper, telephone, another tool)."},
            {"name": "description", "description": "This description."},
        ],
        "paths": PATHS,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "token": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A personal API token (`rrs_...`) with one scope: `results` (read results and "
                    "exports), `manage` (list surveys and read their specs) or `imports` (upload responses collected "
                    "elsewhere). Limited to some surveys if its "
                    "owner chose so, and never more than its owner's role of the moment.",
                },
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "session",
                    "description": "A signed-in browser's session (reading only).",
                },
            },
        },
    }


def operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The description's operations in the order of its paths, flattened for the reference page."""
    found = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            scopes = sorted({s for need in operation.get("security", []) for s in need.get("token", [])})
            found.append({"method": method.upper(), "path": path, "scopes": scopes, **operation})
    return found
