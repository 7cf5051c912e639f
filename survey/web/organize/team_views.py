"""The survey's team: share it (a role offered to an account, or a role offer's link to pass on),
withdraw a role offer, accept or decline one, remove a member or leave.

The endpoint names keep the word "invitation" (``withdraw_account_invitation``, ``accept_invitation``,
``decline_invitation``), as the pages and tests that name them do; in the code, the thing is a role offer.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import Response, abort
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required

from survey.domain.accounts.account_links import withdraw_role_offer
from survey.domain.accounts.sharing import (
    ROLE_LABELS,
    Offer,
    accept_role_offer,
    decline_role_offer,
    remove_member,
    share_with,
)
from survey.domain.accounts.site import may_invite_accounts
from survey.domain.errors import NotFound
from survey.domain.models import Membership
from survey.platform.extensions import db

from ..common import commit_or_refuse, localized, me, see_other
from ..mailing import Outgoing, deliver, invited_words, prepare_role_offer, send_limit
from . import bp
from .manage_page import editable, render_manage
from .team_forms import AddMemberForm, RemoveMemberForm, WithdrawOfferForm


@bp.post("/surveys/<slug>/members", endpoint="add_member")
@login_required
def add_member_view(slug: str):
    """Change a team member's role, or invite someone by username, e-mail address or name
    (survey.domain.accounts.sharing.share_with). The answer is the same whether or not an account has that
    name or address (survey.web.mailing): when the inviter may invite people to make accounts, the
    page with the link (to copy, or where it was e-mailed); else a note on the page."""
    survey = editable(slug)
    form = AddMemberForm()
    actor = me()
    may_make_accounts = may_invite_accounts(db.session, actor)

    def share() -> tuple[Offer, Outgoing | None]:
        offer = share_with(db.session, survey, actor, form.username.data, form.role.data, quota=send_limit())
        return offer, prepare_role_offer(offer, actor, may_make_accounts) if offer.link else None

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
            return render_manage(survey, delivery=delivery)
        return see_other("organize.share", invited_words(delivery, offer), anchor="people", slug=slug)

    return commit_or_refuse(
        share,
        form=form,
        done=shared,
        refused=lambda status, _: render_manage(survey, status, member_form=form),
    )


@bp.post("/surveys/<slug>/account-invitations/withdraw", endpoint="withdraw_account_invitation")
@login_required
def withdraw_offer(slug: str):
    """Withdraw a role offer's link (which may make an account): its link stops working."""
    survey = editable(slug)
    form = WithdrawOfferForm()
    return commit_or_refuse(
        lambda: withdraw_role_offer(db.session, survey, form.link_id.data),
        form=form,
        done=lambda link: see_other(
            "organize.share",
            f"The invitation of {link.addressee} is withdrawn: its link no longer works.",
            anchor="people",
            slug=slug,
        ),
        refused=lambda status, error: render_manage(
            survey, status, members_error=localized(error) if error else "Choose an invitation to withdraw."
        ),
    )


def _answer_offer(slug: str, answer: Callable[..., Membership], done: str):
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
def accept_offer_view(slug: str):
    """The invited user takes up the role offered to them (a POST with a CSRF token, from their start page)."""
    return _answer_offer(slug, accept_role_offer, "You now work on “{title}”.")


@bp.post("/surveys/<slug>/decline", endpoint="decline_invitation")
@login_required
def decline_offer_view(slug: str):
    """The invited user turns the role down; nothing of the survey stays with them."""
    return _answer_offer(slug, decline_role_offer, "You declined the invitation to “{title}”.")


@bp.post("/surveys/<slug>/members/remove", endpoint="remove_member")
@login_required
def remove_member_view(slug: str):
    """Take a member's rights away; removing oneself is leaving the survey."""
    survey = editable(slug)
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
        refused=lambda status, error: render_manage(
            survey, status, members_error=localized(error) if error else "Choose whom to remove."
        ),
    )
