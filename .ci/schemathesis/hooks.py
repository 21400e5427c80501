"""Schemathesis hooks for Portico's demo server: valid credentials for every
published document, obtained the way a client obtains them.

- The client's own endpoints (token, revoke, pushed requests,
  introspection) take the demo client's Basic credentials; liveness and
  userinfo the access token.
- Dynamic client registration takes the initial access token the runner
  configured; the management of a registration (RFC 7592) a client
  registered for the case, by its id and registration access token.
- The report and permission APIs take `Authorization` + `Id-Token` from a
  real browser login of the demo user `ivan` (password, then the SMS code
  from the demo's dev outbox), exchanged at /oauth2/token with PKCE.
- The merchant API takes the demo merchant's key (the runner rotates it
  with `portico merchants rotate-key` and passes it on).
- The internal and admin APIs take the tokens the runner configured.

Environment: PORTICO_TEST_BASE (http://localhost:PORT, the demo's public URL), PORTICO_DATA_DIR (the demo
server's data folder, for the outbox), PORTICO_INTERNAL_TOKEN,
PORTICO_ADMIN_TOKEN, PORTICO_TEST_MERCHANT_KEY,
PORTICO_REGISTRATION__INITIAL_ACCESS_TOKEN.
"""

import base64
import hashlib
import json
import os
import re
import secrets
import time
import urllib.parse

import requests
import schemathesis

BASE = os.environ["PORTICO_TEST_BASE"]
DATA_DIR = os.environ["PORTICO_DATA_DIR"]
CLIENT_ID = "demo-app"
CLIENT_SECRET = "portico-demo-secret"
REDIRECT_URI = BASE + "/demo/callback"


def _view_data(html):
    match = re.search(r'<script id="viewData" type="application/json">(.*?)</script>', html, re.S)
    if not match:
        raise RuntimeError("the login page carries no view data")
    return json.loads(match.group(1))


def _last_code(phone, before):
    """The newest code sent to `phone` after `before` codes were (sending is asynchronous)."""
    path = os.path.join(DATA_DIR, "outbox.jsonl")
    for _ in range(100):
        if os.path.exists(path):
            with open(path, encoding="utf-8") as outbox:
                codes = [m["code"] for m in map(json.loads, filter(str.strip, outbox)) if m.get("to") == phone]
            if len(codes) > before:
                return codes[-1]
        time.sleep(0.05)
    raise RuntimeError(f"no code was sent to {phone}")


def _codes_sent(phone):
    path = os.path.join(DATA_DIR, "outbox.jsonl")
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as outbox:
        return sum(1 for m in map(json.loads, filter(str.strip, outbox)) if m.get("to") == phone)


def login(user, password, phone):
    """The demo client's whole flow for `user`: the token response."""
    browser = requests.Session()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urllib.parse.urlencode({
        "response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT_URI,
        "scope": "openid profile email phone", "state": secrets.token_hex(8),
        "code_challenge": challenge, "code_challenge_method": "S256",
    })
    started = browser.get(f"{BASE}/oauth2/authorize?{query}", allow_redirects=False)
    assert started.status_code == 303, started.status_code
    csrf = _view_data(browser.get(BASE + "/login").text)["pageData"]["authenticationFlowContext"]["csrf"]
    sent = _codes_sent(phone)
    step = browser.post(BASE + "/login", data={"_csrf": csrf, "principal": user, "credentials": password},
                        allow_redirects=False)
    if step.headers["location"] == "/login":  # a new device: the SMS code, sent when the step is shown
        browser.get(BASE + "/login")
        step = browser.post(BASE + "/login", data={"_csrf": csrf, "credentials": _last_code(phone, sent)},
                            allow_redirects=False)
    if step.headers["location"] == "/login":  # the offer to create a passkey: not now
        step = browser.post(BASE + "/login", data={"_csrf": csrf, "decline": "1"}, allow_redirects=False)
    back = browser.get(BASE + step.headers["location"], allow_redirects=False)
    assert back.status_code == 302, back.status_code
    code = urllib.parse.parse_qs(urllib.parse.urlparse(back.headers["location"]).query)["code"][0]
    tokens = requests.post(BASE + "/oauth2/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT_URI,
        "code_verifier": verifier, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
    })
    tokens.raise_for_status()
    return tokens.json()


def registered():
    """A client registered anew (RFC 7591): its id and registration access token."""
    response = requests.post(
        BASE + "/oauth2/register",
        json={"redirect_uris": ["https://rp.example/cb"], "client_name": "Schemathesis"},
        headers={"Authorization": "Bearer " + os.environ["PORTICO_REGISTRATION__INITIAL_ACCESS_TOKEN"]},
    )
    response.raise_for_status()
    client = response.json()
    return client["client_id"], client["registration_access_token"]


@schemathesis.auth(refresh_interval=240, retry_on=[])
class Credentials:
    """Each operation gets the credentials of its interface."""

    def get(self, case, context):
        return login("ivan", "ivan-password", "+79001234567")

    def set(self, case, data, context):
        path = case.operation.path
        case.headers = case.headers or {}
        if path.startswith("/internal/"):
            case.headers["Authorization"] = "Bearer " + os.environ["PORTICO_INTERNAL_TOKEN"]
        elif path.startswith("/admin/"):
            case.headers["Authorization"] = "Bearer " + os.environ["PORTICO_ADMIN_TOKEN"]
        elif path.startswith("/v1/notifications/"):
            case.headers["Authorization"] = "Bearer " + os.environ["PORTICO_TEST_MERCHANT_KEY"]
        elif path in ("/oauth2/token", "/oauth2/revoke", "/oauth2/par", "/oauth2/introspect"):
            basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            case.headers["Authorization"] = "Basic " + basic
        elif path == "/oauth2/register":
            case.headers["Authorization"] = "Bearer " + os.environ["PORTICO_REGISTRATION__INITIAL_ACCESS_TOKEN"]
        elif path.startswith("/oauth2/register/"):
            # Each case manages a registration of its own (a DELETE ends it).
            client_id, token = registered()
            case.path_parameters = {**(case.path_parameters or {}), "client_id": client_id}
            case.headers["Authorization"] = "Bearer " + token
        elif path in ("/oauth2/token/liveness", "/oauth2/userinfo"):
            case.headers["Authorization"] = "Bearer " + data["access_token"]
        elif path.startswith(("/api/", "/v1/reports/")):
            case.headers["Authorization"] = "Bearer " + data["access_token"]
            case.headers["Id-Token"] = data["id_token"]
        # The browser login and the authorize endpoint take no credentials: cookies, if any, are the case's own.
