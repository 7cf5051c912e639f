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
    jsonify,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required

from survey.domain.accounts.access import OWNER, survey_for
from survey.domain.accounts.account_links import open_invitations, withdraw_invitation
from survey.domain.accounts.sharing import (
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
from survey.domain.accounts.site import may_invite_accounts
from survey.domain.errors import DomainError, NotFound
from survey.domain.models import Membership, Survey
from survey.domain.responses.codes import (
    CODES_PER_PAGE,
    CODES_PER_PRINT,
    code_rows,
    generate_codes,
    invitation_counts,
    invitations_csv,
    normalize,
    revoke,
    revoke_unused,
    shown,
)
from survey.domain.responses.tallies import submission_count
from survey.domain.results.live import close_if_precise, live_status
from survey.domain.surveys import lifecycle
from survey.domain.surveys.specs import survey_to_spec
from survey.domain.surveys.wording import epsilon_text
from survey.platform.extensions import csrf, db
from survey.privacy.designs import design_name

from ..common import commit_or_refuse, localized, me, say, see_other
from ..mailing import Delivery, Outgoing, deliver, invited_words, prepare_invitation, respondent_url, send_limit
from . import bp
from .manage_forms import (
    AccessForm,
    AddMemberForm,
    AddressForm,
    AutoCloseForm,
    DatesForm,
    ImportForm,
    InvitationsForm,
    PasswordForm,
    RemoveMemberForm,
    RevokeForm,
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


def _page_number() -> int:
    """``?page=`` as a page number from 1 (anything else is the first page)."""
    try:
        return max(1, int(request.args.get("page", "1")))
    except ValueError:
        return 1


def _render_share(
    survey: Survey,
    status: int = 200,
    *,
    lifecycle_error: str = "",
    codes_error: str = "",
    delivery: Delivery | None = None,
    **forms: Any,
):
    """The management page; ``forms`` replaces the blank form of the section a refused post came from."""
    blank: dict[str, Any] = {
        "dates_form": DatesForm(formdata=None, data={"opens_on": survey.opens_on, "closes_on": survey.closes_on}),
        "access_form": AccessForm(formdata=None, data={"access": survey.access}),
        "auto_close_form": AutoCloseForm(formdata=None, data={"auto_close": survey.auto_close}),
        "invitations_form": InvitationsForm(formdata=None),
        "member_form": AddMemberForm(formdata=None),
        "address_form": AddressForm(formdata=None, data={"slug": survey.slug}),
        "members_error": "",
    }
    blank.update(forms)
    counts = invitation_counts(db.session, survey)
    page = _page_number()
    pages = max(1, -(-counts.total // CODES_PER_PAGE))
    return render_template(
        "organize/share.html",
        survey=survey,
        access=survey_access(me(), survey),
        is_owner=survey_access(me(), survey).role == OWNER,
        members=members(survey),
        account_invitations=open_invitations(db.session, survey),
        may_invite_accounts=may_invite_accounts(db.session, me()),
        delivery=delivery,
        role_labels=ROLE_LABELS,
        counts=counts,
        codes=code_rows(db.session, survey, page=min(page, pages)),
        codes_page=min(page, pages),
        codes_pages=pages,
        codes_error=codes_error,
        survey_link=respondent_url("respond.show", slug=survey.slug),
        submissions=submission_count(db.session, survey),
        total_epsilon=epsilon_text(survey.total_epsilon()),
        cap=epsilon_text(survey.epsilon_cap) if survey.epsilon_cap is not None else None,
        lifecycle_error=lifecycle_error,
        live=live_status(db.session, survey) if not survey.is_draft else None,
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
        refused=lambda status, error: _render_share(survey, status, lifecycle_error=localized(error) if error else ""),
    )


def _confirm(
    survey: Survey,
    *,
    title: str,
    action: str,
    button: str,
    points: list[str],
    danger: bool = True,
    fields: dict[str, str] | None = None,
    cancel: str | None = None,
):
    """A confirmation page: what the action will do, and one button (a form post with its CSRF token)
    that does it. It works without JavaScript, and nothing happens until the button is pressed."""
    return render_template(
        "organize/confirm.html",
        survey=survey,
        title=title,
        action=action,
        button=button,
        points=points,
        danger=danger,
        fields=fields or {},
        cancel=cancel or url_for("organize.share", slug=survey.slug, _anchor="state"),
    )


def _owner_only(survey: Survey, what: str):
    """The management page with the reason (403) when the signed-in user does not own ``survey``."""
    if survey_access(me(), survey).role != OWNER:
        return _render_share(survey, 403, lifecycle_error=say("survey.owner_only", what=what))
    return None


@bp.route("/surveys/<slug>/publish", methods=["GET", "POST"])
@login_required
def publish(slug: str):
    """GET: what publishing freezes, question by question, and what still stops it; POST: publish."""
    if request.method == "GET":
        survey = _editable(slug)
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
            problems=[localized(problem) for problem in lifecycle.publish_refusals(survey)],
            total_epsilon=epsilon_text(survey.total_epsilon()),
            cap=epsilon_text(survey.epsilon_cap) if survey.epsilon_cap is not None else None,
            survey_link=respondent_url("respond.show", slug=survey.slug),
        )
    return _transition(
        slug,
        lifecycle.publish,
        "Published: the survey accepts answers, and its questions' designs are now frozen.",
    )


@bp.route("/surveys/<slug>/close", methods=["GET", "POST"])
@login_required
def close(slug: str):
    if request.method == "GET":
        survey = _editable(slug)
        return _confirm(
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
    return _transition(slug, lifecycle.close, "Closed: the survey no longer accepts answers. Reopen it to accept more.")


@bp.post("/surveys/<slug>/reopen")
@login_required
def reopen(slug: str):
    return _transition(
        slug,
        lifecycle.reopen,
        "Reopened: the survey accepts answers again, under the same designs (closing by itself is now off).",
    )


@bp.route("/surveys/<slug>/archive", methods=["GET", "POST"])
@login_required
def archive(slug: str):
    """The owner puts a closed survey out of the lists; its answers and results stay."""
    survey = _editable(slug)
    if request.method == "GET":
        return _owner_only(survey, "archive it") or _confirm(
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
    return _transition(
        slug, lambda s: lifecycle.archive(s, me()), "Archived: the survey is out of the list; find it in the archive."
    )


@bp.post("/surveys/<slug>/unarchive")
@login_required
def unarchive(slug: str):
    return _transition(slug, lambda s: lifecycle.unarchive(s, me()), "Restored from the archive: the survey is closed.")


@bp.route("/surveys/<slug>/delete", methods=["GET", "POST"])
@login_required
def delete_survey(slug: str):
    """The owner deletes a draft (a survey that never accepted an answer), after confirming."""
    survey = _editable(slug)
    if request.method == "GET":
        return _owner_only(survey, "delete it") or _confirm(
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
        refused=lambda status, error: _render_share(survey, status, lifecycle_error=localized(error) if error else ""),
    )


# -- the survey's address --------------------------------------------------------------------------


@bp.post("/surveys/<slug>/address")
@login_required
def address(slug: str):
    """A draft's address (``/s/<slug>``), chosen by its organizers."""
    survey = _editable(slug)
    form = AddressForm()
    return commit_or_refuse(
        lambda: lifecycle.set_slug(db.session, survey, form.slug.data or ""),
        form=form,
        done=lambda _: see_other(
            "organize.share", f"The survey's address is now /s/{survey.slug}.", anchor="address", slug=survey.slug
        ),
        refused=lambda status, _: _render_share(survey, status, address_form=form),
    )


@bp.get("/surveys/<slug>/address/check")
@login_required
def check_address(slug: str):
    """Whether ``?slug=`` could be this survey's address, as JSON, for the check while typing.

    It says only "free" or "taken" (which saving would say anyway), never whose survey holds it or
    whether that one is a draft.
    """
    survey = _editable(slug)
    wanted = (request.args.get("slug") or "").strip().lower()
    problem = lifecycle.slug_problem(db.session, wanted, survey)
    response = jsonify(
        slug=wanted,
        available=problem is None,
        message=say(problem) if problem else f"This address is free: {respondent_url('respond.show', slug=wanted)}",
    )
    return _no_store(response)


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
        refused=lambda status, error: _render_share(survey, status, lifecycle_error=localized(error) if error else ""),
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


@bp.post("/surveys/<slug>/auto-close")
@login_required
def auto_close(slug: str):
    """Turn closing by itself, once precise enough, on or off; turning it on may close the survey now."""
    survey = _editable(slug)
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
        change, form=form, done=done, refused=lambda status, _: _render_share(survey, status, auto_close_form=form)
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


@bp.route("/surveys/<slug>/invitations/revoke", methods=["GET", "POST"])
@login_required
def revoke_code(slug: str):
    """Withdraw one unused code (``code``), after confirming; ``?code=`` on the confirmation page."""
    survey = _editable(slug)
    if request.method == "GET":
        code = normalize(request.args.get("code"))
        return _confirm(
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
        refused=lambda status, error: _render_share(
            survey, status, codes_error=localized(error) if error else "Choose a code to revoke."
        ),
    )


@bp.route("/surveys/<slug>/invitations/revoke-unused", methods=["GET", "POST"])
@login_required
def revoke_unused_codes(slug: str):
    survey = _editable(slug)
    if request.method == "GET":
        unused = invitation_counts(db.session, survey).unused
        return _confirm(
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
        refused=lambda status, error: _render_share(survey, status, codes_error=localized(error) if error else ""),
    )


@bp.get("/surveys/<slug>/invitations/print")
@login_required
def print_codes(slug: str):
    """The unused codes as cards to print and hand out: the survey's address and one code each."""
    survey = _editable(slug)
    counts = invitation_counts(db.session, survey)
    pages = max(1, -(-counts.unused // CODES_PER_PRINT))
    page = min(_page_number(), pages)
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
    return _no_store(response)


@bp.get("/surveys/<slug>/invitations.csv", endpoint="invitations_csv")
@login_required
def invitations_csv_file(slug: str):
    """Every code with its personal link and whether it was used; streamed, however many there are."""
    survey = _editable(slug)

    def link_for(code: str) -> str:
        return respondent_url("respond.show", slug=survey.slug, code=code)

    body = stream_with_context(invitations_csv(db.session, survey, link_for))
    response = Response(body, mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-invitations.csv"'
    return _no_store(response)


@bp.post("/surveys/<slug>/members", endpoint="add_member")
@login_required
def add_member_view(slug: str):
    """Change a team member's role, or invite someone by username, e-mail address or name
    (survey.domain.accounts.sharing.share_with). The answer is the same whether or not an account has that
    name or address (survey.web.mailing): when the inviter may invite people to make accounts, the
    page with the link (to copy, or where it was e-mailed); else a note on the page."""
    survey = _editable(slug)
    form = AddMemberForm()
    actor = me()
    may_make_accounts = may_invite_accounts(db.session, actor)

    def share() -> tuple[Offer, Outgoing | None]:
        offer = share_with(db.session, survey, actor, form.username.data, form.role.data, quota=send_limit())
        return offer, prepare_invitation(offer, actor, may_make_accounts) if offer.invitation else None

    def shared(made: tuple[Offer, Outgoing | None]) -> ResponseReturnValue:
        offer, outgoing = made
        if outgoing is None:
            membership = offer.membership
            assert membership is not None
            return see_other(
                "organize.share",
                f"{membership.user.username} is now a {ROLE_LABELS[membership.role]} of this survey"
                + (" (once they accept)." if membership.pending else "."),
                anchor="people",
                slug=slug,
            )
        delivery = deliver(outgoing)
        if delivery.url is not None:  # a link was made to pass on: say where it went, or show it
            return _render_share(survey, delivery=delivery)
        return see_other("organize.share", invited_words(delivery, offer), anchor="people", slug=slug)

    return commit_or_refuse(
        share,
        form=form,
        done=shared,
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
            survey, status, members_error=localized(error) if error else "Choose an invitation to withdraw."
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
            survey, status, members_error=localized(error) if error else "Choose whom to remove."
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
