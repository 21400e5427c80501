// The login and error pages' only script: the language switch (a header-only
// call the spec requires), the countdown before a new code may be sent, and
// passkeys (WebAuthn needs a script). Everything else works without it.
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

  // Passkeys: the first page's sign-in (its button, and the browser's
  // autofill on the login field) and the passkey step. The credential goes
  // back as JSON in a plain form submission.
  var b64 = function (buffer) {
    var text = "";
    new Uint8Array(buffer).forEach(function (b) { text += String.fromCharCode(b); });
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };
  var bytes = function (text) {
    var raw = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
    return Uint8Array.from(raw, function (c) { return c.charCodeAt(0); });
  };
  var webauthn = context && window.PublicKeyCredential && navigator.credentials;

  // The offer to create a passkey after the login: the new credential goes
  // back as JSON in the step's form; "Not now" is a plain submission.
  var createButton = document.getElementById("passkeyCreate");
  var newField = document.getElementById("passkeyNewCredential");
  var creation = view && view.pageData.stepViewData && view.pageData.stepViewData.passkeyCreationOptions;
  if (createButton && newField && webauthn && creation) {
    createButton.disabled = false;
    createButton.addEventListener("click", function () {
      var key = Object.assign({}, creation.publicKey);
      key.challenge = bytes(key.challenge);
      key.user = Object.assign({}, key.user, { id: bytes(key.user.id) });
      key.excludeCredentials = (key.excludeCredentials || []).map(function (c) {
        return Object.assign({}, c, { id: bytes(c.id) });
      });
      navigator.credentials.create({ publicKey: key }).then(function (credential) {
        var r = credential.response;
        newField.value = JSON.stringify({
          id: credential.id, rawId: b64(credential.rawId), type: credential.type,
          response: {
            attestationObject: b64(r.attestationObject), clientDataJSON: b64(r.clientDataJSON),
            transports: r.getTransports ? r.getTransports() : undefined
          },
          extensions: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {}
        });
        newField.form.submit();
      }).catch(function () {
        var failed = document.getElementById("enrolFailed");
        if (failed) failed.hidden = false;
      });
    });
  }

  var passkeyButton = document.getElementById("passkeyLogin");
  var passkeyField = document.getElementById("passkeyCredential");
  if (passkeyButton && passkeyField && webauthn) {
    var publicKey = function (options) {
      var key = Object.assign({}, options.publicKey);
      key.challenge = bytes(key.challenge);
      key.allowCredentials = (key.allowCredentials || []).map(function (c) {
        return Object.assign({}, c, { id: bytes(c.id) });
      });
      return key;
    };
    var asJson = function (credential) {
      var r = credential.response;
      return JSON.stringify({
        id: credential.id, rawId: b64(credential.rawId), type: credential.type,
        response: {
          authenticatorData: b64(r.authenticatorData), clientDataJSON: b64(r.clientDataJSON),
          signature: b64(r.signature), userHandle: r.userHandle ? b64(r.userHandle) : null
        },
        extensions: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {}
      });
    };
    var step = view.pageData.stepViewData;
    var given = step && step.passkeyRequestOptions;
    var fetchOptions = function () {
      return fetch("/login/passkey/options", {
        method: "POST", headers: { "X-XSRF-TOKEN": context.csrf }, credentials: "same-origin"
      }).then(function (response) {
        if (!response.ok) throw new Error("no passkey sign-in here");
        return response.json();
      });
    };
    var pending = null;
    var ask = function (options, mediation) {
      if (pending) pending.abort();
      pending = new AbortController();
      return navigator.credentials.get({ publicKey: publicKey(options), mediation: mediation, signal: pending.signal })
        .then(function (credential) {
          if (!credential) return;
          passkeyField.value = asJson(credential);
          passkeyField.form.submit();
        });
    };
    passkeyField.form.hidden = false;
    passkeyButton.disabled = false;
    passkeyButton.addEventListener("click", function () {
      (given ? Promise.resolve(given) : fetchOptions())
        .then(function (options) { return ask(options, "optional"); })
        .catch(function () { /* cancelled, or no passkey: the other ways stay */ });
    });
    if (!given && PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
        if (available) return fetchOptions().then(function (options) { return ask(options, "conditional"); });
      }).catch(function () { /* the button stays */ });
    }
  }
})();
