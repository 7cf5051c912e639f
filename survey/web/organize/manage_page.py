"""The management page of one survey, which the lifecycle, codes and team views share.

One page holds every section (state, address, dates, access, respondent codes, people, spec); a
view of any of them answers a refused post with this page again, the refused section's form in place
of its blank one. What a section shows is worked out only when the template reaches it
(:class:`Later`): a form for an input the page does not show (the address of a published survey,
closing by itself without a randomized question) is never built, and the list of codes is not read
when there are none.

Every survey-specific view starts with :func:`editable`, which answers 404 to anyone who is not the
owner or a co-organizer (a researcher included): the management page of a survey one may not manage
does not exist, as far as one can tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from flask import Response, render_template, request, url_for
from flask_login import current_user

from survey.domain.accounts.access import OWNER, survey_for
from survey.domain.accounts.account_links import open_role_offers
from survey.domain.accounts.sharing import ROLE_LABELS, members, survey_access
from survey.domain.accounts.site import may_invite_accounts
from survey.domain.models import Survey
from survey.domain.responses.codes import CODES_PER_PAGE, code_counts, code_rows
from survey.domain.responses.tallies import submission_count
from survey.domain.results.live import live_status
from survey.domain.surveys.wording import epsilon_text
from survey.platform.extensions import db

from ..common import commit_or_refuse, localized, me, say, see_other
from ..mailing import Delivery, respondent_url
from .codes_forms import CodesForm
from .imports_forms import ImportResponsesForm
from .lifecycle_forms import AccessForm, AddressForm, AutoCloseForm, DatesForm
from .team_forms import AddMemberForm

T = TypeVar("T")


class Later(Generic[T]):
    """A value of the page made the first time the template reads it (an attribute, a loop, a test
    of truth or a length), then kept: a section the page does not show costs nothing."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make: Callable[[], T] | None = make
        self._value: T | None = None

    @property
    def value(self) -> T:
        if self._make is not None:
            self._value, self._make = self._make(), None
        return self._value  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.value, name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.value)  # type: ignore[call-overload]

    def __len__(self) -> int:
        return len(self.value)  # type: ignore[arg-type]

    def __bool__(self) -> bool:
        return bool(self.value)


def editable(slug: str) -> Survey:
    """The survey if the signed-in user may manage it; 404 otherwise, as if it did not exist."""
    return survey_for(db.session, current_user, slug, "edit")


def no_store(response: Response) -> Response:
    """Codes and specs are for the organizers' eyes: no browser or proxy cache should keep them."""
    response.headers["Cache-Control"] = "private, no-store"
    return response


def page_number() -> int:
    """``?page=`` as a page number from 1 (anything else is the first page)."""
    try:
        return max(1, int(request.args.get("page", "1")))
    except ValueError:
        return 1


def render_manage(
    survey: Survey,
    status: int = 200,
    *,
    lifecycle_error: str = "",
    codes_error: str = "",
    imports_error: str = "",
    imports_problems: list[Any] | None = None,
    delivery: Delivery | None = None,
    **forms: Any,
):
    """The management page; ``forms`` replaces the blank form of the section a refused post came from."""
    blank: dict[str, Any] = {
        "dates_form": Later(
            lambda: DatesForm(formdata=None, data={"opens_on": survey.opens_on, "closes_on": survey.closes_on})
        ),
        "access_form": Later(lambda: AccessForm(formdata=None, data={"access": survey.access})),
        "auto_close_form": Later(lambda: AutoCloseForm(formdata=None, data={"auto_close": survey.auto_close})),
        "codes_form": Later(lambda: CodesForm(formdata=None)),
        "imports_form": Later(lambda: ImportResponsesForm(formdata=None)),
        "member_form": Later(lambda: AddMemberForm(formdata=None)),
        "address_form": Later(lambda: AddressForm(formdata=None, data={"slug": survey.slug})),
        "members_error": "",
    }
    blank.update(forms)
    access = survey_access(me(), survey)
    counts = code_counts(db.session, survey)
    pages = max(1, -(-counts.total // CODES_PER_PAGE))
    page = min(page_number(), pages)
    return render_template(
        "organize/share.html",
        survey=survey,
        access=access,
        is_owner=access.role == OWNER,
        members=Later(lambda: members(survey)),
        role_offers=Later(lambda: open_role_offers(db.session, survey)),
        may_invite_accounts=Later(lambda: may_invite_accounts(db.session, me())),
        delivery=delivery,
        role_labels=ROLE_LABELS,
        counts=counts,
        codes=Later(lambda: code_rows(db.session, survey, page=page)),
        codes_page=page,
        codes_pages=pages,
        codes_error=codes_error,
        imports_error=imports_error,
        imports_problems=imports_problems or [],
        survey_link=respondent_url("respond.show", slug=survey.slug),
        submissions=submission_count(db.session, survey),
        total_epsilon=epsilon_text(survey.total_epsilon()),
        cap=epsilon_text(survey.epsilon_cap) if survey.epsilon_cap is not None else None,
        lifecycle_error=lifecycle_error,
        live=Later(lambda: live_status(db.session, survey) if not survey.is_draft else None),
        **blank,
    ), status


def transition(slug: str, change: Callable[[Survey], None], done: str):
    """Change the survey's state (publish, close, reopen, archive, restore) and say so on its page."""
    survey = editable(slug)
    return commit_or_refuse(
        lambda: change(survey),
        done=lambda _: see_other("organize.share", done, anchor="state", slug=slug),
        refused=lambda status, error: render_manage(survey, status, lifecycle_error=localized(error) if error else ""),
    )


def confirm(
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


def owner_only(survey: Survey, what: str):
    """The management page with the reason (403) when the signed-in user does not own ``survey``."""
    if survey_access(me(), survey).role != OWNER:
        return render_manage(survey, 403, lifecycle_error=say("survey.owner_only", what=what))
    return None
