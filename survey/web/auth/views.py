from __future__ import annotations

from urllib.parse import urlsplit

from flask import current_app, flash, make_response, redirect, render_template, request, url_for
from flask_login import current_user, login_required, login_user, logout_user

from survey.domain.accounts.account_links import (
    live_link,
    make_account_for_offer,
    may_make_accounts,
    set_password_with_link,
    suggested_username,
    take_role_offer,
)
from survey.domain.accounts.sharing import ROLE_LABELS
from survey.domain.accounts.sign_in import authenticate, end_session, start_session
from survey.domain.errors import DomainError, Forbidden
from survey.domain.models import AccountLink, User
from survey.platform import mail
from survey.platform.extensions import db

from ..common import localized, see_other
from ..mailing import forgotten_password
from . import bp
from .forms import ForgotPasswordForm, LoginForm, LogoutForm, NewAccountForm, NewPasswordForm, TakeRoleForm


def _safe_next(target: str | None) -> str:
    """Only same-site paths: an open redirect after sign-in would be a phishing aid."""
    if target and urlsplit(target).netloc == "" and target.startswith("/") and not target.startswith("//"):
        return target
    return url_for("results.index")


@bp.route("/auth/login", methods=["GET", "POST"])
def login():
    """Sign-in; POSTs are rate-limited per address (LOGIN_RATE_LIMIT, see survey.platform.limits). A wrong
    username and a wrong password take the same time and get the same answer."""
    if current_user.is_authenticated:
        return redirect(url_for("results.index"))
    form = LoginForm()
    status = 200
    if form.validate_on_submit():
        user = authenticate(db.session, form.username.data, form.password.data)
        if user is not None and user.disabled:
            form.password.errors.append("This account is disabled. Ask an administrator if you need it again.")
            status = 403
        elif user is not None:
            start_session(db.session, user)
            db.session.commit()
            login_user(user)
            return redirect(_safe_next(request.args.get("next")))
        else:
            form.password.errors.append("Wrong username or password.")
            status = 401
    elif request.method == "POST":
        status = 400
    return render_template("auth/login.html", form=form), status


#: What "Forgot password?" answers, whoever asked: whether an account has the name or address is
#: not told, by the words or by the time (the link is made and mailed after the response).
FORGOT_ANSWER = (
    "If an account with that username or e-mail address has an address to write to, a link to choose"
    " a new password is on its way there. It works once, for 1 hour. Nothing arrived? Check the spam"
    " folder, ask again in a few minutes, or ask an administrator."
)


@bp.route("/auth/forgot", methods=["GET", "POST"])
def forgot_password():
    """ "Forgot password?": a reset link mailed to the address on the account named (its username or
    address), made and sent after the response (survey.web.mailing.forgotten_password), so that the
    answer is the same, in words and in time, whether or not there is such an account. POSTs count
    against LOGIN_RATE_LIMIT with sign-in attempts (survey.platform.limits). Without a mail server
    or a public address (production) the page says to ask an administrator, for every account."""
    if current_user.is_authenticated:
        return redirect(url_for("auth.account"))
    unavailable = not mail.configured(current_app.config) or (
        not current_app.config.get("PUBLIC_URL") and current_app.config.get("PUBLIC_URL_REQUIRED")
    )
    form = ForgotPasswordForm()
    if not unavailable and form.validate_on_submit():
        forgotten_password(form.who.data.strip())
        return see_other("auth.login", FORGOT_ANSWER)
    status = 400 if request.method == "POST" and not unavailable else 200
    return render_template("auth/forgot.html", form=form, unavailable=unavailable), status


@bp.route("/auth/logout", methods=["POST"])
@login_required
def logout():
    """Ends this sign-in session on the server too: a saved copy of its cookie opens nothing any more."""
    form = LogoutForm()
    if form.validate_on_submit():
        end_session(db.session, current_user.get_id())
        db.session.commit()
        logout_user()
        flash("You are signed out.")
    return redirect(url_for("results.index"))


