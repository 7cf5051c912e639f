/*
 * The respondent's form. On submit, each randomized question's true answer (a radio button, or a
 * typed number, with no name, owned by a form that is never sent) is replaced by a reported value:
 * drawn from the column of the question's matrix for that answer, or, for a randomized number, the
 * code SurveyNumbers.report (numbers.js) draws from the number with the question's sampler. Only
 * those reported values are posted, never the typed number. Directly asked questions post their
 * answer as given. A question that may be declined has a "Prefer not to say" box: when it is ticked,
 * nothing is drawn for the question and what is posted is the marker "declined" (declining is not
 * hidden, and the page says so).
 *
 * How each report is drawn depends on the survey (data-regime, SECURITY.md section 2):
 * - "memoized": where the browser can keep a secret (see memo.js), the same true answer to the same
 *   question gives the same report on every submission from this browser; elsewhere each submission
 *   draws afresh, and the page says so.
 * - "single-use" (a survey by invitation: a code admits one submission) and "shared" (answered on
 *   shared devices, where a browser's secret would be everyone's): a fresh draw every time, and
 *   nothing is kept in the browser (memo.js is not even loaded). "shared" also clears the page after
 *   sending and replaces it in the history by the thank-you page, so that the next person finds
 *   nothing of the previous one, not with the back button either.
 *
 * Sending. The answers go with fetch(), not as a navigation, so that the page and what it sent stay
 * when the answer does not come back (a dropped connection, a server error): the respondent is told
 * that sending again is safe, and a retry posts the very same body with the same submission key (32
 * hex digits from crypto.getRandomValues, made once per filling of the form), which the server
 * stores once. The key lives in the page only: nothing is written to any storage, so nothing of it
 * outlives the page (on a shared device, nothing passes to the next person). A refusal (4xx) shows
 * the server's reason; success goes to the thank-you page.
 */
