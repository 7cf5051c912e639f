/* The question form's live privacy preview.
 *
 * As the organizer types, this asks the server (GET /api/privacy/preview) what the privacy inputs
 * mean and puts the answer's sentences into the live region beside them. It holds no privacy
 * formula: every number and sentence comes from the server, computed by the privacy core, exactly
 * as the saved design will be. It also shows only the inputs that apply to the chosen kind and
 * design, and sends those: which inputs belong to which design is written on the page by the
 * server from its registry of designs (data-designs, data-input, data-level), so this script holds
 * no list of designs or parameters. Nor of kinds: what it needs of each (randomized or not, how many
 * options when they are not listed) is written on the form (data-kinds) from the registry of kinds,
 * and which blocks each kind shows (data-show-for-kind). A kind with a range (a randomized number) sends
 * its range instead of a number of options, and its figures (the mean's planned half-width in its
 * units, beside asking directly) go to the rows marked data-for-result="numbers". Without it the
 * form still works: the server renders the preview on every page load.
 */
(function () {
  "use strict";

  var form = document.getElementById("question-form");
  if (!form || !form.dataset.previewUrl || form.hasAttribute("data-frozen")) return;

  var region = document.getElementById("privacy-preview");
  var designs = JSON.parse(form.dataset.designsByKind || "{}");
  var kinds = JSON.parse(form.dataset.kinds || "{}");
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

  function forDesign(el, design) {
    return !el.dataset.designs || el.dataset.designs.split(" ").indexOf(design) >= 0;
  }

  /* The way the level is set: the checked choice, if the chosen design offers it; otherwise ε, or,
   * for a design that ε cannot set (a non-randomized one: its unrelated question's rate), its own. */
  function setBy(design) {
    var checked = form.querySelector("input[name='set_by']:checked");
    var row = checked && checked.closest("[data-designs]");
    if (checked && (!row || forDesign(row, design))) return checked.value;
    var ways = Array.prototype.filter.call(form.querySelectorAll("input[name='set_by']"), function (input) {
      var own = input.closest("[data-designs]");
      return !own || forDesign(own, design);
    });
    var values = ways.map(function (input) {
      return input.value;
    });
    return values.indexOf("epsilon") >= 0 || !values.length ? "epsilon" : values[0];
  }

  /* Show the inputs that apply; offer only the designs the kind allows. */
  function arrange() {
    var kind = value("kind");
    var design = form.elements.namedItem("design");
    var allowed = designs[kind] || [];
    Array.prototype.forEach.call(design.options, function (option) {
      option.disabled = allowed.indexOf(option.value) < 0;
    });
    if (design.selectedOptions.length && design.selectedOptions[0].disabled && allowed.length) {
      design.value = allowed[0];
    }
    form.querySelectorAll("[data-show-for-kind]").forEach(function (el) {
      el.hidden = el.dataset.showForKind.split(" ").indexOf(kind) < 0;
    });
    var privacy = document.getElementById("privacy-block");
    privacy.querySelectorAll("[data-designs]").forEach(function (el) {
      el.hidden = !forDesign(el, design.value);
    });
    var way = setBy(design.value);
    var checked = form.querySelector("input[name='set_by'][value='" + way + "']");
    if (checked) checked.checked = true;
    form.querySelectorAll("[data-level][data-input]").forEach(function (el) {
      form.elements.namedItem(el.dataset.input).readOnly = el.dataset.input !== way;
    });
  }

  /* What the preview API needs: the level as typed, and the chosen design's other inputs. */
  function params() {
    var kind = value("kind");
    var design = value("design");
    var way = setBy(design);
    var query = new URLSearchParams({
      design: design,
      kind: kind,
      n: form.dataset.n,
      margin: form.dataset.margin,
      allow_one_sided: value("allow_one_sided")
    });
    if (kinds[kind] && kinds[kind].ranged) {
      /* a number randomized on its range: the range instead of a number of options */
      query.set("minimum", value("minimum"));
      query.set("maximum", value("maximum"));
    } else {
      query.set("k", kinds[kind] && kinds[kind].options !== null ? String(kinds[kind].options) : String(optionCount()));
    }
    query.set("set_by", way);
    query.set(way, value(way));
    form.querySelectorAll("[data-input]:not([data-level])").forEach(function (el) {
      if (forDesign(el, design)) query.set(el.dataset.input, value(el.dataset.input));
    });
    return query;
  }

  /* The input an error is about is marked invalid and described by the error; the level input the
   * organizer did not type into is emptied, since it followed from a value that is refused now. */
  var invalid = null;

  function markInvalid(name) {
    if (invalid) {
      invalid.removeAttribute("aria-invalid");
      var ids = (invalid.getAttribute("aria-describedby") || "").split(" ").filter(function (id) {
        return id && id !== "preview-error";
      });
      if (ids.length) invalid.setAttribute("aria-describedby", ids.join(" "));
      else invalid.removeAttribute("aria-describedby");
      invalid.closest(".field") && invalid.closest(".field").classList.remove("has-error");
      invalid = null;
    }
    var input = name ? form.elements.namedItem(name) : null;
    if (!input || input instanceof RadioNodeList) return;
    input.setAttribute("aria-invalid", "true");
    var described = (input.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
    if (described.indexOf("preview-error") < 0) described.push("preview-error");
    input.setAttribute("aria-describedby", described.join(" "));
    input.closest(".field") && input.closest(".field").classList.add("has-error");
    invalid = input;
  }

  function clearDerived() {
    var way = setBy(value("design"));
    form.querySelectorAll("[data-level][data-input]").forEach(function (el) {
      if (el.dataset.input !== way && !el.hidden) form.elements.namedItem(el.dataset.input).value = "";
    });
  }

  function showError(data) {
    setText("error", data.message || data.error);
    piece("error").hidden = false;
    piece("figures").hidden = true;
    if (data.field) {
      markInvalid(data.field);
      clearDerived();
    }
  }

  function show(data) {
    piece("error").hidden = true;
    markInvalid(null);
    var result = data.result || "shares";
    region.querySelectorAll("[data-for-result]").forEach(function (el) {
      el.hidden = el.dataset.forResult !== result;
    });
    setText("epsilon", data.epsilon_text);
    setText("derived", data.derived.text);
    if (result === "numbers") {
      setText("number-margin", data.margin_text);
      setText("direct-margin", data.direct_margin_text);
      setText("number-needed", data.respondents_needed_text);
      setText("direct-needed", data.direct_respondents_needed_text);
    } else {
      setText("margin", data.margin_text);
      setText("needed", data.respondents_needed_text);
    }
    setText("design-effect", data.design_effect_text);
    setText("deniability", data.deniability);
    setText("description", data.description);
    setText("one-sided", data.one_sided_warning || "");
    piece("one-sided").hidden = !data.one_sided;
    piece("figures").hidden = false;
    var input = form.elements.namedItem(data.derived.name);
    if (input && data.derived.input) input.value = data.derived.input;
  }

  function update() {
    var kind = value("kind");
    if (!kinds[kind] || !kinds[kind].randomized) return;
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
        else showError(data);
      })
      .catch(function () {
        if (ticket === latest) {
          showError({ message: "The preview could not be updated; the server will check the values when you save." });
        }
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

  /* A preset unrelated question fills its words and "yes" rate (the form's inputs, still editable)
   * before the form's own listener asks for the preview. */
  var preset = document.getElementById("unrelated-preset");
  if (preset) {
    preset.addEventListener("change", function () {
      var option = preset.options[preset.selectedIndex];
      if (!option || !option.value) return;
      var text = form.elements.namedItem("unrelated_question");
      var rate = form.elements.namedItem("unrelated_rate");
      if (text) text.value = option.dataset.text;
      if (rate) rate.value = option.dataset.rate;
    });
  }

  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);
  arrange();
})();
