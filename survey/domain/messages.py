"""The message catalog: every error the domain (and the web layer) raises, by its stable code.

Each entry is the HTTP status the error is answered with and the English sentence, a template whose
named placeholders (``str.format`` syntax: ``{key!r}``, ``{low:,}``) are filled from the error's
``params``. The code is what a client, a test or a translation keys on; the words may change, the
code does not. docs/errors.md is this table in prose (``make errors-doc`` writes it; a test checks
it is current), and each template is marked with :func:`N_` so that Babel's extractor puts it in
``messages.pot`` (``make messages``). The web layer translates a template with ``gettext`` before
filling it (:func:`survey.web.common.localized`); the domain itself only ever fills the English.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any


def N_(template: str) -> str:
    """Mark ``template`` for extraction into the translation catalog, and return it unchanged."""
    return template


@dataclass(frozen=True)
class Message:
    """The status an error is answered with, and its English template."""

    status: int
    template: str


MESSAGES: dict[str, Message] = {
    # -- account_link --
    "account_link.accounts_by_administrators": Message(
        403,
        N_(
            "Accounts on this site are made by its administrators. If you have an account, sign in and "
            "open this link again to accept the role; if not, ask whoever invited you to ask an "
            "administrator for one."
        ),
    ),
    "account_link.dead": Message(
        404,
        N_(
            "This link does not work (any more): links work once, and only for a while. Ask whoever sent "
            "it for a new one."
        ),
    ),
    # -- addressee --
    "addressee.malformed": Message(400, N_("Give a name of up to {most} characters, with letters or digits.")),
    "addressee.required": Message(400, N_("Give a username, an e-mail address or a name.")),
    # -- analysis --
    "analysis.category_unknown": Message(400, N_("category must be an option code of {key!r} ({codes})")),
    "analysis.key_required": Message(400, N_("give the key of a question as {field!r}")),
    "analysis.no_answers": Message(409, N_("nobody has answered {key!r} yet: there is nothing to compare")),
    "analysis.unknown_question": Message(400, N_("this survey has no question {key!r}")),
    # -- answer --
    "answer.not_option_code": Message(400, N_("question {key!r}: the answer must be an option code, not {value!r}")),
    "answer.number_not_whole": Message(
        400,
        N_("question {key!r}: the answer must be a whole number from {low:,} to {high:,}, got {value!r}"),
    ),
    "answer.number_out_of_range": Message(
        400,
        N_("question {key!r}: the answer must be a whole number from {low:,} to {high:,}, got {value:,}"),
    ),
    "answer.option_code_not_whole": Message(
        400,
        N_("question {key!r}: the answer must be an option code 0 to {highest}, got {value!r}"),
    ),
    "answer.option_code_out_of_range": Message(
        400,
        N_("question {key!r}: {value} is not one of its option codes 0 to {highest}"),
    ),
    "answer.report_not_whole": Message(
        400, N_("question {key!r}: the answer must be the code of a randomized report (a whole number), not {value!r}")
    ),
    "answer.report_out_of_range": Message(
        400,
        N_(
            "question {key!r}: {value!r} is not a report this question's randomization can send "
            "(codes {low:,} to {high:,})"
        ),
    ),
    "answer.required": Message(400, N_("question {key!r} is required: please answer it")),
    "answer.arm_missing": Message(
        400,
        N_("split ballot {group!r} is required: please answer the one of its questions ({keys}) your page showed"),
    ),
    "answer.several_arms": Message(
        400,
        N_(
            "questions {key!r} and {other!r} are arms of the split ballot {group!r}: a respondent answers "
            "one of them, not both"
        ),
    ),
    "answer.decline_not_allowed": Message(
        400, N_("question {key!r} cannot be declined: please answer it, or leave it out if it is optional")
    ),
    # -- api --
    "api.unauthenticated": Message(
        401, N_("Send a personal API token (Authorization: Bearer rrs_...), or sign in, to read this.")
    ),
    # -- association --
    "association.too_large": Message(
        422,
        N_(
            "{key!r} and {other!r} have {options} and {other_options} options: their association is a "
            "table of {cells:,} cells, and this site estimates tables of at most {most} (the cost of "
            "each cell's interval grows with the cube of the cells). Compare {key!r} by a question asked "
            "directly or by week instead, or download the responses and estimate the table with "
            "survey.privacy.association in a notebook"
        ),
    ),
    # -- auth --
    "auth.planning_sign_in": Message(401, N_("Sign in to see the planning figures.")),
    "auth.preview_sign_in": Message(401, N_("Sign in to use the privacy preview.")),
    "auth.results_sign_in": Message(401, N_("Sign in to see results.")),
    # -- code --
    "code.count_out_of_range": Message(400, N_("ask for 1 to {most} codes at a time")),
    "code.missing": Message(
        403,
        N_(
            "This survey is by invitation only: open it with the link from your invitation, or type the "
            "code printed on it."
        ),
    ),
    "code.not_found": Message(404, N_("This survey has no such invitation code.")),
    "code.other_survey": Message(403, N_("This invitation code is for a different survey.")),
    "code.revoked": Message(
        403,
        N_(
            "This invitation code was withdrawn by the survey's organizers and admits no answers. Ask "
            "whoever invited you for a new one."
        ),
    ),
    "code.revoked_already": Message(409, N_("The code {code} was revoked already.")),
    "code.unknown": Message(
        403,
        N_(
            "This invitation code is not known. Check that the link was copied whole, or that the code "
            "was typed as printed."
        ),
    ),
    "code.used": Message(403, N_("This invitation code has already been used: each code admits one set of answers.")),
    "code.used_not_revocable": Message(
        409,
        N_(
            "The code {code} has been used, so it admits nothing more; a used code cannot be revoked "
            "(the answers it admitted stay, and nothing links them to it)."
        ),
    ),
    # -- comparison --
    "comparison.no_answers": Message(409, N_("nobody has answered both {key!r} and {other!r} yet")),
    "comparison.not_randomized": Message(400, N_("{key!r} is asked directly: choose a randomized question to compare")),
    "comparison.number_by_direct": Message(
        400, N_("{key!r} is not a question with options asked directly: a number's mean is compared by one")
    ),
    "comparison.same_question": Message(400, N_("choose a different question to compare with")),
    "comparison.too_many_groups": Message(
        400,
        N_(
            "{key!r} is a {kind} question: it makes too many groups to compare; use it as a covariate in "
            "a regression, where it enters as a number"
        ),
    ),
    # -- design --
    "design.invalid": Message(400, N_("{reason}")),
    # -- email --
    "email.invalid": Message(400, N_("This is not an e-mail address (like name@example.org).")),
    # -- import --
    "import.column_twice": Message(400, N_("the column {column!r} is given twice")),
    "import.csv_invalid": Message(400, N_("the file is not valid CSV: {reason}")),
    "import.date_in_future": Message(400, N_("the day {value} is after today")),
    "import.date_invalid": Message(400, N_("give the day as YYYY-MM-DD (like 2026-03-31), not {value!r}")),
    "import.date_missing": Message(400, N_("every row needs its day, in a column named submitted_on")),
    "import.draft": Message(409, N_("Open the survey before importing responses: a draft's design can still change.")),
    "import.empty": Message(400, N_("the file holds no rows")),
    "import.format_unknown": Message(400, N_("upload a file in one of these formats: {formats}")),
    "import.json_not_list": Message(400, N_("the JSON file must be a list of objects, one per response")),
    "import.not_organizer": Message(403, N_("Only the survey's owner and organizers may import responses.")),
    "import.report_off_grid": Message(
        400,
        N_("question {key!r}: {value!r} is not a report this question's randomization can send"),
    ),
    "import.row_length": Message(400, N_("row {row} has {cells} cells where the header has {columns}")),
    "import.rows_invalid": Message(
        400,
        N_("nothing was imported: {count} problem(s) in the rows, the first: {first}"),
    ),
    "import.too_many_rows": Message(400, N_("upload at most {most:,} rows at a time")),
    "import.unknown_column": Message(
        400,
        N_("this survey has no question {column!r} (columns are the exports' variable names or question keys)"),
    ),
    # -- json --
    "json.duplicate_key": Message(
        400,
        N_("the key {key!r} appears twice in one object; which one is meant is unclear"),
    ),
    "json.invalid": Message(400, N_("{subject} is not valid JSON: {msg} at line {lineno}, column {colno}")),
    "json.not_utf8": Message(400, N_("{subject} is not valid UTF-8 text")),
    "json.number_too_long": Message(400, N_("{subject} holds a number far too long for any field")),
    "json.too_deep": Message(400, N_("{subject} is nested far deeper than any survey document")),
    # -- live --
    "live.alternative_unknown": Message(400, N_("alternative must be one of {choices}")),
    "live.not_randomized": Message(400, N_("give the key of a randomized question of this survey, not {key!r}")),
    "live.test_refused": Message(400, N_("{reason}")),
    "live.threshold_not_percent": Message(400, N_("Type the share to test as a percentage, for example 10 for 10%.")),
    "live.threshold_out_of_range": Message(
        400,
        N_("the threshold must be a share from 0 to 1 (0.1 for 10%), got {threshold!r}"),
    ),
    "live.threshold_percent_out_of_range": Message(
        400,
        N_("The threshold must be a percentage from 0 to 100, got {threshold!r}."),
    ),
    # -- mail --
    "mail.no_public_url": Message(
        503,
        N_(
            "No link or e-mail can be made: this site's public address (PUBLIC_URL) is not set. Ask its "
            "administrator to set it; nothing was saved."
        ),
    ),
    "mail.not_written": Message(400, N_("The e-mail could not be written ({reason}); nothing was saved.")),
    # -- number --
    "number.blank": Message(400, N_("enter the {what}")),
    "number.invalid": Message(400, N_("must be {rule}")),
    "number.not_finite": Message(400, N_("{name} must be a finite number, got {typed!r}")),
    "number.not_number": Message(400, N_("{name} must be a number, got {typed!r}")),
    "number.out_of_range": Message(400, N_("must be a whole number from {low:,} to {high:,}")),
    # -- page --
    "page.nothing_here": Message(404, N_("There is nothing here.")),
    # -- password --
    "password.length": Message(400, N_("Use {least} to {most} characters.")),
    "password.unchanged": Message(400, N_("The new password is the same as the current one.")),
    "password.wrong_current": Message(400, N_("This is not your current password.")),
    # -- planning --
    "planning.not_randomized": Message(404, N_("{key!r} is asked directly: it has no planning figures")),
    # -- preview --
    "preview.design_not_for_kind": Message(400, N_("a {kind} question cannot use the design {design!r}")),
    "preview.design_unknown": Message(400, N_("design must be one of {designs}, got {design!r}")),
    "preview.level_named_unknown": Message(400, N_("set the privacy level by epsilon or {level}, got {named!r}")),
    "preview.level_twice": Message(400, N_("give exactly one of epsilon and {level}")),
    "preview.level_unknown": Message(400, N_("set the privacy level by epsilon or {level}, got {set_by!r}")),
    "preview.margin_out_of_range": Message(400, N_("the target margin must be {rule}, got {value!r}")),
    "preview.shares_count": Message(400, N_("give one number per option ({k}), separated by commas; got {got}")),
    "preview.too_few_options": Message(400, N_("a choice question needs at least 2 options: type them one per line")),
    "preview.whole_number_out_of_range": Message(
        400,
        N_("{what} must be a whole number from {low:,} to {high:,}, got {value!r}"),
    ),
    # -- quota --
    "quota.exhausted": Message(
        429,
        N_(
            "You have sent as many invitations and e-mails as one account may ({limit}). Try again "
            "later; nothing was sent or saved."
        ),
    ),
    # -- regression --
    "regression.covariate_randomized": Message(
        400,
        N_("{key!r} is randomized: covariates are questions asked directly"),
    ),
    "regression.no_answers": Message(409, N_("nobody has answered the outcome and every covariate yet")),
    "regression.no_covariates": Message(400, N_("choose at least one covariate")),
    "regression.not_applicable": Message(
        400,
        N_(
            "this outcome's design does not report the chosen answer as a misclassified yes/no, so the "
            "model does not apply"
        ),
    ),
    "regression.not_fitted": Message(409, N_("the model cannot be fitted: {reason}")),
    "regression.outcome_not_randomized": Message(400, N_("{key!r} is asked directly: choose a randomized outcome")),
    "regression.too_large": Message(
        422,
        N_(
            "these covariates split the respondents into {patterns} groups with different answers, and "
            "the model has {coefficients} coefficients (one per option beyond the first, one per number "
            "question): more than this site fits on request ({most:,} groups × coefficients). Choose "
            "fewer covariates, or ones with fewer options, or download the responses and fit the model "
            "with survey.privacy.rr_logistic in a notebook"
        ),
    ),
    "regression.too_many_covariates": Message(400, N_("choose at most {most} covariates")),
    # -- role --
    "role.required": Message(400, N_("Choose a role.")),
    "role.unknown": Message(400, N_("Choose one of: {roles}.")),
    # -- role_invitation --
    "role_invitation.gone": Message(404, N_("That invitation was used or withdrawn already.")),
    "role_invitation.member_already": Message(
        409,
        N_("You work on this survey already; ask its owner to change your role."),
    ),
    "role_invitation.not_found": Message(404, N_("There is no invitation to this survey.")),
    "role_invitation.owner": Message(409, N_("You own this survey: you have every right to it already.")),
    # -- service --
    "service.answers_maybe_stored": Message(
        503,
        N_(
            "The survey's database stopped answering while your answers were being stored, so they may "
            "not have been received. Please send them again in a minute: that is safe, they will not be "
            "counted twice."
        ),
    ),
    "service.answers_not_stored": Message(
        503,
        N_(
            "The survey's database cannot be reached right now, so your answers were not received and "
            "nothing was stored. Please send them again in a minute."
        ),
    ),
    "service.change_maybe_made": Message(
        503,
        N_(
            "The database stopped answering while your change was being saved, so it may or may not have "
            "been made. In a minute, reload the page to see before you do it again."
        ),
    ),
    "service.change_not_made": Message(
        503,
        N_("The database cannot be reached right now, so nothing was changed. Please try again in a minute."),
    ),
    "service.page_unavailable": Message(
        503,
        N_("This site cannot reach its database right now. Please try again in a minute."),
    ),
    # -- sharing --
    "sharing.not_a_member": Message(404, N_("That user is not a member of this survey (any more).")),
    "sharing.not_allowed": Message(404, N_("Only the owner and co-organizers can share this survey.")),
    "sharing.own_role": Message(400, N_("You cannot change your own role; ask another organizer to do it.")),
    "sharing.owner_has_every_right": Message(400, N_("{who} owns this survey and already has every right to it.")),
    "sharing.owner_not_removable": Message(400, N_("The owner of a survey cannot be removed from it.")),
    # -- spec --
    "spec.access_unknown": Message(400, N_("must be one of {modes}")),
    "spec.design_unknown": Message(400, N_("must be one of {allowed}, got {design!r}")),
    "spec.empty": Message(400, N_("the spec is empty")),
    "spec.key_malformed": Message(400, N_("must start with a lowercase letter and use only a-z, 0-9 and _ (up to 40)")),
    "spec.key_repeated": Message(400, N_("{key!r} is used by an earlier question")),
    "spec.key_reserved": Message(400, N_("{key!r} is reserved for a column of the microdata export")),
    "spec.kind_unknown": Message(400, N_("must be one of {kinds}, got {kind!r}")),
    "spec.level_twice": Message(400, N_("give exactly one of 'epsilon' and '{level}'")),
    "split.unknown": Message(404, N_("this survey has no split ballot {ballot!r}")),
    "split.by_not_direct": Message(
        400,
        N_("a split ballot is broken down by a question asked directly, with options, outside it; {key!r} is not one"),
    ),
    "spec.arm_not_object": Message(
        400, N_('must be an object such as {{"group": "drug_use", "share": 0.5}}: the split ballot and its share')
    ),
    "spec.arm_group_malformed": Message(
        400, N_("the split ballot's name must start with a lowercase letter and use only a-z, 0-9 and _ (up to 40)")
    ),
    "spec.arm_share_invalid": Message(
        400, N_("the share of respondents who get this arm must be a number above 0 and below 1, got {value!r}")
    ),
    "spec.arm_group_split": Message(
        400,
        N_("the arms of the split ballot {group!r} must be consecutive questions, with no other question between them"),
    ),
    "spec.arm_group_alone": Message(
        400, N_("the split ballot {group!r} has one arm: a split ballot asks the same thing in at least two ways")
    ),
    "spec.arm_shares_sum": Message(400, N_("the shares of the split ballot {group!r} must sum to 1, not {total}")),
    "spec.own_coin_impossible": Message(
        400,
        N_(
            "a {design} design cannot be carried out with the respondent's own coins or die: that takes a forced "
            "response (the truth with one chance, each answer forced with another) whose chances are quarters "
            "(two coins) or sixths (a die), such as a coin flip at 0.5 and 0.5 or Warner's design at 0.75"
        ),
    ),
    "spec.decline_not_randomized": Message(
        400, N_("only a randomized question can let respondents decline it, not a {kind} question")
    ),
    "spec.not_boolean": Message(400, N_("must be true or false")),
    "spec.not_number": Message(400, N_("must be a number, got {value!r}")),
    "spec.not_object": Message(400, N_("must be an object")),
    "spec.not_text": Message(400, N_("must be a question in words, got {value!r}")),
    "spec.not_survey": Message(400, N_("the spec must be a JSON object with a title and questions")),
    "spec.number_has_no_options": Message(400, N_("a number question has a range (minimum and maximum), not options")),
    "spec.number_has_no_privacy": Message(400, N_("a number question is asked plainly and has no privacy settings")),
    "spec.number_has_no_simulated_truth": Message(400, N_("a number question has no simulated shares")),
    "spec.one_sided": Message(
        400,
        N_(
            "this design has ε = ∞: some reports reveal the true answer, so only one answer is deniable. "
            "Set 'allow_one_sided': true to accept that explicitly"
        ),
    ),
    "spec.options_count": Message(400, N_("a {kind} question needs a list of 2 to {most} options")),
    "spec.options_fixed": Message(400, N_("a {kind} question has the options {labels}; leave it out")),
    "spec.options_repeated": Message(400, N_("options must be distinct")),
    "spec.parameter_missing": Message(400, N_("is missing")),
    "spec.privacy_missing": Message(400, N_("a {kind} question is randomized and needs privacy settings")),
    "spec.privacy_not_randomized": Message(400, N_("a {kind} question is asked plainly and has no privacy settings")),
    "spec.probabilities_count": Message(400, N_("needs one probability per option ({count})")),
    "spec.questions_count": Message(400, N_("needs a list of {least} to {most} questions")),
    "spec.range_missing": Message(400, N_("a number question needs a minimum and a maximum")),
    "spec.range_end_invalid": Message(400, N_("must be a number from -{most:,} to {most:,}")),
    "spec.bins_invalid": Message(400, N_("bin edges: {reason}")),
    "spec.range_not_number": Message(400, N_("only a number question has a range")),
    "spec.range_reversed": Message(400, N_("must be above the minimum ({low:,})")),
    "spec.reveals_everything": Message(
        400,
        N_(
            "every report this design sends reveals the true answer, so it protects nothing: ask the "
            "question directly instead (kind 'direct')"
        ),
    ),
    "spec.simulated_truth_invalid": Message(400, N_("needs one share per option, summing to 1")),
    "spec.slug_malformed": Message(400, N_("use 3 to 80 characters from a-z, 0-9 and -")),
    "spec.slug_taken": Message(400, N_("{slug!r} is already taken")),
    "spec.status_unknown": Message(400, N_("must be one of {statuses}")),
    "spec.unknown_field": Message(400, N_("unknown field {field!r} (allowed: {allowed})")),
    # -- submission --
    "submission.answered_twice": Message(400, N_("Question {key!r} was answered twice.")),
    "submission.answers_not_object": Message(
        400,
        N_("answers must be an object mapping question keys to option codes or numbers"),
    ),
    "submission.body_malformed": Message(
        400,
        N_('the body must be an object with the field "answers" (and "invitation" and "submission_key" if needed)'),
    ),
    "submission.empty": Message(400, N_("the submission has no answers")),
    "submission.foreign_origin": Message(403, N_("submissions are accepted from this site's own pages only")),
    "submission.invitation_not_text": Message(400, N_('"invitation" must be the invitation code as text')),
    "submission.key_malformed": Message(
        400,
        N_("submission_key must be 16 to 64 letters, digits, '-' or '_' (the page makes one for you)"),
    ),
    "submission.key_not_text": Message(400, N_('"submission_key" must be text')),
    "submission.not_json": Message(415, N_("send the answers as JSON with Content-Type: application/json")),
    "submission.survey_changed": Message(
        409,
        N_("The survey changed while your answers were sent; please send them again."),
    ),
    "submission.unexpected_field": Message(400, N_("Unexpected field {name!r}.")),
    "submission.unknown_question": Message(400, N_("unknown question {key!r}: this survey has no such question")),
    # -- survey --
    "survey.access_unknown": Message(400, N_("Access must be one of: {modes}.")),
    "survey.archive_not_closed": Message(
        409,
        N_("Only a closed survey can be archived; this survey is {state}. Close it first."),
    ),
    "survey.close_not_open": Message(409, N_("Only an open survey can be closed; this survey is {state}.")),
    "survey.closed": Message(409, N_("This survey is closed and no longer accepts answers.")),
    "survey.closed_on": Message(409, N_("This survey closed on {closes_on} and no longer accepts answers.")),
    "survey.copy_failed": Message(409, N_("This survey cannot be copied: {reason}")),
    "survey.dates_reversed": Message(400, N_("The closing date must not be before the opening date.")),
    "survey.delete_has_answers": Message(409, N_("This survey has answers, so it cannot be deleted.")),
    "survey.delete_not_draft": Message(
        409,
        N_(
            "Only a draft can be deleted; this survey is {state}, and its answers are kept. Close it and "
            "archive it to put it out of the list."
        ),
    ),
    "survey.frozen": Message(
        409,
        N_(
            "This survey has been opened, so its questions, options and designs are frozen: only texts "
            "can be corrected. To change a design, duplicate the survey and edit the copy."
        ),
    ),
    "survey.not_open_yet": Message(409, N_("This survey opens on {opens_on}.")),
    "survey.not_published": Message(409, N_("This survey is not published yet.")),
    "survey.owner_only": Message(403, N_("Only the survey's owner can {what}.")),
    "survey.publish_above_cap": Message(
        409,
        N_(
            "The survey's total ε is {total}, above its cap of {cap:.2f}. Lower some questions' ε, "
            "remove a question, or raise the cap."
        ),
    ),
    "survey.publish_no_questions": Message(409, N_("Add at least one question before publishing.")),
    "survey.publish_split_ballot": Message(409, N_("A split ballot cannot be asked as it is: {reason}.")),
    "survey.publish_not_draft": Message(409, N_("Only a draft can be published; this survey is {state}.")),
    "survey.publish_translation_missing": Message(
        409,
        N_("The {language} translation lacks {what}. Translate it on the translations page, or remove the language."),
    ),
    "survey.publish_translation_more": Message(
        409, N_("Texts still to translate or check besides these: {count} (the translations page marks each).")
    ),
    "survey.publish_translation_stale": Message(
        409,
        N_(
            "The {language} translation of {what} was made for an earlier English text. Check it on the "
            "translations page and save it again."
        ),
    ),
    "survey.reopen_not_closed": Message(409, N_("Only a closed survey can be reopened; this survey is {state}.")),
    "survey.restore_not_archived": Message(409, N_("Only an archived survey can be restored; this survey is {state}.")),
    "survey.slug_malformed": Message(
        400,
        N_("Use 3 to 80 characters: lowercase letters a-z, digits and hyphens, not starting with a hyphen."),
    ),
    "survey.slug_published": Message(
        409,
        N_("The address of a published survey cannot change: its link may have been sent already."),
    ),
    "survey.slug_taken": Message(400, N_("This address is taken. Choose another one.")),
    "survey.too_many_questions": Message(
        409,
        N_("a survey has at most {most} questions: delete one before adding another, or split the survey"),
    ),
    # -- text --
    "text.not_text": Message(400, N_("must be a text")),
    "text.not_unicode": Message(400, N_("contains characters that are not valid Unicode text")),
    "text.nul": Message(400, N_("contains a NUL character, which is not text")),
    "text.required": Message(400, N_("must be a non-empty text")),
    "text.too_long": Message(400, N_("is longer than {limit} characters")),
    # -- token --
    "token.expired": Message(
        401, N_("This API token was valid until {last_day} (UTC). Make a new one on your account page.")
    ),
    "token.expiry_out_of_range": Message(400, N_("a token lasts from {least} to {most} days")),
    "token.not_here": Message(401, N_("This address does not take API tokens: sign in with a browser instead.")),
    "token.revoked": Message(401, N_("This API token was revoked.")),
    "token.scope": Message(
        403, N_("This API token's scope is {scope!r}, which does not allow this; it needs a token for {needed!r}.")
    ),
    "token.scope_unknown": Message(400, N_("choose one of the scopes {scopes}")),
    "token.survey_not_visible": Message(400, N_("choose among the surveys you can see")),
    "token.too_many": Message(409, N_("you have {most} live API tokens: revoke one before making another")),
    "token.unknown": Message(401, N_("This API token is not valid.")),
    "token.user_disabled": Message(401, N_("The account this API token belongs to is disabled.")),
    # -- translation --
    "translation.emptied": Message(
        409,
        N_(
            "The {language} translation of {what} cannot be emptied: the survey is published and its "
            "respondents read it. Correct it instead."
        ),
    ),
    "translation.language_absent": Message(400, N_("The survey has no {language} translation.")),
    "translation.language_added": Message(409, N_("The survey already has {language}.")),
    "translation.language_unknown": Message(
        400, N_("The app has no language {language!r} to translate into; a survey can add {languages}.")
    ),
    "translation.not_draft": Message(
        409,
        N_(
            "Languages are added and removed while the survey is a draft; this survey is {state}. Its "
            "translations can still be corrected."
        ),
    ),
    "translation.path_unknown": Message(400, N_("The survey has no text {name!r} to translate.")),
    # -- user --
    "user.demote_self": Message(
        409,
        N_("You cannot take away your own administrator's role; ask another administrator."),
    ),
    "user.disable_self": Message(409, N_("You cannot disable your own account.")),
    "user.disabled": Message(409, N_("{username}'s account is disabled: enable it first.")),
    "user.email_taken": Message(400, N_("Another user has the address {address}.")),
    "user.last_administrator": Message(
        409,
        N_("There must always be an administrator who can sign in: make someone else an administrator first."),
    ),
    "user.not_found": Message(404, N_("There is no such user.")),
    # -- username --
    "username.malformed": Message(
        400,
        N_("Use up to {most} letters and digits, with dots, dashes or underscores between them."),
    ),
    "username.required": Message(400, N_("Choose a username.")),
    "username.taken": Message(
        400,
        N_("The username “{name}” is taken, or looks too much like one that is; choose another."),
    ),
}


#: Words that are no error of their own but go with one: where it is, in words ("question 2
#: ('q2'), field 'privacy.epsilon'"), how that is put before its sentence, and the builder's plain
#: words for a privacy parameter. Marked for translation like the errors.
PHRASES: dict[str, str] = {
    "place.survey": N_("survey"),
    "place.question": N_("question {number}"),
    "place.question_key": N_("question {number} ({key!r})"),
    "place.field": N_("{place}, field '{field}'"),
    "place.before_sentence": N_("{where}: {message}"),
    "preview.parameter_blank": N_("Type {named}: {rule}."),
    "rule.target_margin": N_("a share between 0 and 1, at least {least:g} (0.1 percentage points), such as 0.05"),
    "rule.epsilon_cap": N_("a number greater than 0, or left out for no cap"),
    "invited.waits": N_(
        "{who} is invited as a {role}, {expires}. If {who} is the username or e-mail address of an account here, "
        "the offer waits on that account's start page until it is accepted."
    ),
    "invited.told": N_("{waits} An e-mail went to {sent_to}."),
    "invited.not_told": N_("{waits} The e-mail to {who} could not be sent: {error}."),
    "link.expires_days": N_("for {days} days, until {until} UTC"),
    "link.expires_hour": N_("for 1 hour, until {until} UTC"),
    "link.expires_hours": N_("for {hours} hours, until {until} UTC"),
    "mail.role_organizer": N_("a co-organizer (you would build, run and share it)"),
    "mail.role_researcher": N_("a researcher (you would see its results and downloads)"),
    "mail.role_member": N_("a member"),
    "quota.per_hour": N_("{amount} per hour"),
    "submission.nothing_stored": N_("{message} Nothing was stored."),
    "quota.per_day": N_("{amount} per day"),
    "quota.per_minute": N_("{amount} per minute"),
    "quota.per_seconds": N_("{amount} per {seconds} seconds"),
    "preview.parameter_rule": N_("{named} must be {rule}."),
}


def template(code: str, /) -> str:
    """The English template of an error code or a phrase."""
    entry = MESSAGES.get(code)
    return entry.template if entry is not None else PHRASES[code]


def message(code: str, /, **params: Any) -> str:
    """The English sentence of an error code or a phrase, filled with ``params``."""
    return template(code).format(**params)


def placeholders(template: str) -> list[str]:
    """The names a template is filled with, in order of first use: ``"{key!r} and {other!r}"`` →
    ``["key", "other"]``."""
    names: list[str] = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None and name not in names:
            names.append(name)
    return names


ERRORS_DOC_HEAD = """# Errors