def _link_page(account_link: AccountLink | None, form=None, status: int = 200, *, refusal: str = ""):
    """The page of a role offer or password link (or of a dead one); never kept by a cache."""
    can_make = account_link is not None and account_link.purpose == "role_offer"
    can_make = can_make and may_make_accounts(db.session, account_link)  # type: ignore[arg-type]
    response = make_response(
        render_template(
            "auth/link.html",
            link=account_link,
            form=form,
            role_labels=ROLE_LABELS,
            can_make_account=can_make,
            refusal=refusal,
            sign_in=url_for("auth.login", next=request.full_path.rstrip("?")),
        ),
        status,
    )
    response.headers["Cache-Control"] = "private, no-store"
    return response


@bp.route("/auth/link", methods=["GET", "POST"])
def link():
    """A role offer (take the role with the account one is signed in with, or make an account and
    then accept it) or a link to set a password. Every request here, GET included, counts against
    TOKEN_RATE_LIMIT; a dead link (unknown, used, expired, withdrawn, its user disabled, its maker
    no longer allowed to make it) gets one answer, 404. Making an account signs out whoever is
    signed in on this browser, and signs its new user in.

    The token travels in the query string (``/auth/link?token=...``), which no log keeps
    (survey.platform.logs, the gunicorn access log format); the forms post back to the same URL."""
    token = request.args.get("token", "")
    account_link = live_link(db.session, token)
    if account_link is None:
        return _link_page(None, status=404)
    offer = account_link.purpose == "role_offer"
    if offer:
        form = NewAccountForm(data={"username": suggested_username(account_link.addressee)})
    else:
        form = NewPasswordForm()
    if request.method == "GET":
        return _link_page(account_link, form)
    if offer and request.form.get("take"):
        return _take(account_link, token, form)
    if not form.validate():
        return _link_page(account_link, form, 400)
    try:
        if offer:
            user = make_account_for_offer(db.session, token, form.username.data, form.password.data)
        else:
            user = set_password_with_link(db.session, token, form.password.data)
        was_signed_in = current_user.is_authenticated
        if was_signed_in:
            end_session(db.session, current_user.get_id())
        start_session(db.session, user)
    except DomainError as error:
        db.session.rollback()
        if error.status == 404:  # used by another request meanwhile
            return _link_page(None, status=404)
        if isinstance(error, Forbidden):  # the inviter may no longer invite people to make accounts
            return _link_page(account_link, form, error.status, refusal=localized(error))
        form.add_domain_error(error)
        return _link_page(account_link, form, error.status)
    db.session.commit()
    if was_signed_in:
        logout_user()
    login_user(user)
    return see_other("results.index", _welcome(account_link, user), anchor="invitations" if offer else None)


def _take(account_link: AccountLink, token: str, form):
    """The signed-in user takes up the role with their account (a CSRF-checked post)."""
    if not current_user.is_authenticated or not TakeRoleForm().validate_on_submit():
        return _link_page(account_link, form, 400, refusal="Sign in first, then take the role with your account.")
    try:
        membership = take_role_offer(db.session, token, current_user._get_current_object())  # type: ignore[attr-defined]
    except DomainError as error:
        db.session.rollback()
        if error.status == 404:
            return _link_page(None, status=404)
        return _link_page(account_link, form, error.status, refusal=localized(error))
    title = membership.survey.title
    db.session.commit()
    return see_other("results.index", f"You now work on “{title}”.")


def _welcome(account_link: AccountLink, user: User) -> str:
    if account_link.purpose == "role_offer":
        return f"Welcome, {user.username}: your account is ready. Accept the role offered to you below."
    if account_link.purpose == "setup":
        return f"Welcome, {user.username}: your password is set, and you are signed in."
    return "Your password was changed, and you were signed out everywhere else."
