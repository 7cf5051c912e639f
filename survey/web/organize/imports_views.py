"""Responses collected elsewhere (paper, telephone, another tool), uploaded on the management page:
checked row by row, imported in one go or not at all (survey.domain.responses.imports). The same
upload as ``flask import-responses`` and ``POST /api/v1/surveys/<slug>/imports``."""

from __future__ import annotations

from flask import current_app, request
from flask_login import login_required

from survey.domain.errors import DomainError
from survey.domain.responses.imports import MAX_BYTES, ImportRefused, ImportResult, format_of, import_responses
from survey.platform import folding
from survey.platform.extensions import csrf, db

from ..common import commit_or_refuse, localized, me, see_other
from . import bp
from .imports_forms import ImportResponsesForm
from .manage_page import editable, render_manage


@bp.post("/surveys/<slug>/imports", endpoint="import_responses")
@csrf.exempt  # checked by the form itself, after the larger size limit below is in place
@login_required
def import_responses_view(slug: str):
    """The app's request limit fits a submission; an upload may be larger, so this view raises it for
    itself before anything reads the body (as the spec import does)."""
    request.max_content_length = MAX_BYTES
    request.max_form_memory_size = MAX_BYTES
    survey = editable(slug)
    form = ImportResponsesForm()

    def change() -> ImportResult:
        upload = form.file.data
        if not getattr(upload, "filename", ""):
            raise DomainError("import.empty")
        data = upload.read()
        return import_responses(
            db.session, survey, data, format_of(upload.filename), user=me(), dry_run=bool(form.dry_run.data)
        )

    def done(result: ImportResult):
        if result.import_id is not None and not (result.already or result.dry_run):
            folding.fold_after_import(current_app._get_current_object())  # type: ignore[attr-defined]
        if result.already:
            said = f"These {result.rows} rows were imported before: nothing was added."
        elif result.dry_run:
            said = f"All {result.rows} rows are valid. Nothing was imported (only checked)."
        else:
            said = f"{result.rows} responses imported. They count in every estimate from now on."
        return see_other("organize.share", said, anchor="imports", slug=slug)

    def refused(status: int, error: DomainError | None):
        problems = error.problems if isinstance(error, ImportRefused) else []
        text = localized(error) if error is not None else "Choose a file to import."
        return render_manage(survey, status, imports_error=text, imports_problems=problems, imports_form=form)

    return commit_or_refuse(change, form=form, done=done, refused=refused)
