"""Running a survey: lifecycle, dates, access and invitations, sharing, spec export and import, the account.

Every survey-specific view starts with :func:`_editable`, which answers 404 to anyone who is not the
owner or a co-organizer (a researcher included): the management page of a survey one may not manage
does not exist, as far as one can tell. Views parse a form, call one domain function and render;
refusals are shown on the page they came from, next to the field they concern.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flask import Response, current_app, flash, redirect, render_template, request, stream_with_context, url_for
from flask_login import current_user, login_required

from .. import lifecycle
from ..extensions import csrf, db
from ..invitations import InvitationError, generate_codes, invitation_counts, invitations_csv
from ..models import Survey, User
from ..rights import survey_for
from ..sharing import ROLE_LABELS, SharingError, SurveyAccess, add_member, change_password, members, remove_member
from ..sharing import survey_access as access_of
from ..specs import SpecError, survey_to_spec
from ..tallies import submission_count, survey_total_epsilon
from ..wording import epsilon_text
from . import bp
from .manage_forms import (
    AccessForm,
    AddMemberForm,
    DatesForm,
    ImportForm,
    InvitationsForm,
    PasswordForm,
    RemoveMemberForm,
)

#: A spec is far larger than a submission (the app-wide request limit is sized for those).
IMPORT_MAX_BYTES = 1024 * 1024


# -- template helpers (used by the survey list as well) --------------------------------------------


@bp.app_template_global("manage_access")
def _manage_access(survey: Survey) -> SurveyAccess:
    """The signed-in user's role on ``survey``, what it lets them do, and the survey's state in words."""
    return access_of(current_user if current_user.is_authenticated else None, survey)


@bp.app_template_global("endpoint_exists")
def _endpoint_exists(name: str) -> bool:
    """Whether a view is registered, so a page links only to pages that exist."""
    return name in current_app.view_functions


def _me() -> User:
    return current_user._get_current_object()


def _editable(slug: str) -> Survey:
    """The survey if the signed-in user may manage it; 404 otherwise, as if it did not exist."""
    return survey_for(db.session, current_user, slug, "edit")


def _no_store(response: Response) -> Response:
    """Codes and specs are for the organizers' eyes: no browser or proxy cache should keep them."""
    response.headers["Cache-Control"] = "private, no-store"
    return response


def _see_other(endpoint: str, anchor: str | None = None, **values: Any):
    return redirect(url_for(endpoint, _anchor=anchor, **values), code=303)


# -- the management page ---------------------------------------------------------------------------


def _render_share(survey: Survey, status: int = 200, *, lifecycle_error: str = "", **forms: Any):
    """The management page; ``forms`` replaces the blank form of the section a refused post came from."""
    blank: dict[str, Any] = {
        "dates_form": DatesForm(formdata=None, data={"opens_on": survey.opens_on, "closes_on": survey.closes_on}),
        "access_form": AccessForm(formdata=None, data={"access": survey.access}),
        "invitations_form": InvitationsForm(formdata=None),
        "member_form": AddMemberForm(formdata=None),
        "members_error": "",
    }
    blank.update(forms)
    build = url_for("organize.build", slug=survey.slug) if _endpoint_exists("organize.build") else None
    return render_template(
        "organize/share.html",
        survey=survey,
        access=_manage_access(survey),
        members=members(survey),
        role_labels=ROLE_LABELS,
        counts=invitation_counts(db.session, survey),
        submissions=submission_count(db.session, survey),
        total_epsilon=epsilon_text(survey_total_epsilon(survey)),
        cap=epsilon_text(survey.epsilon_cap) if survey.epsilon_cap is not None else None,
        build_url=build,
        lifecycle_error=lifecycle_error,
        **blank,
    ), status


@bp.get("/surveys/<slug>/share")
@login_required
def share(slug: str):
    """State, dates, access, invitations, people and the spec of one survey, on one page."""
    return _render_share(_editable(slug))


def _transition(slug: str, change: Callable[[Survey], None], done: str):
    survey = _editable(slug)
    try:
        change(survey)
    except lifecycle.LifecycleError as error:
        db.session.rollback()
        return _render_share(survey, error.status, lifecycle_error=error.message)
    db.session.commit()
    flash(done)
    return _see_other("organize.share", "state", slug=slug)


@bp.post("/surveys/<slug>/publish")
@login_required
def publish(slug: str):
    return _transition(
        slug,
        lifecycle.publish,
        "Published: the survey accepts answers, and its questions' designs are now frozen.",
    )


@bp.post("/surveys/<slug>/close")
@login_required
def close(slug: str):
    return _transition(slug, lifecycle.close, "Closed: the survey no longer accepts answers.")


@bp.post("/surveys/<slug>/reopen")
@login_required
def reopen(slug: str):
    return _transition(slug, lifecycle.reopen, "Reopened: the survey accepts answers again, under the same designs.")


@bp.post("/surveys/<slug>/duplicate")
@login_required
def duplicate(slug: str):
    """A draft copy, owned by whoever duplicated it and shared with the original's team."""
    survey = _editable(slug)
    try:
        copy = lifecycle.duplicate(db.session, survey, _me(), keep_team=True)
    except SpecError as error:  # only a survey stored before today's rules could fail here
        db.session.rollback()
        return _render_share(survey, 409, lifecycle_error=f"This survey cannot be copied: {error}")
    db.session.commit()
    flash(f"“{copy.title}” is a new draft with the same questions and designs: change it, then publish it.")
    if _endpoint_exists("organize.build"):
        return _see_other("organize.build", slug=copy.slug)
    return _see_other("organize.share", slug=copy.slug)


