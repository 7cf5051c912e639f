"""The survey's respondent codes: make them, revoke one or every unused one, print them, download
them with their personal links as CSV. The codes are the survey's ``invitation`` access (the URLs
and endpoint names still say ``invitations``, as the pages and links already sent do)."""

from __future__ import annotations

from flask import Response, render_template, request, stream_with_context, url_for
from flask_login import login_required

from survey.domain.responses.codes import (
    CODES_PER_PRINT,
    code_counts,
    code_rows,
    codes_csv,
    generate_codes,
    normalize,
    revoke,
    revoke_unused,
    shown,
)
from survey.platform.extensions import db

from ..common import commit_or_refuse, localized, see_other
from ..mailing import respondent_url
from . import bp
from .codes_forms import CodesForm, RevokeForm
from .manage_page import confirm, editable, no_store, page_number, render_manage


@bp.post("/surveys/<slug>/invitations", endpoint="invitations")
@login_required
def make_codes(slug: str):
    survey = editable(slug)
    form = CodesForm()
    return commit_or_refuse(
        lambda: generate_codes(db.session, survey, form.count.data),
        form=form,
        done=lambda codes: see_other(
            "organize.share",
            f"{len(codes)} new invitation code{'' if len(codes) == 1 else 's'}. Download the links as CSV below.",
            anchor="invitations",
            slug=slug,
        ),
        refused=lambda status, _: render_manage(survey, status, codes_form=form),
    )


@bp.route("/surveys/<slug>/invitations/revoke", methods=["GET", "POST"])
@login_required
def revoke_code(slug: str):
    """Withdraw one unused code (``code``), after confirming; ``?code=`` on the confirmation page."""
    survey = editable(slug)
    if request.method == "GET":
        code = normalize(request.args.get("code"))
        return confirm(
            survey,
            title=f"Revoke the code {shown(code)}?",
            action=url_for("organize.revoke_code", slug=slug),
            button="Revoke the code",
            points=[
                "Whoever holds this code can no longer answer with it; they are told it was withdrawn.",
                "This cannot be undone; you can make new codes at any time.",
            ],
            fields={"code": code},
        )
    form = RevokeForm()
    return commit_or_refuse(
        lambda: revoke(db.session, survey, form.code.data),
        form=form,
        done=lambda code: see_other(
            "organize.share", f"The code {shown(code)} was revoked.", anchor="invitations", slug=slug
        ),
        refused=lambda status, error: render_manage(
            survey, status, codes_error=localized(error) if error else "Choose a code to revoke."
        ),
    )


@bp.route("/surveys/<slug>/invitations/revoke-unused", methods=["GET", "POST"])
@login_required
def revoke_unused_codes(slug: str):
    survey = editable(slug)
    if request.method == "GET":
        unused = code_counts(db.session, survey).unused
        return confirm(
            survey,
            title=f"Revoke all {unused:,} unused codes?",
            action=url_for("organize.revoke_unused_codes", slug=slug),
            button="Revoke every unused code",
            points=[
                "Nobody can answer with any of them from now on; whoever tries is told the code was withdrawn.",
                "Codes already used stay used, and the answers they admitted stay.",
                "This cannot be undone; you can make new codes at any time.",
            ],
        )

    def done(n: int) -> Response:
        return see_other(
            "organize.share", f"{n:,} unused code{'' if n == 1 else 's'} revoked.", anchor="invitations", slug=slug
        )

    return commit_or_refuse(
        lambda: revoke_unused(db.session, survey),
        done=done,
        refused=lambda status, error: render_manage(survey, status, codes_error=localized(error) if error else ""),
    )


@bp.get("/surveys/<slug>/invitations/print")
@login_required
def print_codes(slug: str):
    """The unused codes as cards to print and hand out: the survey's address and one code each."""
    survey = editable(slug)
    counts = code_counts(db.session, survey)
    pages = max(1, -(-counts.unused // CODES_PER_PRINT))
    page = min(page_number(), pages)
    response = Response(
        render_template(
            "organize/print_codes.html",
            survey=survey,
            codes=code_rows(db.session, survey, page=page, per_page=CODES_PER_PRINT, unused_only=True),
            page=page,
            pages=pages,
            counts=counts,
            survey_link=respondent_url("respond.show", slug=survey.slug),
        )
    )
    return no_store(response)


@bp.get("/surveys/<slug>/invitations.csv", endpoint="invitations_csv")
@login_required
def codes_csv_file(slug: str):
    """Every code with its personal link and whether it was used; streamed, however many there are."""
    survey = editable(slug)

    def link_for(code: str) -> str:
        return respondent_url("respond.show", slug=survey.slug, code=code)

    body = stream_with_context(codes_csv(db.session, survey, link_for))
    response = Response(body, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-invitations.csv"'
    return no_store(response)
