"""The survey's lifecycle on its management page: the page itself, publish, close, reopen, archive and
restore, delete a draft, duplicate, the address, the dates, closing by itself, access, and the spec
(export, and import as a new draft).

Views parse a form, call one domain function and render; refusals are shown on the management page
(survey.web.organize.manage_page), next to the field they concern.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Response, jsonify, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required

from survey.domain.errors import DomainError
from survey.domain.responses.tallies import submission_count
from survey.domain.results.live import close_if_precise
from survey.domain.surveys import lifecycle
from survey.domain.surveys.specs import survey_to_spec
from survey.domain.surveys.wording import epsilon_text
from survey.platform.extensions import csrf, db
from survey.privacy.designs import design_name

from ..common import commit_or_refuse, localized, me, say, see_other
from ..mailing import respondent_url
from . import bp
from .lifecycle_forms import AccessForm, AddressForm, AutoCloseForm, DatesForm, ImportForm
from .manage_page import confirm, editable, no_store, owner_only, render_manage, transition

#: A spec is far larger than a submission (the app-wide request limit is sized for those).
IMPORT_MAX_BYTES = 1024 * 1024


@bp.get("/surveys/<slug>/share")
@login_required
def share(slug: str):
    """State, dates, access, invitations, people and the spec of one survey, on one page."""
    return render_manage(editable(slug))


@bp.route("/surveys/<slug>/publish", methods=["GET", "POST"])
@login_required
def publish(slug: str):
    """GET: what publishing freezes, question by question, and what still stops it; POST: publish."""
    if request.method == "GET":
        survey = editable(slug)
        refusals = lifecycle.publish_refusals(survey)
        questions = [
            {
                "question": q,
                "design": design_name(q.design.mechanism_name) if q.design else None,
                "epsilon": epsilon_text(q.mechanism().epsilon) if q.design else None,
            }
            for q in survey.questions
        ]
        return render_template(
            "organize/publish.html",
            survey=survey,
            questions=questions,
            problems=[localized(problem) for problem in refusals],
            translation_missing=any(p.code.startswith("survey.publish_translation_") for p in refusals),
            total_epsilon=epsilon_text(survey.total_epsilon()),
            cap=epsilon_text(survey.epsilon_cap) if survey.epsilon_cap is not None else None,
            survey_link=respondent_url("respond.show", slug=survey.slug),
        )
    return transition(
        slug,
        lifecycle.publish,
        "Published: the survey accepts answers, and its questions' designs are now frozen.",
    )


@bp.route("/surveys/<slug>/close", methods=["GET", "POST"])
@login_required
def close(slug: str):
    if request.method == "GET":
        survey = editable(slug)
        return confirm(
            survey,
            title="Close this survey?",
            action=url_for("organize.close", slug=slug),
            button="Close the survey",
            points=[
                "Respondents who open the link are told the survey is closed; answers sent from now on are refused.",
                f"The {submission_count(db.session, survey):,} answers stored so far and the results stay as they are.",
                "You can reopen it later: it then accepts answers again, under the same designs.",
            ],
        )
    return transition(slug, lifecycle.close, "Closed: the survey no longer accepts answers. Reopen it to accept more.")


@bp.post("/surveys/<slug>/reopen")
@login_required
def reopen(slug: str):
    return transition(
        slug,
        lifecycle.reopen,
        "Reopened: the survey accepts answers again, under the same designs (closing by itself is now off).",
    )


@bp.route("/surveys/<slug>/archive", methods=["GET", "POST"])
@login_required
def archive(slug: str):
    """The owner puts a closed survey out of the lists; its answers and results stay."""
    survey = editable(slug)
    if request.method == "GET":
        return owner_only(survey, "archive it") or confirm(
            survey,
            title="Archive this survey?",
            action=url_for("organize.archive", slug=slug),
            button="Archive the survey",
            danger=False,
            points=[
                "It leaves your list of surveys and your team's; it stays in the archive, linked from the list.",
                "Its answers, results and downloads are kept, and every member keeps their access to them.",
                "It accepts no answers. You can restore it from the archive at any time (it comes back closed).",
            ],
        )
    return transition(
        slug, lambda s: lifecycle.archive(s, me()), "Archived: the survey is out of the list; find it in the archive."
    )


@bp.post("/surveys/<slug>/unarchive")
@login_required
def unarchive(slug: str):
    return transition(slug, lambda s: lifecycle.unarchive(s, me()), "Restored from the archive: the survey is closed.")


@bp.route("/surveys/<slug>/delete", methods=["GET", "POST"])
@login_required
def delete_survey(slug: str):
    """The owner deletes a draft (a survey that never accepted an answer), after confirming."""
    survey = editable(slug)
    if request.method == "GET":
        return owner_only(survey, "delete it") or confirm(
            survey,
            title=f"Delete the draft “{survey.title}”?",
            action=url_for("organize.delete_survey", slug=slug),
            button="Delete the draft",
            points=[
                f"Its {len(survey.questions)} question{'' if len(survey.questions) == 1 else 's'}, their designs, "
                "its texts and its invitation codes are deleted. This cannot be undone.",
                "Nobody has answered it: a draft accepts no answers, so no answers are lost.",
                "To keep a copy, download its spec first (on the management page).",
            ],
        )
    return commit_or_refuse(
        lambda: lifecycle.delete_draft(db.session, survey, me()),
        done=lambda title: see_other("results.index", f"The draft “{title}” was deleted."),
        refused=lambda status, error: render_manage(survey, status, lifecycle_error=localized(error) if error else ""),
    )


# -- the survey's address --------------------------------------------------------------------------


@bp.post("/surveys/<slug>/address")
@login_required
def address(slug: str):
    """A draft's address (``/s/<slug>``), chosen by its organizers."""
    survey = editable(slug)
    form = AddressForm()
    return commit_or_refuse(
        lambda: lifecycle.set_slug(db.session, survey, form.slug.data or ""),
        form=form,
        done=lambda _: see_other(
            "organize.share", f"The survey's address is now /s/{survey.slug}.", anchor="address", slug=survey.slug
        ),
        refused=lambda status, _: render_manage(survey, status, address_form=form),
    )


