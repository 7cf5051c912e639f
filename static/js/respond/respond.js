/*
 * The respondent's form. On submit, each randomized question's true answer (a radio button with no
 * name, owned by a form that is never sent) is replaced by a reported value drawn from the column of
 * the question's matrix for that answer; only those reported values are posted. Directly asked
 * questions post their answer as given.
 *
 * Where the browser can keep a secret (see memo.js), each draw is memoized: the same true answer to
 * the same question gives the same report on every submission from this browser. Elsewhere each
 * submission draws afresh, and the page says so.
 */
(function () {
  "use strict";

  var form = document.getElementById("survey-form");
  if (!form || !window.SurveyRandomizer) {
    return;
  }
  var status = document.getElementById("form-status");
  var button = document.getElementById("submit-button");
  var fieldsets = Array.prototype.slice.call(form.querySelectorAll("fieldset.question"));
  var memo = window.SurveyMemo || null;
  var sending = false;
  // An organizer's preview (data-preview): the page works, but nothing can be sent from it.
  var preview = form.hasAttribute("data-preview");

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
  showMemo(Boolean(memo && memo.available()));

  function chosen(fieldset) {
    if (fieldset.hasAttribute("data-number")) {
      var typed = fieldset.querySelector("input[name='q_" + fieldset.dataset.key + "']");
      return typed && typed.value.trim() !== "" ? typed : null;
    }
    var selector = fieldset.hasAttribute("data-randomized")
      ? "input[data-true-answer]:checked"
      : "input[name='q_" + fieldset.dataset.key + "']:checked";
    return fieldset.querySelector(selector);
  }

  function markMissing(fieldset, missing, message) {
    fieldset.classList.toggle("missing", missing);
    var error = document.getElementById("error-" + fieldset.dataset.key);
    if (error) {
      error.hidden = !missing;
      if (missing) {
        error.textContent = message || "Please answer this question.";
      }
    }
  }

  /* A number question's typed answer, if it is not a whole number in its range: what to say. */
  function numberProblem(fieldset) {
    if (!fieldset.hasAttribute("data-number")) {
      return "";
    }
    var input = fieldset.querySelector("input[type=number]");
    var text = input.value.trim();
    var rule = "Please type a whole number from " + input.min + " to " + input.max + ".";
    if (input.validity && input.validity.badInput) {
      return rule; // typed, but not a number (the browser keeps the value empty)
    }
    if (text === "") {
      return "";
    }
    var n = Number(text);
    return /^-?[0-9]+$/.test(text) && n >= Number(input.min) && n <= Number(input.max) ? "" : rule;
  }

  function column(fieldset, trueCode) {
    return JSON.parse(fieldset.dataset.columns)[trueCode];
  }

  function freshReports(items) {
    return items.map(function (item) {
      return window.SurveyRandomizer.sample(column(item[0], item[1]));
    });
  }

  /* One reported value per [fieldset, true code]: memoized where possible, fresh draws otherwise. */
  function reportAll(items) {
    if (!memo) {
      return Promise.resolve(freshReports(items));
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
            return memo.report(key, column(item[0], item[1]), slug, item[0].dataset.key, item[1]);
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

  form.addEventListener("input", function (event) {
    var fieldset = event.target.closest("fieldset.question[data-number]");
    if (fieldset && chosen(fieldset)) {
      markMissing(fieldset, false);
    }
  });

  form.addEventListener("change", function (event) {
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
    var invalid = [];
    fieldsets.forEach(function (fieldset) {
      var input = chosen(fieldset);
      var problem = numberProblem(fieldset);
      var isMissing = !problem && !input && fieldset.hasAttribute("data-required");
      markMissing(fieldset, isMissing || Boolean(problem), problem);
      if (problem) {
        invalid.push(fieldset);
      } else if (isMissing) {
        missing.push(fieldset);
      } else if (input && fieldset.hasAttribute("data-randomized")) {
        toReport.push([fieldset, Number(input.value)]);
      }
    });
    if (invalid.length > 0) {
      status.className = "alert";
      status.textContent = "A number is outside what the question accepts; it is marked below.";
      invalid[0].querySelector("input").focus();
      return;
    }
    if (missing.length > 0) {
      status.className = "alert";
      status.textContent =
        missing.length === 1
          ? "One required question has no answer yet; it is marked below."
          : missing.length + " required questions have no answer yet; they are marked below.";
      missing[0].querySelector("input").focus();
      return;
    }
    sending = true;
    button.disabled = true;
    status.className = "";
    status.textContent = "";
    reportAll(toReport)
      .then(function (reports) {
        toReport.forEach(function (item, i) {
          var field = item[0].querySelector("input[data-reported-for]");
          field.value = String(reports[i]);
          field.disabled = false;
        });
        HTMLFormElement.prototype.submit.call(form);
      })
      .catch(function () {
        sending = false;
        button.disabled = false;
        status.className = "alert";
        status.textContent = "Your answers could not be randomized, so nothing was sent. Please reload the page and try again.";
      });
  });

  // Coming back to this page from the browser's cache: let the form be used again, reports cleared.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) {
      sending = false;
      button.disabled = preview;
      form.querySelectorAll("input[data-reported-for]").forEach(function (field) {
        field.value = "";
        field.disabled = true;
      });
    }
  });

  button.disabled = preview;
})();
