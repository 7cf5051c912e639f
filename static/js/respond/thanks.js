/*
 * The thank-you page right after sending shows what was sent for each randomized question (the
 * reports as the server received them; never a true answer). It is shown this once: when the page
 * is left, the list is taken out of it, so that a page the browser keeps for its back button (its
 * back-forward cache) holds none of it for the next person at a shared device. The server sends
 * that page with "no-store" too.
 */
(function () {
  "use strict";

  window.addEventListener("pagehide", function () {
    var sent = document.getElementById("what-was-sent");
    if (sent) {
      sent.remove();
    }
  });
})();
