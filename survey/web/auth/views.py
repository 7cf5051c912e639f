from __future__ import annotations

from urllib.parse import urlsplit

from flask import flash, redirect, render_template, request, url_for
from flask_login import current_user, login_required, login_user, logout_user

from survey.domain.accounts import authenticate, end_session, start_session
from survey.platform.extensions import db

from . import bp
from .forms import LoginForm, LogoutForm


def _safe_next(target: str | None) -> str:
    """Only same-site paths: an open redirect after sign-in would be a phishing aid."""
    if target and urlsplit(target).netloc == "" and target.startswith("/") and not target.startswith("//"):
        return target
    return url_for("results.index")


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Sign-in; POSTs are rate-limited per address (LOGIN_RATE_LIMIT, see survey.platform.limits). A wrong
    username and a wrong password take the same time and get the same answer."""
    if current_user.is_authenticated:
        return redirect(url_for("results.index"))
    form = LoginForm()
    status = 200
    if form.validate_on_submit():
        user = authenticate(db.session, form.username.data, form.password.data)
        if user is not None:
            start_session(db.session, user)
            db.session.commit()
            login_user(user)
            return redirect(_safe_next(request.args.get("next")))
        form.password.errors.append("Wrong username or password.")
        status = 401
    elif request.method == "POST":
        status = 400
    return render_template("auth/login.html", form=form), status


@bp.route("/logout", methods=["POST"])
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
