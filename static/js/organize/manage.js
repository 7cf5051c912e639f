/* Small enhancements of the management pages; each page works without them.
 *
 * - Copy buttons ([data-copy] names the input holding the text): copy it to the clipboard and say
 *   so in the status line beside it. Without this script the buttons stay hidden, and the link
 *   is in a read-only box to select and copy by hand.
 * - The address form: while the organizer types, ask the server whether the address is free
 *   (it answers "free" or "taken", never whose), and say so under the box.
 * - The print page's button opens the browser's print dialog.
 */
(function () {
  "use strict";

  function say(name, text) {
    var status = document.querySelector("[data-copy-status='" + name + "']");
    if (status) status.textContent = text;
  }

  function fallbackCopy(input) {
    input.focus();
    input.select();
    try {
      return document.execCommand("copy");
    } catch (error) {
      return false;
    }
  }

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var name = button.dataset.copy;
    var input = document.getElementById(name);
    if (!input) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = input.value;
      var copied = navigator.clipboard && window.isSecureContext
        ? navigator.clipboard.writeText(text).then(function () { return true; }, function () { return fallbackCopy(input); })
        : Promise.resolve(fallbackCopy(input));
      copied.then(function (ok) {
        say(name, ok ? "Link copied: " + text : "Copying did not work here: select the link and copy it.");
      });
    });
  });

  var form = document.getElementById("address-form");
  var box = form && form.elements.namedItem("slug");
  var line = document.getElementById("slug-check");
  if (form && box && line && window.fetch) {
    var timer = null;
    var latest = 0;
    var saved = box.value;
    box.addEventListener("input", function () {
      clearTimeout(timer);
      var wanted = box.value.trim().toLowerCase();
      if (wanted === saved) {
        line.textContent = "";
        box.removeAttribute("aria-invalid");
        return;
      }
      timer = setTimeout(function () {
        var ticket = ++latest;
        fetch(form.dataset.checkUrl + "?slug=" + encodeURIComponent(wanted), {
          credentials: "same-origin",
          headers: { Accept: "application/json" }
        })
          .then(function (response) { return response.json(); })
          .then(function (data) {
            if (ticket !== latest) return;
            line.textContent = data.message;
            line.classList.toggle("field-error", !data.available);
            if (data.available) box.removeAttribute("aria-invalid");
            else box.setAttribute("aria-invalid", "true");
          })
          .catch(function () {
            if (ticket === latest) line.textContent = "The address could not be checked now; saving will check it.";
          });
      }, 250);
    });
  }

  var print = document.getElementById("print-button");
  if (print) {
    print.hidden = false;
    print.addEventListener("click", function () { window.print(); });
  }
})();
