/* The budget panel's pending rows.
 *
 * A build page computes the planning figures of only so many designs itself (each takes from a
 * millisecond to a quarter of a second, and a draft may have 200 of them); it marks the others
 * with the address of their figures (data-planning-url). This asks for them one at a time, in
 * order, and writes what the server answers into the row: every number is the server's, computed
 * by the privacy core. Without this script the row says where to see them (the question's page).
 */
(function () {
  "use strict";

  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-planning-url]"));

  function fill(row, figures) {
    Object.keys(figures.text).forEach(function (name) {
      var cell = row.querySelector("[data-figure='" + name + "']");
      if (cell) cell.textContent = figures.text[name];
    });
    row.classList.remove("planning-pending");
    row.removeAttribute("data-planning-url");
  }

  function next() {
    var row = rows.shift();
    if (!row) return;
    fetch(row.dataset.planningUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (figures) {
        if (figures && figures.text) fill(row, figures);
        next();
      })
      .catch(function () {
        /* the row keeps its link to the question's page */
      });
  }

  next();
})();
