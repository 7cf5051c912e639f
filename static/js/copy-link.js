// The "Copy" button beside a link shown for passing on (survey.web.mailing). Hidden until this
// script finds a clipboard it may write to; without it, the link stays selectable in its box.
"use strict";
(function () {
  for (const button of document.querySelectorAll("button[data-copy-from]")) {
    const input = document.getElementById(button.dataset.copyFrom);
    const status = document.getElementById(button.dataset.copyStatus);
    if (!input || !navigator.clipboard || !window.isSecureContext) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(input.value);
        if (status) status.textContent = "Copied.";
      } catch (error) {
        input.focus();
        input.select();
        if (status) status.textContent = "Copying was refused: the link is selected, copy it with your keyboard.";
      }
    });
  }
  for (const input of document.querySelectorAll(".link-copy input[readonly]")) {
    input.addEventListener("focus", () => input.select());
  }
})();
