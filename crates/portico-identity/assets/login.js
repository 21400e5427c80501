// The login and error pages' only script: the language switch (a header-only
// call the spec requires) and the countdown before a new code may be sent.
// Everything else works without it.
"use strict";
(function () {
  var data = document.getElementById("viewData");
  var view = data ? JSON.parse(data.textContent) : null;
  var context = view && (view.pageData.authenticationFlowContext || view.pageData.errorPageContext);

  // Without this script the buttons submit their form (POST on the same
  // path); with it, the contract's PATCH, then the page again.
  document.querySelectorAll("#language button").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!context) return;
      event.preventDefault();
      fetch("/login/user-settings/locale?locale=" + button.dataset.locale, {
        method: "PATCH", headers: { "X-XSRF-TOKEN": context.csrf }, credentials: "same-origin"
      }).then(function (response) { if (response.ok) location.reload(); });
    });
  });

  var resend = document.getElementById("resend");
  var hint = document.getElementById("resendHint");
  if (resend && hint) {
    // Without this script the button stays enabled and the server says how
    // long to wait; with it, the button waits out the countdown.
    var left = parseInt(resend.dataset.wait || "0", 10);
    var template = hint.dataset.template || "";
    resend.disabled = left > 0;
    var tick = function () {
      if (left <= 0) { resend.disabled = false; hint.textContent = ""; return; }
      hint.textContent = template.replace("{s}", String(left));
      left -= 1;
      setTimeout(tick, 1000);
    };
    tick();
  }
})();
