/*
 * The respondent's form. On submit, each randomized question's true answer (a radio button with no
 * name, owned by a form that is never sent) is replaced by a reported value drawn from the column of
 * the question's matrix for that answer; only those reported values are posted. Directly asked
 * questions post their answer as given.
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

  // Group each question's true-answer radios (arrow keys, one choice) inside the never-sent form.
  fieldsets.forEach(function (fieldset) {
    if (fieldset.hasAttribute("data-randomized")) {
      fieldset.querySelectorAll("input[data-true-answer]").forEach(function (input) {
        input.name = "truth-" + fieldset.dataset.key;
      });
    }
  });

  function chosen(fieldset) {
    var selector = fieldset.hasAttribute("data-randomized")
      ? "input[data-true-answer]:checked"
      : "input[name='q_" + fieldset.dataset.key + "']:checked";
    return fieldset.querySelector(selector);
  }

  function markMissing(fieldset, missing) {
    fieldset.classList.toggle("missing", missing);
    var error = document.getElementById("error-" + fieldset.dataset.key);
    if (error) {
      error.hidden = !missing;
    }
  }

  form.addEventListener("change", function (event) {
    var fieldset = event.target.closest("fieldset.question");
    if (fieldset && chosen(fieldset)) {
      markMissing(fieldset, false);
    }
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var missing = [];
    var toReport = [];
    fieldsets.forEach(function (fieldset) {
      var input = chosen(fieldset);
      var isMissing = !input && fieldset.hasAttribute("data-required");
      markMissing(fieldset, isMissing);
      if (isMissing) {
        missing.push(fieldset);
      } else if (input && fieldset.hasAttribute("data-randomized")) {
        toReport.push([fieldset, Number(input.value)]);
      }
    });
    if (missing.length > 0) {
      status.className = "alert";
      status.textContent =
        missing.length === 1
          ? "One required question has no answer yet; it is marked below."
          : missing.length + " required questions have no answer yet; they are marked below.";
      missing[0].querySelector("input").focus();
      return;
    }
    toReport.forEach(function (item) {
      var fieldset = item[0];
      var columns = JSON.parse(fieldset.dataset.columns);
      var reported = window.SurveyRandomizer.sample(columns[item[1]]);
      var field = fieldset.querySelector("input[data-reported-for]");
      field.value = String(reported);
      field.disabled = false;
    });
    button.disabled = true;
    status.className = "";
    status.textContent = "";
    HTMLFormElement.prototype.submit.call(form);
  });

  button.disabled = false;
})();
