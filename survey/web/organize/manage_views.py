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

from flask import (
    Response,
    abort,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required

from survey.domain import lifecycle
from survey.domain.access import survey_for
from survey.domain.errors import DomainError, NotFound
from survey.domain.invitations import generate_codes, invitation_counts, invitations_csv
from survey.domain.links import open_invitations, withdraw_invitation
from survey.domain.models import Membership, Survey
from survey.domain.sharing import (
    ROLE_LABELS,
    Offer,
    accept_invitation,
    change_password,
    decline_invitation,
    members,
    remove_member,
    share_with,
    survey_access,
)
from survey.domain.specs import survey_to_spec
from survey.domain.tallies import submission_count
from survey.domain.wording import epsilon_text
from survey.platform.extensions import csrf, db

from ..common import commit_or_refuse, me, see_other
from ..mailing import Delivery, deliver_invitation, tell_about_offer
from . import bp
from .manage_forms import (
    AccessForm,
    AddMemberForm,
    DatesForm,
    ImportForm,
    InvitationsForm,
    PasswordForm,
    RemoveMemberForm,
    WithdrawInvitationForm,
)

#: A spec is far larger than a submission (the app-wide request limit is sized for those).
IMPORT_MAX_BYTES = 1024 * 1024


def _editable(slug: str) -> Survey:
    """The survey if the signed-in user may manage it; 404 otherwise, as if it did not exist."""
    return survey_for(db.session, current_user, slug, "edit")


def _no_store(response: Response) -> Response:
    """Codes and specs are for the organizers' eyes: no browser or proxy cache should keep them."""
    response.headers["Cache-Control"] = "private, no-store"
    return response


# -- the management page ---------------------------------------------------------------------------


def _render_share(
    survey: Survey, status: int = 200, *, lifecycle_error: str = "", delivery: Delivery | None = None, **forms: Any
):
    """The management page; ``forms`` replaces the blank form of the section a refused post came from."""
    blank: dict[str, Any] = {
        "dates_form": DatesForm(formdata=None, data={"opens_on": survey.opens_on, "closes_on": survey.closes_on}),
        "access_form": AccessForm(formdata=None, data={"access": survey.access}),
        "invitations_form": InvitationsForm(formdata=None),
        "member_form": AddMemberForm(formdata=None),
        "members_error": "",
    }
    blank.update(forms)
    return render_template(
        "organize/share.html",
        survey=survey,
        access=survey_access(me(), survey),
        members=members(survey),
        account_invitations=open_invitations(db.session, survey),
        delivery=delivery,
        role_labels=ROLE_LABELS,
        counts=invitation_counts(db.session, survey),
        submissions=submission_count(db.session, survey),
        total_epsilon=epsilon_text(survey.total_epsilon()),
        cap=epsilon_text(survey.epsilon_cap) if survey.epsilon_cap is not None else None,
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
    return commit_or_refuse(
        lambda: change(survey),
        done=lambda _: see_other("organize.share", done, anchor="state", slug=slug),
        refused=lambda status, error: _render_share(survey, status, lifecycle_error=error.message if error else ""),
    )


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
    return commit_or_refuse(  # only a survey stored before today's rules could be refused here
        lambda: lifecycle.duplicate(db.session, survey, me(), keep_team=True),
        done=lambda copy: see_other(
            "organize.build",
            f"“{copy.title}” is a new draft with the same questions and designs: change it, then publish it.",
            slug=copy.slug,
        ),
        refused=lambda status, error: _render_share(survey, status, lifecycle_error=error.message if error else ""),
    )


@bp.post("/surveys/<slug>/dates")
@login_required
def dates(slug: str):
    survey = _editable(slug)
    form = DatesForm()
    return commit_or_refuse(
        lambda: lifecycle.set_dates(survey, form.opens_on.data, form.closes_on.data),
        form=form,
        done=lambda _: see_other("organize.share", "Dates saved.", anchor="dates", slug=slug),
        refused=lambda status, _: _render_share(survey, status, dates_form=form),
    )


@bp.post("/surveys/<slug>/access")
@login_required
def access(slug: str):
    survey = _editable(slug)
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
        refused=lambda status, _: _render_share(survey, status, access_form=form),
    )


@bp.post("/surveys/<slug>/invitations")
@login_required
def invitations(slug: str):
    survey = _editable(slug)
    form = InvitationsForm()
    return commit_or_refuse(
        lambda: generate_codes(db.session, survey, form.count.data),
        form=form,
        done=lambda codes: see_other(
            "organize.share",
            f"{len(codes)} new invitation code{'' if len(codes) == 1 else 's'}. Download the links as CSV below.",
            anchor="invitations",
            slug=slug,
        ),
        refused=lambda status, _: _render_share(survey, status, invitations_form=form),
    )


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
    """Offer a user a role on the survey (or change a member's role), found by username or e-mail
    address; or invite someone without an account by e-mail address or name. An invitation's link
    is e-mailed when a mail server is configured, or else shown on this answer (only) to copy."""
    survey = _editable(slug)
    form = AddMemberForm()
    actor = me()

    def added(offer: Offer) -> ResponseReturnValue:
        if offer.invitation is not None and offer.token is not None:
            delivery = deliver_invitation(offer.invitation, offer.token, actor)
            return _render_share(survey, delivery=delivery)
        membership = offer.membership
        assert membership is not None
        who, role = membership.user.username, ROLE_LABELS[membership.role]
        if membership.pending:
            mailed = tell_about_offer(membership.user, actor, survey.title, membership.role)
            message = (
                f"{who} is invited as a {role} of this survey; "
                "the role takes effect when they accept it on their start page."
                + (f" They were told by e-mail ({mailed})." if mailed else "")
            )
        else:
            message = f"{who} is now a {role} of this survey."
        return see_other("organize.share", message, anchor="people", slug=slug)

    return commit_or_refuse(
        lambda: share_with(db.session, survey, actor, form.username.data, form.role.data),
        form=form,
        done=added,
        refused=lambda status, _: _render_share(survey, status, member_form=form),
    )


@bp.post("/surveys/<slug>/account-invitations/withdraw", endpoint="withdraw_account_invitation")
@login_required
def withdraw_account_invitation(slug: str):
    """Withdraw an invitation to make an account: its link stops working."""
    survey = _editable(slug)
    form = WithdrawInvitationForm()
    return commit_or_refuse(
        lambda: withdraw_invitation(db.session, survey, form.link_id.data),
        form=form,
        done=lambda link: see_other(
            "organize.share",
            f"The invitation of {link.addressee} is withdrawn: its link no longer works.",
            anchor="people",
            slug=slug,
        ),
        refused=lambda status, error: _render_share(
            survey, status, members_error=error.message if error else "Choose an invitation to withdraw."
        ),
    )


def _answer_invitation(slug: str, answer: Callable[..., Membership], done: str):
    """Accept or decline the signed-in user's pending role on ``slug``; 404 if there is none."""
    try:
        membership = answer(db.session, me(), slug)
    except NotFound:
        db.session.rollback()
        abort(404)
    title = membership.survey.title
    db.session.commit()
    return see_other("results.index", done.format(title=title))


@bp.post("/surveys/<slug>/accept", endpoint="accept_invitation")
@login_required
def accept_invitation_view(slug: str):
    """The invited user takes up the role offered to them (a POST with a CSRF token, from their start page)."""
    return _answer_invitation(slug, accept_invitation, "You now work on “{title}”.")


@bp.post("/surveys/<slug>/decline", endpoint="decline_invitation")
@login_required
def decline_invitation_view(slug: str):
    """The invited user turns the role down; nothing of the survey stays with them."""
    return _answer_invitation(slug, decline_invitation, "You declined the invitation to “{title}”.")


@bp.post("/surveys/<slug>/members/remove", endpoint="remove_member")
@login_required
def remove_member_view(slug: str):
    """Take a member's rights away; removing oneself is leaving the survey."""
    survey = _editable(slug)
    form = RemoveMemberForm()

    def removed(who: tuple[str, bool]) -> Response:
        name, left = who
        if left:
            return see_other("results.index", f"You left “{survey.title}”.")
        return see_other("organize.share", f"{name} no longer has access to this survey.", anchor="people", slug=slug)

    def remove() -> tuple[str, bool]:
        membership = remove_member(db.session, survey, me(), form.user_id.data)
        return membership.user.username, membership.user_id == current_user.id

    return commit_or_refuse(
        remove,
        form=form,
        done=removed,
        refused=lambda status, error: _render_share(
            survey, status, members_error=error.message if error else "Choose whom to remove."
        ),
    )


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


# -- the account -----------------------------------------------------------------------------------


@bp.route("/account", methods=["GET", "POST"])
@login_required
def account():
    """Change one's own password."""
    form = PasswordForm()
    if request.method == "GET":
        return render_template("organize/account.html", form=form)
    return commit_or_refuse(
        lambda: change_password(
            db.session, me(), form.current_password.data, form.new_password.data, keep_token=current_user.get_id()
        ),
        form=form,
        done=lambda _: see_other(
            "organize.account", "Your password was changed, and you were signed out everywhere else."
        ),
        refused=lambda status, _: (render_template("organize/account.html", form=form), status),
    )