@bp.post("/surveys/<slug>/dates")
@login_required
def dates(slug: str):
    survey = _editable(slug)
    form = DatesForm()
    if not form.validate_on_submit():
        return _render_share(survey, 400, dates_form=form)
    try:
        lifecycle.set_dates(survey, form.opens_on.data, form.closes_on.data)
    except lifecycle.LifecycleError as error:
        db.session.rollback()
        form.closes_on.errors.append(error.message)
        return _render_share(survey, error.status, dates_form=form)
    db.session.commit()
    flash("Dates saved.")
    return _see_other("organize.share", "dates", slug=slug)


@bp.post("/surveys/<slug>/access")
@login_required
def access(slug: str):
    survey = _editable(slug)
    form = AccessForm()
    if not form.validate_on_submit():
        return _render_share(survey, 400, access_form=form)
    lifecycle.set_access(survey, form.access.data)
    db.session.commit()
    flash("Access saved: " + ("invitation codes only." if survey.access == "invitation" else "anyone with the link."))
    return _see_other("organize.share", "access", slug=slug)


@bp.post("/surveys/<slug>/invitations")
@login_required
def invitations(slug: str):
    survey = _editable(slug)
    form = InvitationsForm()
    if not form.validate_on_submit():
        return _render_share(survey, 400, invitations_form=form)
    try:
        codes = generate_codes(db.session, survey, form.count.data)
    except InvitationError as error:
        db.session.rollback()
        form.count.errors.append(error.message)
        return _render_share(survey, error.status, invitations_form=form)
    db.session.commit()
    flash(f"{len(codes)} new invitation code{'' if len(codes) == 1 else 's'}. Download the links as CSV below.")
    return _see_other("organize.share", "invitations", slug=slug)


@bp.get("/surveys/<slug>/invitations.csv", endpoint="invitations_csv")
@login_required
def invitations_csv_file(slug: str):
    """Every code with its personal link and whether it was used; streamed, however many there are."""
    survey = _editable(slug)

    def link_for(code: str) -> str:
        return url_for("respond.show", slug=survey.slug, code=code, _external=True)

    body = stream_with_context(invitations_csv(db.session, survey, link_for))
    response = Response(body, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-invitations.csv"'
    return _no_store(response)


@bp.post("/surveys/<slug>/members", endpoint="add_member")
@login_required
def add_member_view(slug: str):
    """Give a user a role on the survey, or change the role of a member."""
    survey = _editable(slug)
    form = AddMemberForm()
    if not form.validate_on_submit():
        return _render_share(survey, 400, member_form=form)
    try:
        membership = add_member(db.session, survey, _me(), form.username.data, form.role.data)
    except SharingError as error:
        db.session.rollback()
        getattr(form, error.field or "username").errors.append(error.message)
        return _render_share(survey, error.status, member_form=form)
    db.session.commit()
    flash(f"{membership.user.username} is now a {ROLE_LABELS[membership.role]} of this survey.")
    return _see_other("organize.share", "people", slug=slug)


@bp.post("/surveys/<slug>/members/remove", endpoint="remove_member")
@login_required
def remove_member_view(slug: str):
    """Take a member's rights away; removing oneself is leaving the survey."""
    survey = _editable(slug)
    form = RemoveMemberForm()
    if not form.validate_on_submit():
        return _render_share(survey, 400, members_error="Choose whom to remove.")
    try:
        membership = remove_member(db.session, survey, _me(), form.user_id.data)
    except SharingError as error:
        db.session.rollback()
        return _render_share(survey, error.status, members_error=error.message)
    name, left = membership.user.username, membership.user_id == current_user.id
    db.session.commit()
    if left:
        flash(f"You left “{survey.title}”.")
        return _see_other("results.index")
    flash(f"{name} no longer has access to this survey.")
    return _see_other("organize.share", "people", slug=slug)


# -- the spec --------------------------------------------------------------------------------------


@bp.get("/surveys/<slug>/spec.json")
@login_required
def export_spec(slug: str):
    """The JSON spec that re-creates the survey's questions and designs (import it, or keep it with the data)."""
    survey = _editable(slug)
    body = json.dumps(survey_to_spec(survey), indent=2, ensure_ascii=False) + "\n"
    response = Response(body, mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-spec.json"'
    return _no_store(response)


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
            try:
                survey = lifecycle.import_draft(db.session, upload.read() if has_file else pasted, _me())
            except SpecError as error:
                db.session.rollback()
                field.errors.append(f"Nothing was imported: {error}.")
            else:
                db.session.commit()
                flash(f"“{survey.title}” was imported as a draft. Review it, then publish it.")
                target = "organize.build" if _endpoint_exists("organize.build") else "organize.share"
                return _see_other(target, slug=survey.slug)
    return render_template("organize/import.html", form=form), 400


# -- the account -----------------------------------------------------------------------------------


@bp.route("/account", methods=["GET", "POST"])
@login_required
def account():
    """Change one's own password (users are created by an administrator with ``flask create-user``)."""
    form = PasswordForm()
    if request.method == "GET":
        return render_template("organize/account.html", form=form)
    if form.validate_on_submit():
        try:
            change_password(_me(), form.current_password.data, form.new_password.data)
        except SharingError as error:
            db.session.rollback()
            getattr(form, error.field or "new_password").errors.append(error.message)
        else:
            db.session.commit()
            flash("Your password was changed.")
            return _see_other("organize.account")
    return render_template("organize/account.html", form=form), 400
