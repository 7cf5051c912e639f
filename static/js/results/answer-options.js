/* The select of an answer follows the select of its question, before the form is sent.
 *
 * On the compare page (the share of which answer) and the regression page (which answer is the
 * outcome), the answers offered are those of the question chosen when the page was drawn. A select
 * marked data-answers-of="<id of the question's select>" carries every question's options in
 * data-answers (JSON: key → {options: [{code, label}], default}); when another question is picked
 * it offers that question's options, with the one the analysis takes by default chosen. Without
 * this script the server does the same on the next page (an answer of another question is
 * replaced by that question's default), so nothing depends on it.
 */
(function () {
  "use strict";

  Array.prototype.forEach.call(document.querySelectorAll("select[data-answers-of]"), function (answers) {
    var question = document.getElementById(answers.getAttribute("data-answers-of"));
    var byQuestion = JSON.parse(answers.getAttribute("data-answers"));
    if (!question) return;
    question.addEventListener("change", function () {
      var entry = byQuestion[question.value];
      if (!entry) return;
      answers.textContent = "";
      entry.options.forEach(function (option) {
        var element = document.createElement("option");
        element.value = String(option.code);
        element.textContent = option.label;
        element.selected = option.code === entry["default"];
        answers.appendChild(element);
      });
    });
  });
})();
