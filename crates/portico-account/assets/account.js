// The account page's one script: adding a passkey (WebAuthn needs a
// script). The page's challenge comes in #passkeyOptions; the new
// credential goes back as JSON in a plain form submission.
(function () {
  "use strict";
  var button = document.getElementById("passkeyAdd");
  var field = document.getElementById("passkeyCredential");
  var data = document.getElementById("passkeyOptions");
  if (!button || !field || !data || !window.PublicKeyCredential || !navigator.credentials) return;
  var b64 = function (buffer) {
    var text = "";
    new Uint8Array(buffer).forEach(function (b) { text += String.fromCharCode(b); });
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };
  var bytes = function (text) {
    var raw = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
    return Uint8Array.from(raw, function (c) { return c.charCodeAt(0); });
  };
  var creation = JSON.parse(data.textContent);
  button.disabled = false;
  button.addEventListener("click", function () {
    var key = Object.assign({}, creation.publicKey);
    key.challenge = bytes(key.challenge);
    key.user = Object.assign({}, key.user, { id: bytes(key.user.id) });
    key.excludeCredentials = (key.excludeCredentials || []).map(function (c) {
      return Object.assign({}, c, { id: bytes(c.id) });
    });
    navigator.credentials.create({ publicKey: key }).then(function (credential) {
      var r = credential.response;
      field.value = JSON.stringify({
        id: credential.id, rawId: b64(credential.rawId), type: credential.type,
        response: {
          attestationObject: b64(r.attestationObject), clientDataJSON: b64(r.clientDataJSON),
          transports: r.getTransports ? r.getTransports() : undefined
        },
        extensions: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {}
      });
      field.form.submit();
    }).catch(function () {
      document.getElementById("addFailed").hidden = false;
    });
  });
})();
