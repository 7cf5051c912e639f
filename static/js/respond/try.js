/*
 * "Try it": the randomizer on a made-up answer, as often as the respondent likes, before answering.
 *
 * People come to believe in a procedure they cannot watch by watching it. Under each randomized
 * question (inside its "How? Try it" panel) the respondent picks a made-up answer and presses
 * "Randomize": the page draws what would be sent with the very code that draws the real report
 * (SurveyRandomizer.sample on the question's column, SurveyNumbers.report for a number: fresh draws
 * from crypto.getRandomValues, never the memo, so trying reveals nothing of a memoized report) and
 * shows it, with a tally of every try so far. Nothing is sent and nothing is stored: the controls
 * have no name and the tally lives in this page only (tests/test_privacy_network.py watches the
 * network while trying). The words are the template's; this script only fills in labels and counts.
 */
(function () {
  "use strict";

  if (!window.SurveyRandomizer) {
    return;
  }

  function label(select, code) {
    var option = select.querySelector("option[value='" + code + "']");
    return option ? option.textContent : String(code);
  }

  /* A number as the page shows it: at most one decimal. */
  function shown(x) {
    return String(Math.round(x * 10) / 10);
  }

  function setUp(box) {
    var fieldset = box.closest("fieldset.question");
    var answer = box.querySelector("[data-try]");
    var button = box.querySelector("[data-try-button]");
    var out = box.querySelector("[data-try-out]");
    var tally = box.querySelector("[data-try-tally]");
    var number = fieldset.hasAttribute("data-number");
    if (number && !window.SurveyNumbers) {
      return; // the number sampler is not on the page: the panel stays hidden
    }
    var counts = {}; // report label -> how many tries sent it (options)
    var recent = []; // the last few numbers drawn (numbers)
    var tries = 0;

    function draw() {
      if (number) {
        var typed = Number(answer.value.trim());
        if (answer.value.trim() === "" || !isFinite(typed)) {
          answer.setAttribute("aria-invalid", "true");
          return;
        }
        answer.removeAttribute("aria-invalid");
        var sampler = window.SurveyNumbers.samplerFrom(fieldset.dataset);
        var value = shown(window.SurveyNumbers.valueOf(sampler, window.SurveyNumbers.report(sampler, typed)));
        recent.unshift(value);
        recent = recent.slice(0, 5);
        tries += 1;
        out.textContent = value;
        tally.textContent = String(tries);
        box.querySelector("[data-try-recent]").textContent = recent.join(", ");
      } else {
        var column = JSON.parse(fieldset.dataset.columns)[Number(answer.value)];
        var sent = label(answer, window.SurveyRandomizer.sample(column));
        counts[sent] = (counts[sent] || 0) + 1;
        tries += 1;
        out.textContent = "“" + sent + "”";
        tally.textContent = Array.prototype.map
          .call(answer.options, function (option) {
            return "“" + option.textContent + "” " + (counts[option.textContent] || 0);
          })
          .join(", ");
      }
      out.closest(".try-sent").hidden = false;
      tally.closest(".try-tally").hidden = false;
    }

    button.addEventListener("click", draw);
    // Enter in the made-up number tries it; it must never send the survey's form.
    answer.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault();
        draw();
      }
    });
    // A new made-up answer starts a new tally.
    answer.addEventListener("change", function () {
      counts = {};
      recent = [];
      tries = 0;
      out.closest(".try-sent").hidden = true;
      tally.closest(".try-tally").hidden = true;
    });
    box.hidden = false;
  }

  Array.prototype.forEach.call(document.querySelectorAll("fieldset[data-randomized] [data-try-for]"), setUp);
})();