@bp.get("/surveys/<slug>/address/check")
@login_required
def check_address(slug: str):
    """Whether ``?slug=`` could be this survey's address, as JSON, for the check while typing.

    It says only "free" or "taken" (which saving would say anyway), never whose survey holds it or
    whether that one is a draft.
    """
    survey = editable(slug)
    wanted = (request.args.get("slug") or "").strip().lower()
    problem = lifecycle.slug_problem(db.session, wanted, survey)
    response = jsonify(
        slug=wanted,
        available=problem is None,
        message=say(problem) if problem else f"This address is free: {respondent_url('respond.show', slug=wanted)}",
    )
    return no_store(response)


@bp.post("/surveys/<slug>/duplicate")
@login_required
def duplicate(slug: str):
    """A draft copy, owned by whoever duplicated it and shared with the original's team."""
    survey = editable(slug)
    return commit_or_refuse(  # only a survey stored before today's rules could be refused here
        lambda: lifecycle.duplicate(db.session, survey, me(), keep_team=True),
        done=lambda copy: see_other(
            "organize.build",
            f"“{copy.title}” is a new draft with the same questions and designs: change it, then publish it.",
            slug=copy.slug,
        ),
        refused=lambda status, error: render_manage(survey, status, lifecycle_error=localized(error) if error else ""),
    )


@bp.post("/surveys/<slug>/dates")
@login_required
def dates(slug: str):
    survey = editable(slug)
    form = DatesForm()
    return commit_or_refuse(
        lambda: lifecycle.set_dates(survey, form.opens_on.data, form.closes_on.data),
        form=form,
        done=lambda _: see_other("organize.share", "Dates saved.", anchor="dates", slug=slug),
        refused=lambda status, _: render_manage(survey, status, dates_form=form),
    )


@bp.post("/surveys/<slug>/auto-close")
@login_required
def auto_close(slug: str):
    """Turn closing by itself, once precise enough, on or off; turning it on may close the survey now."""
    survey = editable(slug)
    form = AutoCloseForm()

    def change() -> None:
        survey.auto_close = bool(form.auto_close.data)

    def done(_: Any):
        closed = survey.auto_close and close_if_precise(db.session, survey.id)
        words = (
            "Closed: every randomized question had already reached the target margin."
            if closed
            else (
                "The survey will close by itself once precise enough."
                if survey.auto_close
                else "Closing by itself is off."
            )
        )
        return see_other("organize.share", words, anchor="state", slug=slug)

    return commit_or_refuse(
        change, form=form, done=done, refused=lambda status, _: render_manage(survey, status, auto_close_form=form)
    )


@bp.post("/surveys/<slug>/access")
@login_required
def access(slug: str):
    survey = editable(slug)
    form = AccessForm()
    return commit_or_refuse(
        lambda: lifecycle.set_access(survey, form.access.data),
        form=form,
        done=lambda _: see_other(
            "organize.share",
            "Access saved: " + ("invitation codes only." if survey.access == "invitation" else "anyone with the link."),
            anchor="access",
            slug=slug,
        ),
        refused=lambda status, _: render_manage(survey, status, access_form=form),
    )


# -- the spec --------------------------------------------------------------------------------------


@bp.get("/surveys/<slug>/spec.json")
@login_required
def export_spec(slug: str):
    """The JSON spec that re-creates the survey's questions and designs (import it, or keep it with the data)."""
    survey = editable(slug)
    body = json.dumps(survey_to_spec(survey), indent=2, ensure_ascii=False) + "\n"
    response = Response(body, mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-spec.json"'
    return no_store(response)


@bp.route("/surveys/import", methods=["GET", "POST"])
@csrf.exempt  # checked by ImportForm itself, after the larger size limit below is in place
@login_required
def import_spec():
    """A new draft from an uploaded or pasted spec, validated by the same code as the builder and the CLI.

    The app's request limit fits a submission; a spec may be larger, so this view raises it for
    itself. The global CSRF check would read the body before the view could, hence the form checks
    the token instead.
    """
    request.max_content_length = IMPORT_MAX_BYTES
    request.max_form_memory_size = IMPORT_MAX_BYTES
    form = ImportForm()
    if request.method == "GET":
        return render_template("organize/import.html", form=form)
    if form.validate_on_submit():
        upload = form.file.data
        has_file = bool(getattr(upload, "filename", ""))
        pasted = (form.text.data or "").strip()
        if has_file and pasted:
            form.text.errors.append("Give a file or paste a spec, not both.")
        elif not has_file and not pasted:
            form.file.errors.append("Choose a spec file, or paste a spec below.")
        else:
            field = form.file if has_file else form.text

            def refused(status: int, error: DomainError | None) -> ResponseReturnValue:
                field.errors.append(f"Nothing was imported: {error}.")
                return render_template("organize/import.html", form=form), status

            return commit_or_refuse(
                lambda: lifecycle.import_draft(db.session, upload.read() if has_file else pasted, me()),
                done=lambda survey: see_other(
                    "organize.build",
                    f"“{survey.title}” was imported as a draft. Review it, then publish it.",
                    slug=survey.slug,
                ),
                refused=refused,
            )
    return render_template("organize/import.html", form=form), 400
