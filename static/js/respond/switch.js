/*
 * The language switch once answers are on the page: the page changes language in place, and every
 * answer stays where it is.
 *
 * Why in place. Following the switch's link reloads the page, and the answers are kept nowhere but
 * on it: never in storage (a true answer written to a browser's storage would outlive the page, and
 * on a shared device reach the next person), never sent (the true answer of a randomized question
 * never leaves the browser). So the page fetches itself in the other language (the link's own
 * address, ``?lang=``, which also sets the language's cookie; nothing else is sent) and carries that
 * page's words into this one: the two pages come from one template for one survey, so they have
 * the same elements in the same order, and only their texts and text attributes differ. What a
 * respondent did (the inputs' values and checks, an opened panel, a split ballot's arm, which is a
 * question shown or hidden) lives in the elements themselves and in the state attributes below,
 * which are never carried over; so do the submission key and a retry's body, in respond.js.
 *
 * All or nothing. The whole page is compared before anything changes. Where a part holding no
 * input differs in shape (an introduction with another number of paragraphs, a message respond.js
 * wrote), the part is replaced whole; where a part holding inputs differs, nothing is changed and
 * the promise is rejected, and the page says it could not change language without losing the
 * answers. Elements a script added (marked ``data-added``) are passed over.
 */
(function () {
  "use strict";

  /* What the respondent or the scripts set on an element: kept as it is on this page. ("name": respond.js
     names the never-sent true-answer radios so that they group.) */
  var STATE = {
    hidden: true,
    disabled: true,
    checked: true,
    selected: true,
    value: true,
    open: true,
    class: true,
    name: true,
    "aria-invalid": true,
  };
  var HOLDS_INPUT = "input, select, textarea, fieldset";

  function added(node) {
    return node.nodeType === 1 && node.hasAttribute("data-added");
  }

  function kids(node) {
    return Array.prototype.filter.call(node.childNodes, function (child) {
      return !added(child);
    });
  }

  function holdsInput(node) {
    return node.nodeType === 1 && (node.matches(HOLDS_INPUT) || node.querySelector(HOLDS_INPUT) !== null);
  }

  function attributes(old, fresh, changes) {
    Array.prototype.forEach.call(fresh.attributes, function (attribute) {
      if (!STATE[attribute.name] && old.getAttribute(attribute.name) !== attribute.value) {
        changes.push(function () {
          old.setAttribute(attribute.name, attribute.value);
        });
      }
    });
    Array.prototype.forEach.call(old.attributes, function (attribute) {
      if (!STATE[attribute.name] && !fresh.hasAttribute(attribute.name)) {
        changes.push(function () {
          old.removeAttribute(attribute.name);
        });
      }
    });
  }

  /* The changes that make ``old`` read as ``fresh``, added to ``changes``; false if it cannot be done
     without touching an input. */
  function plan(old, fresh, changes) {
    if (old.nodeType !== fresh.nodeType) {
      return false;
    }
    if (old.nodeType !== 1) {
      if (old.nodeValue !== fresh.nodeValue) {
        changes.push(function () {
          old.nodeValue = fresh.nodeValue;
        });
      }
      return true;
    }
    if (old.tagName !== fresh.tagName) {
      return false;
    }
    attributes(old, fresh, changes);
    if (old.tagName === "SCRIPT") {
      return true; // the same file: it ran once, and is not run again
    }
    var before = kids(old);
    var after = kids(fresh);
    var inside = [];
    var same = before.length === after.length;
    for (var i = 0; same && i < before.length; i++) {
      same = plan(before[i], after[i], inside);
    }
    if (same) {
      Array.prototype.push.apply(changes, inside);
      return true;
    }
    if (holdsInput(old) || holdsInput(fresh)) {
      return false;
    }
    changes.push(function () {
      before.forEach(function (child) {
        old.removeChild(child);
      });
      after.forEach(function (child) {
        old.appendChild(document.importNode(child, true));
      });
    });
    return true;
  }

  /* This page in the language of the switch's link ``href``: resolves once it reads in it, rejects
     (changing nothing) if it could not be fetched or carried over. */
  function translate(href) {
    return window
      .fetch(href, { credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("the page in that language: " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        var changes = [];
        if (!plan(document.documentElement, fresh.documentElement, changes)) {
          throw new Error("the page in that language differs in its inputs");
        }
        changes.forEach(function (change) {
          change();
        });
        window.history.replaceState(window.history.state, "", href); // a reload stays in the language
        document.dispatchEvent(new CustomEvent("survey:translated"));
      });
  }

  var switching = false;

  /* Follow the switch's ``link`` in place; if the page cannot, it says so (in its language) in the
     status line, as respond.js says what went wrong with a sending, and changes nothing else. */
  function follow(link) {
    if (switching || link.hasAttribute("aria-current")) {
      return;
    }
    switching = true;
    translate(link.href)
      .catch(function () {
        var status = document.getElementById("form-status");
        status.className = "alert";
        status.textContent = JSON.parse(document.getElementById("respond-words").dataset.words).switch_failed;
        if (status.scrollIntoView) {
          status.scrollIntoView({ block: "center" });
        }
      })
      .then(function () {
        switching = false;
      });
  }

  window.SurveySwitch = { follow: follow };
})();