Every refusal the site answers with has a stable **code** (dotted, such as `text.required`), the
**params** that fill its sentence, and an HTTP **status**. The catalog is
`survey/domain/messages.py`; this page is generated from it (`make errors-doc`) and a test checks that
it is current. A code does not change when its English words do; a client or a translation keys on
the code.

A JSON error is an RFC 9457 problem, `Content-Type: application/problem+json`:

```json
{
  "type": "urn:survey:error:submission.unknown_question",
  "title": "Bad Request",
  "status": 400,
  "detail": "unknown question 'nope': this survey has no such question",
  "code": "submission.unknown_question",
  "params": {"key": "nope"},
  "path": ["answers", "nope"],
  "error": "unknown question 'nope': this survey has no such question"
}
```

`type` names the code as a URN (nothing to fetch: this page documents it). `detail` and `error` hold
the same sentence (`error` is the member clients read before the problem members were added). `path`
says which input is at fault, as keys and indices into what was sent (empty for the request as a
whole). An imported spec's errors say the place in words before the sentence ("question 2 ('q2'),
field 'privacy.epsilon': ..."); `params` never hold it. Errors that are only their status (a 404, a
405, a refused CSRF token) are problems too, with `type` `about:blank` and the code `http.<status>`.

The place in words and the way it goes before the sentence are phrases of the same file
(`PHRASES`: `place.question`, `place.field`, `place.before_sentence`, ...), translated like the sentences.

The sentences are templates in Python's `str.format` syntax (`{key!r}` is the value quoted as
Python writes it, `{low:,}` a number with thousands separators). Each is marked for translation, so
`make messages` puts it in `messages.pot`.

| code | status | params | English |
| --- | --- | --- | --- |
"""


def errors_table() -> str:
    """docs/errors.md: the catalog as a table (code, status, params, English template)."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = [
        f"| `{code}` | {entry.status} | {', '.join(f'`{p}`' for p in placeholders(entry.template))} | "
        f"{cell(entry.template)} |"
        for code, entry in sorted(MESSAGES.items())
    ]
    return ERRORS_DOC_HEAD + "\n".join(rows) + "\n"
