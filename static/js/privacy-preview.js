/* The question form's live privacy preview.
 *
 * As the organizer types, this asks the server (GET /api/privacy/preview) what the privacy inputs
 * mean and puts the answer's sentences into the live region beside them. It holds no privacy
 * formula: every number and sentence comes from the server, computed by the privacy core, exactly
 * as the saved design will be. It also shows only the inputs that apply to the chosen kind and
 * design. Without it the form still works: the server renders the preview on every page load.
 */
(function () {
  "use strict";

  var form = document.getElementById("question-form");
  if (!form || !form.dataset.previewUrl || form.hasAttribute("data-frozen")) return;

  var region = document.getElementById("privacy-preview");
  var designs = JSON.parse(form.dataset.designs || "{}");
  var DELAY = 150;
  var timer = null;
  var latest = 0;

  function value(name) {
    var checked = form.querySelector("input[name='" + name + "']:checked");
    if (checked) return checked.value;
    var el = form.elements.namedItem(name);
    if (!el || el instanceof RadioNodeList) return "";
    if (el.type === "checkbox") return el.checked ? "1" : "";
    return el.value;
  }

  function optionCount() {
    return form.elements.namedItem("options").value.split("\n").filter(function (line) {
      return line.trim() !== "";
    }).length;
  }

  function piece(name) {
    return region.querySelector("[data-preview='" + name + "']");
  }

  function setText(name, text) {
    var el = piece(name);
    if (el.textContent !== text) el.textContent = text;
  }

  /* Show the inputs that apply; offer only the designs the kind allows. */
  function arrange() {
    var kind = value("kind");
    var design = form.elements.namedItem("design");
    var allowed = designs[kind] || [];
    Array.prototype.forEach.call(design.options, function (option) {
      option.disabled = option.value !== "keep" && allowed.indexOf(option.value) < 0;
    });
    if (design.selectedOptions.length && design.selectedOptions[0].disabled && allowed.length) {
      design.value = allowed[0];
    }
    form.querySelectorAll("[data-show-for-kind]").forEach(function (el) {
      el.hidden = el.dataset.showForKind.split(" ").indexOf(kind) < 0;
    });
    form.querySelectorAll("[data-show-for-design]").forEach(function (el) {
      el.hidden = el.dataset.showForDesign.split(" ").indexOf(design.value) < 0;
    });
    var setBy = value("set_by") || "epsilon";
    ["epsilon", "truth_probability"].forEach(function (name) {
      form.elements.namedItem(name).readOnly = name !== setBy;
    });
  }

  function params() {
    var kind = value("kind");
    var setBy = value("set_by") || "epsilon";
    var design = value("design");
    var query = new URLSearchParams({
      design: design,
      kind: kind,
      k: kind === "choice" ? String(optionCount()) : "2",
      n: form.dataset.n,
      margin: form.dataset.margin,
      allow_one_sided: value("allow_one_sided")
    });
    query.set(setBy, value(setBy));
    if (design === "coin_flip") query.set("yes_probability", value("yes_probability"));
    return query;
  }

  function showError(message) {
    setText("error", message);
    piece("error").hidden = false;
    piece("figures").hidden = true;
  }

  function show(data) {
    piece("error").hidden = true;
    setText("epsilon", data.epsilon_text);
    setText("derived", data.derived.text);
    setText("margin", data.margin_text);
    setText("needed", data.respondents_needed_text);
    setText("design-effect", data.design_effect_text);
    setText("deniability", data.deniability);
    setText("description", data.description);
    setText("one-sided", data.one_sided_warning || "");
    piece("one-sided").hidden = !data.one_sided;
    piece("figures").hidden = false;
    var other = data.set_by === "epsilon" ? "truth_probability" : "epsilon";
    var input = form.elements.namedItem(other);
    if (data.derived.value !== null) input.value = String(Number(data.derived.value.toPrecision(6)));
  }

  function update() {
    var kind = value("kind");
    if (kind !== "yes_no" && kind !== "choice") return;
    var ticket = ++latest;
    region.setAttribute("aria-busy", "true");
    fetch(form.dataset.previewUrl + "?" + params().toString(), {
      credentials: "same-origin",
      headers: { Accept: "application/json" }
    })
      .then(function (response) {
        return response.json();
      })
      .then(function (data) {
        if (ticket !== latest) return; /* a newer request is on its way */
        if (data.ok) show(data);
        else showError(data.error);
      })
      .catch(function () {
        if (ticket === latest) showError("The preview could not be updated; the server will check the values when you save.");
      })
      .then(function () {
        if (ticket === latest) region.removeAttribute("aria-busy");
      });
  }

  function schedule(event) {
    var name = event.target && event.target.name;
    if (name === "text" || name === "help_text" || name === "key") return;
    arrange(); /* what is shown follows at once; only the question to the server waits */
    clearTimeout(timer);
    timer = setTimeout(update, DELAY);
  }

  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);
  arrange();
})();