(function () {
  "use strict";

  /* The sentences this script shows, in the page's language: survey.html writes them, translated on
   * the server, as JSON in the data-words attribute of #respond-words (no inline script: the
   * Content-Security-Policy's script-src 'self' holds). word() fills its {name} placeholders. */
  var WORDS = JSON.parse(document.getElementById("respond-words").dataset.words);

  function word(name, values) {
    return WORDS[name].replace(/\{(\w+)\}/g, function (whole, key) {
      return values && key in values ? String(values[key]) : whole;
    });
  }

  var form = document.getElementById("survey-form");
  if (!form || !window.SurveyRandomizer) {
    return;
  }
  var status = document.getElementById("form-status");
  var button = document.getElementById("submit-button");
  var clearButton = document.getElementById("clear-answers");
  var keyField = document.getElementById("submission-key");
  var fieldsets = Array.prototype.slice.call(form.querySelectorAll("fieldset.question"));
  var regime = form.dataset.regime || "memoized";
  var shared = regime === "shared";
  var memo = regime === "memoized" ? window.SurveyMemo || null : null;
  var sendLabel = button.textContent;
  var KEY = /^[0-9a-f]{32}$/;
  var sending = false;
  // This filling's last body and the answers it was made from ({answers, body}): sent again byte for
  // byte while the answers are unchanged, so that a retry repeats the same reports (a fresh draw
  // would be a second, independent look at the same true answer).
  var last = null;
  // Whether an attempt of this filling got no answer, and why (it may have been stored): false, or
  // [the name of the sentence that says why, its values].
  var inDoubt = false;
  // This filling's fresh draws, by question and true answer: a retry with one answer changed draws
  // again for that answer only (never a second look at an unchanged one).
  var drawn = {};
  // An organizer's preview (data-preview): the page works, but nothing can be sent from it.
  var preview = form.hasAttribute("data-preview");

  /* Add the script a placeholder names (its data-src) to the page, then ``done``. Marked as added, not
     the page's own (switch.js passes it over). */
  function load(placeholder, done) {
    var script = document.createElement("script");
    script.src = placeholder.dataset.src;
    script.setAttribute("data-added", "");
    script.onload = done || null;
    document.body.appendChild(script);
  }

  // "Try it" (try.js) is for the few who open a question's panel: its script comes with the first
  // opening, not with the page, so a first visit downloads less. (toggle does not bubble: captured.)
  var tryScript = document.getElementById("try-script");
  if (tryScript) {
    var loadTry = function (event) {
      if (event.target.open && event.target.querySelector("[data-try-for]")) {
        form.removeEventListener("toggle", loadTry, true);
        load(tryScript);
      }
    };
    form.addEventListener("toggle", loadTry, true);
  }

  // Group each question's true-answer radios (arrow keys, one choice) inside the never-sent form.
  fieldsets.forEach(function (fieldset) {
    if (fieldset.hasAttribute("data-randomized")) {
      fieldset.querySelectorAll("input[data-true-answer]").forEach(function (input) {
        input.name = "truth-" + fieldset.dataset.key;
      });
    }
  });

  // Tell the respondent whether a second submission from this browser would repeat the first.
  function showMemo(on) {
    var yes = document.getElementById("memo-on");
    var no = document.getElementById("memo-off");
    if (yes && no) {
      yes.hidden = !on;
      no.hidden = on;
    }
  }
  if (regime === "memoized") {
    showMemo(Boolean(memo && memo.available()));
  }

  function hex(bytes) {
    var out = "";
    for (var i = 0; i < bytes.length; i++) {
      out += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    }
    return out;
  }

  /* This filling's submission key: the one in the page (the server's, after a refusal), or 128 new random bits. */
  function submissionKey() {
    if (!KEY.test(keyField.value)) {
      var bytes = new Uint8Array(16);
      window.crypto.getRandomValues(bytes);
      keyField.value = hex(bytes);
    }
    return keyField.value;
  }

  /* The question's "Prefer not to say" box, if it may be declined and the box is ticked. */
  function declined(fieldset) {
    var box = fieldset.querySelector("input[data-decline]");
    return box && box.checked ? box : null;
  }

  function chosen(fieldset) {
    if (declined(fieldset)) {
      return declined(fieldset);
    }
    if (fieldset.hasAttribute("data-number")) {
      var typed = fieldset.hasAttribute("data-randomized")
        ? fieldset.querySelector("input[data-true-answer]")
        : fieldset.querySelector("input[name='q_" + fieldset.dataset.key + "']");
      return typed && typed.value.trim() !== "" ? typed : null;
    }
    var selector = fieldset.hasAttribute("data-randomized")
      ? "input[data-true-answer]:checked"
      : "input[name='q_" + fieldset.dataset.key + "']:checked";
    return fieldset.querySelector(selector);
  }

  /* Everything the respondent has answered, as text: a retry with the same answers resends the same body. */
  function answersNow() {
    return JSON.stringify(
      fieldsets.map(function (fieldset) {
        var input = chosen(fieldset);
        return input ? input.value : null;
      })
    );
  }

  function markMissing(fieldset, missing, message) {
    fieldset.classList.toggle("missing", missing);
    var error = document.getElementById("error-" + fieldset.dataset.key);
    if (error) {
      error.hidden = !missing;
      if (missing) {
        error.textContent = message || word("answer_this");
      }
    }
  }

  /* A number question's typed answer, if it is not a whole number in its range: what to say. */
  function numberProblem(fieldset) {
    if (!fieldset.hasAttribute("data-number") || declined(fieldset)) {
      return "";
    }
    var input = fieldset.querySelector("input[type=number]");
    var text = input.value.trim();
    var randomized = fieldset.hasAttribute("data-randomized");
    var rule = randomized
      ? word("type_number", { example: input.min })
      : word("type_whole_number", { low: input.min, high: input.max });
    if (input.validity && input.validity.badInput) {
      return rule; // typed, but not a number (the browser keeps the value empty)
    }
    if (text === "") {
      return "";
    }
    var n = Number(text);
    if (randomized) {
      return isFinite(n) ? "" : rule; // any number: the sampler clamps it to the range
    }
    return /^-?[0-9]+$/.test(text) && n >= Number(input.min) && n <= Number(input.max) ? "" : rule;
  }

  /* The distribution of the report for this true answer, from what the page says the browser samples
     from (the mechanism's sampler): only a matrix's columns are known here; any other sampler is
     refused (the caller then says the answers could not be randomized) rather than guessed at. */
  function column(fieldset, trueCode) {
    if (fieldset.dataset.sampler !== "columns") {
      throw new Error("unknown sampler: " + fieldset.dataset.sampler);
    }
    return JSON.parse(fieldset.dataset.columns)[trueCode];
  }

  /* A randomized number's sampler, from the fieldset's data- attributes (numbers.js refuses a
     sampler it does not know, so the caller says the answers could not be randomized). */
  function numberSampler(fieldset) {
    if (!fieldset.hasAttribute("data-number") || !window.SurveyNumbers) {
      throw new Error("unknown sampler: " + fieldset.dataset.sampler);
    }
    return window.SurveyNumbers.samplerFrom(fieldset.dataset);
  }

  /* A fresh report for [fieldset, true answer]: a code drawn from the matrix's column for a true
     option code, or a randomized number's code. */
  function freshReport(fieldset, truth) {
    if (fieldset.hasAttribute("data-number")) {
      return window.SurveyNumbers.report(numberSampler(fieldset), truth);
    }
    return window.SurveyRandomizer.sample(column(fieldset, truth));
  }

  /* The memoized report for [fieldset, true answer] with this browser's key (memo.js). */
  function memoReport(key, slug, fieldset, truth) {
    if (fieldset.hasAttribute("data-number")) {
      return memo.reportNumber(key, numberSampler(fieldset), slug, fieldset.dataset.key, truth);
    }
    return memo.report(key, column(fieldset, truth), slug, fieldset.dataset.key, truth);
  }

  function freshReports(items) {
    return items.map(function (item) {
      var id = item[0].dataset.key + "\n" + item[1];
      if (!Object.prototype.hasOwnProperty.call(drawn, id)) {
        drawn[id] = freshReport(item[0], item[1]);
      }
      return drawn[id];
    });
  }

  /* One reported value per [fieldset, true code]: memoized where the regime and browser allow, fresh otherwise. */
  function reportAll(items) {
    if (!memo) {
      return new Promise(function (resolve) {
        resolve(freshReports(items)); // a sampler refused rejects the promise: nothing is sent
      });
    }
    var slug = form.dataset.survey;
    return memo
      .browserKey()
      .then(function (key) {
        if (!key) {
          return null;
        }
        return Promise.all(
          items.map(function (item) {
            return memoReport(key, slug, item[0], item[1]);
          })
        );
      })
      .catch(function () {
        return null;
      })
      .then(function (reports) {
        if (reports === null) {
          showMemo(false);
          return freshReports(items);
        }
        return reports;
      });
  }

  function clearReports() {
    form.querySelectorAll("input[data-reported-for]").forEach(function (field) {
      field.value = "";
      field.disabled = true;
    });
  }

  /* The body to post for these answers: the last one if the answers are unchanged, else new reports. */
  function bodyFor(answers, toReport, toDecline) {
    if (last && last.answers === answers) {
      return Promise.resolve(last.body);
    }
    return reportAll(toReport).then(function (reports) {
      toReport.forEach(function (item, i) {
        var field = item[0].querySelector("input[data-reported-for]");
        field.value = String(reports[i]);
        field.disabled = false;
      });
      toDecline.forEach(function (fieldset) {
        var field = fieldset.querySelector("input[data-reported-for]");
        field.value = "declined"; // the marker only: nothing is drawn for a declined question
        field.disabled = false;
      });
      submissionKey();
      var body = new URLSearchParams(new FormData(form)).toString();
      clearReports(); // the reports travel in the body only; the page does not keep them in its fields
      last = { answers: answers, body: body };
      return body;
    });
  }

  function post(body) {
    return window.fetch(form.action, {
      method: "POST",
      body: body,
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "text/html" },
      credentials: "same-origin",
      // the 303 to the thank-you page is the sign of success; it is followed so that its address, which
      // says whether the answers had already arrived (a resend), is the one the page then goes to
      redirect: "follow",
      cache: "no-store",
    });
  }

  // While an attempt's outcome is unknown, leaving the page would lose its key: the browser asks first.
  function holdOnLeaving(event) {
    event.preventDefault();
    event.returnValue = "";
  }

  function say(kind, text) {
    status.className = kind;
    status.textContent = text;
  }

  /* After a sending that did not end on the thank-you page: the why, above the questions, in view. */
  function showStatus() {
    if (status.scrollIntoView) {
      status.scrollIntoView({ block: "center" });
    }
  }

  function ready(label) {
    sending = false;
    button.disabled = preview;
    button.textContent = label || sendLabel;
    if (clearButton) {
      clearButton.disabled = false;
    }
  }

  /* Back to an empty form with no key: for the next person on a shared device, or on request. */
  function resetFilling() {
    form.reset();
    document.getElementById("true-answers").reset();
    fieldsets.forEach(function (fieldset) {
      fieldset.querySelectorAll("input[type=radio], input[type=checkbox]").forEach(function (input) {
        input.checked = false;
      });
      fieldset.querySelectorAll("input[type=number]").forEach(function (input) {
        input.value = "";
      });
      markMissing(fieldset, false);
    });
    clearReports();
    keyField.value = "";
    last = null;
    inDoubt = false;
    drawn = {};
    window.removeEventListener("beforeunload", holdOnLeaving);
    say("", "");
  }

  /* The thank-you page's address if the response is the thank-you page reached by the post's redirect. */
  function thanksReached(response) {
    var expected = new URL(form.dataset.thanks, window.location.href);
    var reached = response.redirected && response.ok ? new URL(response.url) : null;
    return reached && reached.origin === expected.origin && reached.pathname === expected.pathname ? reached.href : null;
  }

  function stored(thanks) {
    window.removeEventListener("beforeunload", holdOnLeaving);
    last = null;
    inDoubt = false;
    drawn = {};
    keyField.value = ""; // this filling is done: another one (going back, answering again) gets a new key
    if (shared) {
      resetFilling();
      window.location.replace(thanks); // the filled page leaves the history: the back button cannot reach it
    } else {
      window.location.assign(thanks);
    }
  }

  /* What the page says while an attempt's outcome is unknown, in the page's language. */
  function sayInDoubt() {
    var why = word(inDoubt[0], inDoubt[1]);
    say("alert", why + " " + word("may_have_arrived") + (shared ? " " + word("clear_before_leaving") : ""));
    ready(word("send_again"));
  }

  /* An attempt got no answer (``reason``: the name of the sentence that says why, and its values). */
  function uncertain(reason, values) {
    inDoubt = [reason, values];
    window.addEventListener("beforeunload", holdOnLeaving);
    sayInDoubt();
    showStatus();
  }

  /* ``text`` without its closing "Nothing was (sent or) stored/changed." in the page's language. */
  function withoutNothingStored(text) {
    var endings = [word("nothing_stored"), word("nothing_sent_or_stored"), word("nothing_changed")];
    for (var i = 0; i < endings.length; i++) {
      var at = text.lastIndexOf(endings[i]);
      if (at >= 0 && at + endings[i].length === text.length) {
        return text.slice(0, at).trim();
      }
    }
    return text;
  }

  function refused(httpStatus, html) {
    var text = "";
    try {
      var page = new DOMParser().parseFromString(html, "text/html");
      var reason = page.querySelector("[role=alert]") || page.querySelector("main h1");
      text = reason ? reason.textContent.replace(/\s+/g, " ").trim() : "";
    } catch (e) {
      text = "";
    }
    if (!text) {
      text = word("not_accepted", { status: httpStatus });
    }
    if (inDoubt) {
      // this attempt was refused, but an earlier one whose outcome is unknown may have been stored
      text = withoutNothingStored(text);
      text += " " + word("earlier_may_have_arrived");
    } else if (withoutNothingStored(text) === text) {
      text += " " + word("nothing_stored");
    }
    say("alert", text);
    ready(inDoubt ? word("send_again") : sendLabel);
    showStatus();
  }

  /* The language switch (base.html) is a link to this page in another language. Before any answer,
   * following it loses nothing. After one, switch.js (loaded then) changes the page's language in
   * place instead: following the link would reload the page and lose the answers, which are kept
   * nowhere but on it (never in storage, never sent). */
  var answered = false;
  function noteAnswer(event) {
    answered = answered || !event.target.hasAttribute("data-try");
  }
  form.addEventListener("input", noteAnswer);
  form.addEventListener("change", noteAnswer);
  var switchScript = document.getElementById("switch-script");
  if (switchScript) {
    document.getElementById("language-switch").addEventListener("click", function (event) {
      var link = event.target.closest("a[href]");
      if (link && answered && event.button === 0 && !(event.ctrlKey || event.metaKey || event.shiftKey || event.altKey)) {
        event.preventDefault(); // a plain click (not "open in a new tab"), once there is something to lose
        var follow = function () {
          window.SurveySwitch.follow(link);
        };
        if (!sending) {
          window.SurveySwitch ? follow() : load(switchScript, follow);
        }
      }
    });
  }

  /* The page now reads in another language (switch.js): this script's sentences follow. What it had
     written (the status line) was replaced by the page's; what still holds is said again. */
  document.addEventListener("survey:translated", function () {
    WORDS = JSON.parse(document.getElementById("respond-words").dataset.words);
    sendLabel = button.textContent; // the page's "Send my answers", now in that language
    if (inDoubt) {
      sayInDoubt();
    }
  });

  form.addEventListener("input", function (event) {
    var fieldset = event.target.closest("fieldset.question[data-number]");
    if (fieldset && chosen(fieldset)) {
      markMissing(fieldset, false);
    }
  });

  /* "Prefer not to say" and an answer exclude each other: choosing one clears the other. */
  function keepOneChoice(target) {
    var fieldset = target.closest("fieldset.question");
    var box = fieldset && fieldset.querySelector("input[data-decline]");
    if (!box) {
      return;
    }
    if (target === box && box.checked) {
      fieldset.querySelectorAll("input[type=radio]:not([data-try])").forEach(function (input) {
        input.checked = false;
      });
      fieldset.querySelectorAll("input[type=number]:not([data-try])").forEach(function (input) {
        input.value = "";
      });
    } else if (target !== box && !target.hasAttribute("data-try") && (target.checked || target.value !== "")) {
      box.checked = false;
    }
  }

  form.addEventListener("input", function (event) {
    if (event.target.matches("input[type=number]")) {
      keepOneChoice(event.target);
    }
  });

  form.addEventListener("change", function (event) {
    keepOneChoice(event.target);
    var fieldset = event.target.closest("fieldset.question");
    if (fieldset && chosen(fieldset)) {
      markMissing(fieldset, false);
    }
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (sending || preview) {
      return; // a second press while the first is being randomized or sent
    }
    var missing = [];
    var toReport = [];
    var toDecline = [];
    var invalid = [];
    fieldsets.forEach(function (fieldset) {
      if (fieldset.disabled) {
        return; // an arm of a split ballot this respondent was not assigned
      }
      var input = chosen(fieldset);
      var problem = numberProblem(fieldset);
      var isMissing = !problem && !input && fieldset.hasAttribute("data-required");
      markMissing(fieldset, isMissing || Boolean(problem), problem);
      if (problem) {
        invalid.push(fieldset);
      } else if (isMissing) {
        missing.push(fieldset);
      } else if (input && input.hasAttribute("data-decline")) {
        if (fieldset.hasAttribute("data-randomized")) {
          toDecline.push(fieldset); // a combined question's box is itself named and posted
        }
      } else if (input && fieldset.hasAttribute("data-randomized")) {
        toReport.push([fieldset, Number(input.value)]);
      }
    });
    if (invalid.length > 0) {
      say("alert", word("number_outside"));
      invalid[0].querySelector("input:not([data-try])").focus();
      return;
    }
    if (missing.length > 0) {
      say(
        "alert",
        WORDS.missing[String(missing.length)] || WORDS.missing.many
      );
      missing[0].querySelector("input:not([data-try])").focus();
      return;
    }
    sending = true;
    button.disabled = true;
    if (clearButton) {
      clearButton.disabled = true;
    }
    say("", "");
    var answers = answersNow();
    bodyFor(answers, toReport, toDecline)
      .then(
        function (body) {
          return post(body).then(
            function (response) {
              var thanks = thanksReached(response);
              if (thanks) {
                stored(thanks);
              } else if (response.status >= 400 && response.status < 500) {
                return response.text().then(function (html) {
                  refused(response.status, html);
                });
              } else if (response.status >= 500) {
                uncertain("server_problem", { status: response.status });
              } else {
                uncertain("unexpected_answer", { status: response.status });
              }
            },
            function () {
              uncertain("connection_failed");
            }
          );
        },
        function () {
          ready();
          say("alert", word("not_randomized"));
        }
      )
      .catch(function () {
        // the key stays: if anything was stored, sending again is answered "already received"
        ready();
        say("alert", word("page_failed"));
      });
  });

  if (clearButton) {
    clearButton.addEventListener("click", function () {
      if (!sending) {
        resetFilling();
        ready();
      }
    });
  }

  // Coming back to this page from the browser's cache: let the form be used again (after a stored
  // submission the key was emptied before leaving, so the next sending is a new filling).
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      clearReports();
      ready(inDoubt ? word("send_again") : sendLabel);
    }
  });

  // The form can be sent once each split ballot shows its arm (arms.js, on a page that has one).
  (window.SurveyArms ? window.SurveyArms.assign(form, fieldsets, memo) : Promise.resolve()).then(function () {
    ready();
  });
})();
