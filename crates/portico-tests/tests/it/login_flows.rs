//! Every login flow of PRODUCT.md over HTTP, on both backends: the steps,
//! their view data, one-time codes through the dev outbox, their limits by
//! the injected clock, CAPTCHA, lockout, device trust and consent.

use portico_model::clock::Clock as _;
use portico_tests::{Pkce, TestApp, backends, code_from, demo, location, location_param, view_data};
use serde_json::{Value, json};
use time::Duration;

/// One browser walking one login.
struct Flow<'a> {
    app: &'a TestApp,
    browser: reqwest::Client,
    pkce: Pkce,
    csrf: String,
}

impl<'a> Flow<'a> {
    async fn start(app: &'a TestApp, extra: &[(&str, Option<&str>)]) -> Flow<'a> {
        Self::start_in(app, app.browser(), extra).await
    }

    async fn start_in(app: &'a TestApp, browser: reqwest::Client, extra: &[(&str, Option<&str>)]) -> Flow<'a> {
        let pkce = Pkce::new();
        let authorize = app.authorize_url(&pkce, extra);
        let response = browser.get(&authorize).send().await.unwrap();
        assert_eq!(response.status(), 303, "to /login");
        let mut flow = Flow { app, browser, pkce, csrf: String::new() };
        let view = flow.view().await;
        flow.csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
        flow
    }

    /// A new login in a new browser, switched to the `phone` step.
    async fn by_phone(app: &'a TestApp) -> Flow<'a> {
        let flow = Self::start(app, &[]).await;
        flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        flow
    }

    async fn view(&self) -> Value {
        let page = self.browser.get(self.app.url("/login")).send().await.unwrap();
        assert_eq!(page.status(), 200);
        view_data(&page.text().await.unwrap())
    }

    async fn errors(&self) -> Value {
        self.view().await["pageData"]["errors"].clone()
    }

    async fn step(&self) -> Value {
        self.view().await["pageData"]["stepViewData"].clone()
    }

    async fn post_to(&self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        let mut body = vec![("_csrf", self.csrf.as_str())];
        body.extend_from_slice(form);
        self.browser.post(self.app.url(path)).form(&body).send().await.unwrap()
    }

    async fn post(&self, form: &[(&str, &str)]) -> reqwest::Response {
        self.post_to("/login", form).await
    }

    /// Posts and expects 303 back to `/login`.
    async fn post_ok(&self, form: &[(&str, &str)]) {
        let response = self.post(form).await;
        assert_eq!(response.status(), 303);
        assert_eq!(location(&response), "/login", "{form:?}");
    }

    /// Submits the last code sent to `to`; returns where the login goes.
    async fn enter_code(&self, to: &str) -> String {
        let code = self.app.last_code(to);
        let response = self.post(&[("credentials", &code)]).await;
        assert_eq!(response.status(), 303);
        location(&response)
    }

    /// From a completed login: authorize again, exchange the code, return the token response.
    async fn finish(&self, location_after: &str) -> Value {
        assert!(location_after.starts_with("/oauth2/authorize?"), "completed: {location_after}");
        let response = self.browser.get(self.app.url(location_after)).send().await.unwrap();
        assert_eq!(response.status(), 302);
        let code = code_from(&response, &self.app.redirect_uri());
        let response = self.app.exchange(&code, &self.pkce.verifier).await;
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

fn claims(jwt: &str) -> Value {
    portico_tests::jwt_claims(jwt)
}

#[tokio::test]
async fn password_then_sms_on_a_new_device_and_no_second_factor_once_trusted() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        let step = flow.step().await;
        assert_eq!(
            keys(&step),
            ["emailDeliveryAvailable", "smsOtpAddressView", "smsOtpProcessId", "stepType", "viewType"],
            "{backend:?}"
        );
        assert_eq!(step["stepType"], "sms-otp");
        assert_eq!(step["viewType"], "secondFactor");
        assert_eq!(step["smsOtpAddressView"], "+7 *** ***-45-67");
        assert_eq!(step["emailDeliveryAvailable"], true);
        let sent = app.outbox();
        assert_eq!(sent.len(), 1, "one code, made at the page view");
        assert_eq!(keys(&sent[0]), ["at", "channel", "code", "text", "to"]);
        assert_eq!(sent[0]["channel"], "sms");
        let code = sent[0]["code"].as_str().unwrap();
        assert!(code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()));
        assert!(sent[0]["text"].as_str().unwrap().contains(code));
        flow.step().await;
        assert_eq!(app.outbox().len(), 1, "showing the page again sends nothing");

        let next = flow.enter_code("+79001234567").await;
        let tokens = flow.finish(&next).await;
        let id = claims(tokens["id_token"].as_str().unwrap());
        assert_eq!(id["preferred_username"], "ivan");
        assert_eq!(id["amr"], serde_json::json!(["pwd", "sms", "mfa"]), "what the user did");
        let refreshed = app
            .token_request(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ])
            .await;
        let refreshed: Value = refreshed.json().await.unwrap();
        assert_eq!(claims(refreshed["id_token"].as_str().unwrap())["amr"], id["amr"], "kept across refreshes");

        // The device is trusted now: a new login (prompt=login) skips the SMS.
        let again = Flow::start_in(&app, flow.browser.clone(), &[("prompt", Some("login"))]).await;
        let response = again.post(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        assert!(location(&response).starts_with("/oauth2/authorize?"), "no second factor on a trusted device");
        let tokens = again.finish(&location(&response)).await;
        assert_eq!(claims(tokens["id_token"].as_str().unwrap())["amr"], serde_json::json!(["pwd"]));
        // Another browser (another device) gets the SMS step again.
        let other = Flow::start(&app, &[]).await;
        other.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        assert_eq!(other.step().await["stepType"], "sms-otp");
    }
}

/// A user's trusted devices are bounded (`login.max_trusted_devices_per_user`):
/// a login that trusts one beyond the bound forgets the least recently
/// trusted, whose next login asks a code again; the newer stays trusted.
#[tokio::test]
async fn trusting_a_device_beyond_the_bound_forgets_the_least_recently_trusted() {
    for backend in backends() {
        let app = TestApp::spawn_with(backend, |c| c.login.max_trusted_devices_per_user = 1).await;
        let mut browsers = Vec::new();
        for _ in 0..2 {
            let flow = Flow::start(&app, &[]).await;
            flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
            assert_eq!(flow.step().await["stepType"], "sms-otp", "{backend:?}: a new device");
            let next = flow.enter_code("+79001234567").await;
            flow.finish(&next).await;
            browsers.push(flow.browser.clone());
            app.clock.advance(time::Duration::minutes(1));
        }
        let app = &app;
        let again = |browser| async move {
            let flow = Flow::start_in(app, browser, &[("prompt", Some("login"))]).await;
            let response = flow.post(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
            location(&response)
        };
        assert!(again(browsers[1].clone()).await.starts_with("/oauth2/authorize?"), "{backend:?}: the newer trusted");
        assert_eq!(again(browsers[0].clone()).await, "/login", "{backend:?}: the older asks a code again");
    }
}

#[tokio::test]
async fn the_second_factor_can_switch_to_e_mail() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        flow.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        let response = flow.post_to("/login/user-settings/otp-method", &[("otpMethod", "email")]).await;
        assert_eq!(response.status(), 303);
        assert_eq!(location(&response), "/login");
        let step = flow.step().await;
        assert_eq!(keys(&step), ["emailOtpProcessId", "stepType", "viewType"], "{backend:?}");
        assert_eq!(step["stepType"], "email-otp");
        assert_eq!(step["viewType"], "secondFactor");
        assert_eq!(app.outbox().last().unwrap()["channel"], "email");
        // The SMS code sent before no longer counts.
        let sms = app.last_code("+79007654321");
        let email = app.last_code("maria@example.com");
        if sms != email {
            let response = flow.post(&[("credentials", &sms)]).await;
            assert_eq!(location(&response), "/login");
            assert_eq!(
                flow.view().await["pageData"]["errors"]["credentialsError"],
                "challenge.email-otp.wrong-credentials"
            );
        }
        let next = flow.enter_code("maria@example.com").await;
        let tokens = flow.finish(&next).await;
        let id = claims(tokens["id_token"].as_str().unwrap());
        assert_eq!(id["email"], "maria@example.com");
        assert_eq!(id["amr"], serde_json::json!(["pwd", "otp", "mfa"]));

        // Invalid otpMethod: the error page.
        let flow = Flow::start(&app, &[]).await;
        let response = flow.post_to("/login/user-settings/otp-method", &[("otpMethod", "pigeon")]).await;
        assert_eq!(location(&response), "/error");
        // Unavailable switch (not at the SMS step): nothing changes.
        let flow = Flow::start(&app, &[]).await;
        let response = flow.post_to("/login/user-settings/otp-method", &[("otpMethod", "email")]).await;
        assert_eq!(location(&response), "/login");
        assert_eq!(flow.step().await["stepType"], "username-password");
    }
}

#[tokio::test]
async fn every_code_step_has_a_way_back_and_e_mail_switches_back_to_sms() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        // The password method's second factor: start over, or e-mail and back.
        let flow = Flow::start(&app, &[]).await;
        flow.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        let html = page_html(&flow).await;
        assert!(html.contains("id=\"startOver\"") && html.contains("id=\"useEmail\""), "{backend:?}: {html}");
        assert!(!html.contains("id=\"useSms\""), "already SMS");
        let response = flow.post_to("/login/user-settings/otp-method", &[("otpMethod", "sms")]).await;
        assert_eq!(location(&response), "/login", "{backend:?}: not available on the SMS step, nothing changes");
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        let sent = app.outbox().len();
        flow.post_to("/login/user-settings/otp-method", &[("otpMethod", "email")]).await;
        assert!(page_html(&flow).await.contains("id=\"useSms\""), "{backend:?}: the e-mail step offers SMS");
        let response = flow.post_to("/login/user-settings/otp-method", &[("otpMethod", "sms")]).await;
        assert_eq!(location(&response), "/login");
        let step = flow.step().await;
        assert_eq!((step["stepType"].as_str(), step["viewType"].as_str()), (Some("sms-otp"), Some("secondFactor")));
        let channels: Vec<Value> = app.outbox()[sent..].iter().map(|m| m["channel"].clone()).collect();
        assert_eq!(channels, ["email", "sms"], "{backend:?}: a new code by SMS");
        let next = flow.enter_code("+79007654321").await;
        flow.finish(&next).await;

        // Start over: the same request, from the first step.
        let flow = Flow::start(&app, &[]).await;
        flow.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        let response = flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PASSWORD")]).await;
        assert_eq!(location(&response), "/login");
        assert_eq!(flow.step().await["stepType"], "username-password", "{backend:?}");

        // The phone method's code step: change the number, or use the password.
        let flow = Flow::start(&app, &[]).await;
        flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        flow.post_ok(&[("principal", "+79001234567")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        let html = page_html(&flow).await;
        assert!(html.contains("id=\"changeNumber\"") && html.contains("id=\"usePassword\""), "{backend:?}");
        flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        assert_eq!(flow.step().await["stepType"], "phone", "{backend:?}: back to the number");
        flow.post_ok(&[("principal", "+79001234567")]).await;
        flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PASSWORD")]).await;
        assert_eq!(flow.step().await["stepType"], "username-password", "{backend:?}: the password method");
    }
}

#[tokio::test]
async fn the_phone_method_on_an_unknown_device_asks_sms_then_password() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        let response = flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        assert_eq!(location(&response), "/login");
        let step = flow.step().await;
        assert_eq!(keys(&step), ["captchaRequired", "principal", "stepType", "viewType"], "{backend:?}");
        assert_eq!(step["stepType"], "phone");

        flow.post_ok(&[("principal", "not a number")]).await;
        assert_eq!(flow.view().await["pageData"]["errors"]["principalError"], "challenge.phone.wrong-credentials");
        flow.post_ok(&[("principal", "8 (900) 123-45-67")]).await;
        let step = flow.step().await;
        assert_eq!(step["stepType"], "sms-otp");
        assert_eq!(step["viewType"], "default");
        assert_eq!(step["emailDeliveryAvailable"], false);
        assert_eq!(flow.enter_code("+79001234567").await, "/login");
        let step = flow.step().await;
        assert_eq!(keys(&step), ["captchaRequired", "stepType", "viewType"]);
        assert_eq!(step["stepType"], "password");
        assert_eq!(step["viewType"], "unknownDevice");
        let response = flow.post(&[("credentials", "ivan-password")]).await;
        let tokens = flow.finish(&location(&response)).await;
        assert_eq!(claims(tokens["id_token"].as_str().unwrap())["preferred_username"], "ivan");

        // Now trusted: the password step is plain.
        let again = Flow::start_in(&app, flow.browser.clone(), &[("prompt", Some("login"))]).await;
        again.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        again.post_ok(&[("principal", "+79001234567")]).await;
        assert_eq!(again.step().await["stepType"], "sms-otp", "a code sent");
        assert_eq!(again.enter_code("+79001234567").await, "/login");
        let step = again.step().await;
        assert_eq!((&step["stepType"], &step["viewType"]), (&json!("password"), &json!("default")), "{backend:?}");

        // A bad method: the error page.
        let response = again.post_to("/login/user-settings/auth-method", &[("authMethod", "TELEPATHY")]).await;
        assert_eq!(location(&response), "/error");
    }
}

#[tokio::test]
async fn unknown_phone_numbers_from_one_address_put_the_phone_step_behind_a_captcha_across_processes() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let limit = app.identity.settings.guard.address_captcha_after;
        assert!(
            limit > app.identity.settings.phone_captcha_after_failures,
            "one number per process stays below its own"
        );
        // One unknown number in each new process: no process reaches its own
        // CAPTCHA, but the address counts them all.
        for n in 1..limit {
            let flow = Flow::by_phone(&app).await;
            assert_eq!(flow.step().await["captchaRequired"], false, "{backend:?}: number {n}");
            flow.post_ok(&[("principal", &format!("+7999{n:07}"))]).await;
            let view = flow.view().await["pageData"].clone();
            assert_eq!(view["errors"]["principalError"], "challenge.phone.wrong-credentials", "{backend:?}");
            assert_eq!(view["stepViewData"]["captchaRequired"], false, "{backend:?}: number {n}");
        }
        // A customer's number is no failure: it goes on to the code and is
        // taken back from the count.
        let flow = Flow::by_phone(&app).await;
        flow.post_ok(&[("principal", "+79001234567")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp", "{backend:?}");
        let flow = Flow::by_phone(&app).await;
        assert_eq!(flow.step().await["captchaRequired"], false, "{backend:?}: still below");
        flow.post_ok(&[("principal", "+79990000000")]).await;
        assert_eq!(flow.step().await["captchaRequired"], true, "{backend:?}: the last number before the CAPTCHA");

        // Every new process from the address now shows the CAPTCHA, and the
        // step checks no number without one, not even a customer's.
        let flow = Flow::by_phone(&app).await;
        assert_eq!(flow.step().await["captchaRequired"], true, "{backend:?}: a new process sees it");
        let sent = app.outbox().len();
        flow.post_ok(&[("principal", "+79001234567")]).await;
        let view = flow.view().await["pageData"].clone();
        assert_eq!(view["errors"]["otherError"], "challenge.captcha.required", "{backend:?}");
        assert_eq!(view["stepViewData"]["stepType"], "phone");
        assert_eq!(app.outbox().len(), sent, "{backend:?}: no code without the CAPTCHA");
        flow.post_ok(&[("principal", "+79001234567"), ("smart-token", "forged")]).await;
        assert_eq!(flow.errors().await["otherError"], "challenge.captcha.required", "{backend:?}");
        let captcha = portico_identity::captcha::DEV_TOKEN;
        flow.post_ok(&[("principal", "+79001234567"), ("smart-token", captcha)]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp", "{backend:?}: with the CAPTCHA");

        // The count is forgotten a day after its last failure.
        app.clock.advance(Duration::hours(24) + Duration::seconds(1));
        let flow = Flow::by_phone(&app).await;
        assert_eq!(flow.step().await["captchaRequired"], false, "{backend:?}: forgotten");
    }
}

#[tokio::test]
async fn a_shared_phone_and_a_user_without_phone_login_divert_to_passwords() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        flow.post_ok(&[("principal", "+7 900 555-12-34")]).await;
        let step = flow.step().await;
        assert_eq!(step["stepType"], "username-password", "{backend:?}");
        assert_eq!(step["viewType"], "phoneDuplicated");
        assert_eq!(step["phoneNumberView"], "+7 *** ***-12-34");
        assert!(app.outbox().is_empty(), "no code to a shared number");
        flow.post_ok(&[("principal", "elena"), ("credentials", "elena-password")]).await;
        let step = flow.step().await;
        assert_eq!((step["stepType"].as_str(), step["viewType"].as_str()), (Some("sms-otp"), Some("secondFactor")));
        let tokens = flow.finish(&flow.enter_code("+79005551234").await).await;
        assert_eq!(claims(tokens["id_token"].as_str().unwrap())["preferred_username"], "elena");

        let flow = Flow::start(&app, &[]).await;
        flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        flow.post_ok(&[("principal", "+79008889900")]).await;
        let step = flow.step().await;
        assert_eq!(step["stepType"], "password");
        assert_eq!(step["viewType"], "phoneAuthNotAllowed");
        flow.post_ok(&[("credentials", "kirill-password")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        let tokens = flow.finish(&flow.enter_code("+79008889900").await).await;
        assert_eq!(claims(tokens["id_token"].as_str().unwrap())["preferred_username"], "kirill");
    }
}

#[tokio::test]
async fn one_time_codes_expire_run_out_of_tries_and_are_limited_per_process() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        flow.step().await;
        let phone = "+79001234567";
        let first = app.last_code(phone);
        let wrong = if first == "000000" { "111111" } else { "000000" };

        // Three wrong tries spend the code; the right one no longer works.
        for _ in 0..2 {
            flow.post_ok(&[("credentials", wrong)]).await;
            assert_eq!(flow.errors().await["credentialsError"], "challenge.sms-otp.wrong-credentials", "{backend:?}");
        }
        flow.post_ok(&[("credentials", wrong)]).await;
        assert_eq!(flow.errors().await["credentialsError"], "challenge.sms-otp.code-expired");
        flow.post_ok(&[("credentials", &first)]).await;
        assert_eq!(flow.errors().await["credentialsError"], "challenge.sms-otp.code-expired");

        // A new code only after the wait.
        flow.post_ok(&[("resend", "1")]).await;
        assert_eq!(flow.errors().await["otherError"], "authentication.sms-otp.resend-too-early");
        app.clock.advance(Duration::seconds(61));
        flow.post_ok(&[("resend", "1")]).await;
        flow.step().await;
        assert_eq!(app.outbox().len(), 2);

        // A code expires after five minutes.
        app.clock.advance(Duration::minutes(5));
        let second = app.last_code(phone);
        flow.post_ok(&[("credentials", &second)]).await;
        assert_eq!(flow.errors().await["credentialsError"], "challenge.sms-otp.code-expired");

        // Codes 3, 4 and 5; then the process may send no more.
        for n in 3..=5 {
            flow.post_ok(&[("resend", "1")]).await;
            flow.step().await;
            assert_eq!(app.outbox().len(), n);
            app.clock.advance(Duration::seconds(61));
        }
        flow.post_ok(&[("resend", "1")]).await;
        assert_eq!(flow.errors().await["otherError"], "authentication.sms-otp.process-limit-exceeded");
        // Wrong tries on the last code end the process. (They are the
        // user's fourth and fifth wrong codes: the fifth pauses code entry,
        // across processes, for 30 s; see the next test.)
        for _ in 0..2 {
            flow.post_ok(&[("credentials", wrong)]).await;
        }
        app.clock.advance(Duration::seconds(31));
        let response = flow.post(&[("credentials", wrong)]).await;
        assert_eq!(location(&response), "/error");
        let page = flow.browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap();
        let error = view_data(&page);
        assert_eq!(error["pageData"]["errorDetails"]["errorCode"], "challenge.sms-otp.attempts-exceeded");
        assert_eq!(error["pageData"]["errorDetails"]["actions"][0]["action"], "RETRY_LOGIN");
    }
}

/// Wrong codes count across login processes: whoever knows the password
/// cannot start process after process to guess the second factor.
#[tokio::test]
async fn wrong_codes_pause_code_entry_across_login_processes_but_not_on_the_owners_trusted_device() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let phone = "+79007654321";
        let wrong_for = |right: &str| if right == "000000" { "111111" } else { "000000" }.to_owned();
        // The owner trusts this browser: a login with the second factor.
        let owner = app.browser();
        app.login_for_code(&owner, &Pkce::new(), "maria", "maria-password").await;

        // A stranger with the password: three wrong codes spend the first
        // process's code...
        let first = Flow::start(&app, &[]).await;
        first.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        assert_eq!(first.step().await["stepType"], "sms-otp", "{backend:?}");
        let wrong = wrong_for(&app.last_code(phone));
        for _ in 0..3 {
            first.post_ok(&[("credentials", &wrong)]).await;
        }
        assert_eq!(first.errors().await["credentialsError"], "challenge.sms-otp.code-expired", "{backend:?}");
        // ...and a new process does not start the count again.
        let second = Flow::start(&app, &[]).await;
        second.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        assert_eq!(second.step().await["stepType"], "sms-otp");
        let right = app.last_code(phone);
        let wrong = wrong_for(&right);
        second.post_ok(&[("credentials", &wrong)]).await;
        let html = page_html(&second).await;
        assert!(html.contains("Осталось попыток до паузы: 1."), "warned: {backend:?}");
        second.post_ok(&[("credentials", &wrong)]).await;
        let html = page_html(&second).await;
        assert_eq!(view_data(&html)["pageData"]["errors"]["credentialsError"], "challenge.sms-otp.wrong-credentials");
        assert!(html.contains("Ввод кода с этого устройства приостановлен до"), "{backend:?}");

        // The fifth wrong code paused code entry: even the right code is
        // not checked, and it spends no try of the code.
        second.post_ok(&[("credentials", &right)]).await;
        assert_eq!(second.errors().await["otherError"], "challenge.sms-otp.temporarily-paused", "{backend:?}");
        let third = Flow::start(&app, &[]).await;
        third.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        third.step().await;
        let response = third.post(&[("credentials", &app.last_code(phone))]).await;
        assert_eq!(location(&response), "/login", "{backend:?}: paused in every process");
        assert_eq!(third.errors().await["otherError"], "challenge.sms-otp.temporarily-paused");
        let failed: Vec<_> = app
            .store
            .recent_audit(100)
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == "login.failed" && e.detail["step"] == "sms-otp")
            .collect();
        assert_eq!(failed.len(), 5, "{backend:?}: every wrong code audited once");
        assert_eq!(failed.iter().filter(|e| e.detail.get("pausedUntil").is_some()).count(), 1);

        // The owner's trusted browser is not paused by the stranger's codes.
        let trusted = Flow::start_in(&app, owner, &[("prompt", Some("login"))]).await;
        trusted.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
        trusted.post_ok(&[("principal", phone)]).await;
        assert_eq!(trusted.step().await["stepType"], "sms-otp", "{backend:?}: a code sent");
        assert_eq!(trusted.enter_code(phone).await, "/login", "{backend:?}");
        let view = trusted.view().await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "password", "{backend:?}: the code passed: {view}");

        // After the pause, the second process's last try is still there.
        app.clock.advance(Duration::seconds(31));
        let response = second.post(&[("credentials", &right)]).await;
        let tokens = second.finish(&location(&response)).await;
        assert_eq!(claims(tokens["id_token"].as_str().unwrap())["preferred_username"], "maria", "{backend:?}");
        // The right code started the user's count again.
        let user = app.store.find_user_by_login("maria").await.unwrap().unwrap();
        let now = app.clock.now();
        let key = app.store.throttle(&format!("code:{}", user.id), now - Duration::hours(24), now).await.unwrap();
        assert_eq!((key.failures, key.locked_until), (0, None), "{backend:?}");
    }
}

/// Codes sent to one user count across login processes: nobody who knows a
/// user's phone number can have Portico send them code after code.
#[tokio::test]
async fn codes_sent_to_a_user_pause_across_processes_until_a_right_code_but_not_to_the_owners_trusted_device() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let phone = "+79001234567";
        let limit = app.identity.settings.guard.send_delay_after as usize;
        // The owner trusts this browser (its code was sent and entered).
        let owner = app.browser();
        app.login_for_code(&owner, &Pkce::new(), "ivan", "ivan-password").await;
        let sent = app.outbox().len();
        let phone_login = async |browser: reqwest::Client| {
            let flow = Flow::start_in(&app, browser, &[("prompt", Some("login"))]).await;
            flow.post_to("/login/user-settings/auth-method", &[("authMethod", "PHONE")]).await;
            flow.post_ok(&[("principal", phone)]).await;
            flow
        };
        for n in 1..=limit {
            let flow = phone_login(app.browser()).await;
            assert!(flow.step().await["smsOtpProcessId"].is_string(), "{backend:?}: code {n}");
            assert_eq!(app.outbox().len(), sent + n, "{backend:?}");
        }
        // The tenth code paused sending for 30 s: a new process gets no
        // code, and its page says until when.
        let flow = phone_login(app.browser()).await;
        let html = page_html(&flow).await;
        let view = view_data(&html);
        assert_eq!(view["pageData"]["errors"]["otherError"], "authentication.sms-otp.send-paused", "{backend:?}");
        assert!(view["pageData"]["stepViewData"]["smsOtpProcessId"].is_null());
        assert!(html.contains("Новый код можно будет получить после"), "{backend:?}");
        // Asking again sends nothing either.
        flow.post_ok(&[("resend", "1")]).await;
        assert_eq!(flow.errors().await["otherError"], "authentication.sms-otp.send-paused");
        assert_eq!(app.outbox().len(), sent + limit, "{backend:?}");
        // The owner's trusted browser still gets its code.
        let trusted = phone_login(owner).await;
        assert!(trusted.step().await["smsOtpProcessId"].is_string(), "{backend:?}: the owner is not paused");
        assert_eq!(app.outbox().len(), sent + limit + 1);

        // After the pause a code goes out, and pauses sending again, longer.
        app.clock.advance(Duration::seconds(31));
        assert!(flow.step().await["smsOtpProcessId"].is_string(), "{backend:?}");
        assert_eq!(app.outbox().len(), sent + limit + 2);
        let other = phone_login(app.browser()).await;
        assert_eq!(other.errors().await["otherError"], "authentication.sms-otp.send-paused", "{backend:?}");
        // A right code starts the count again: the next login gets its code.
        assert_eq!(flow.enter_code(phone).await, "/login");
        assert_eq!(flow.step().await["stepType"], "password", "{backend:?}");
        let next = phone_login(app.browser()).await;
        assert!(next.step().await["smsOtpProcessId"].is_string(), "{backend:?}: sending again");
    }
}

/// The HTML of the current login page.
async fn page_html(flow: &Flow<'_>) -> String {
    flow.browser.get(flow.app.url("/login")).send().await.unwrap().text().await.unwrap()
}

#[tokio::test]
async fn three_wrong_passwords_require_a_captcha_and_from_the_fifth_each_failure_pauses_with_a_warning_before() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        for _ in 0..3 {
            flow.post_ok(&[("principal", "maria"), ("credentials", "wrong")]).await;
        }
        let response = flow.post(&[("principal", "maria"), ("credentials", "wrong")]).await;
        let cookies: Vec<&str> = response.headers().get_all("set-cookie").iter().map(|v| v.to_str().unwrap()).collect();
        assert!(cookies.iter().any(|c| c.starts_with("svc.captcha.required=true")), "{cookies:?}");
        let view = flow.view().await;
        assert_eq!(view["pageData"]["stepViewData"]["captchaRequired"], true, "{backend:?}");
        assert_eq!(view["pageData"]["errors"]["otherError"], "challenge.captcha.required");
        // Without the CAPTCHA even the right password is not checked.
        flow.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        assert_eq!(flow.view().await["pageData"]["errors"]["otherError"], "challenge.captcha.required");
        flow.post_ok(&[("principal", "maria"), ("credentials", "maria-password"), ("smart-token", "forged")]).await;
        assert_eq!(flow.view().await["pageData"]["errors"]["otherError"], "challenge.captcha.required");
        // A fresh browser sees the CAPTCHA the server will demand of it.
        let other = Flow::start(&app, &[]).await;
        other.post_ok(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        assert_eq!(other.view().await["pageData"]["stepViewData"]["captchaRequired"], true, "no dead end");

        // With the CAPTCHA the password is checked; the fourth failure warns
        // that one is left before a pause.
        let captcha = portico_identity::captcha::DEV_TOKEN;
        flow.post_ok(&[("principal", "maria"), ("credentials", "wrong"), ("smart-token", captcha)]).await;
        let html = page_html(&flow).await;
        assert!(html.contains("Осталось попыток до паузы: 1."), "warned: {backend:?}");
        assert_eq!(
            view_data(&html)["pageData"]["errors"]["credentialsError"],
            "challenge.username-password.wrong-credentials"
        );
        // The fifth pauses password attempts on the account for 30 s; the
        // page says until when. It is not an operator's block.
        flow.post_ok(&[("principal", "maria"), ("credentials", "wrong"), ("smart-token", captcha)]).await;
        let html = page_html(&flow).await;
        assert!(html.contains("приостановлен до"), "{backend:?}");
        let flow = Flow::start(&app, &[]).await;
        let response =
            flow.post(&[("principal", "maria"), ("credentials", "maria-password"), ("smart-token", captcha)]).await;
        assert_eq!(location(&response), "/login", "a pause is not the error page");
        assert_eq!(flow.errors().await["otherError"], "challenge.username-password.temporarily-paused");
        // Once it is over, the right password passes; the next pause would be longer.
        app.clock.advance(Duration::seconds(31));
        flow.post_ok(&[("principal", "maria"), ("credentials", "maria-password"), ("smart-token", captcha)]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp", "{backend:?}");
    }
}

/// The guard's refusals (a CAPTCHA due, a pause running) and the pauses it
/// sets are on `/metrics`, on both backends.
#[tokio::test]
async fn captcha_refusals_and_pauses_are_counted_on_metrics() {
    use super::ops::{scrape, sum};
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let url = app.url("/metrics");
        let before = scrape(&url).await;
        let flow = Flow::start(&app, &[]).await;
        for _ in 0..3 {
            flow.post_ok(&[("principal", "maria"), ("credentials", "wrong")]).await;
        }
        // A CAPTCHA is due: refused without one.
        flow.post_ok(&[("principal", "maria"), ("credentials", "wrong")]).await;
        let captcha = portico_identity::captcha::DEV_TOKEN;
        for _ in 0..2 {
            flow.post_ok(&[("principal", "maria"), ("credentials", "wrong"), ("smart-token", captcha)]).await;
        }
        // The fifth failure paused the account: the next attempt is refused.
        flow.post_ok(&[("principal", "maria"), ("credentials", "maria-password"), ("smart-token", captcha)]).await;
        assert_eq!(flow.errors().await["otherError"], "challenge.username-password.temporarily-paused");

        let after = scrape(&url).await;
        let grew = |name: &str, labels: &[(&str, &str)]| sum(&after, name, labels) - sum(&before, name, labels);
        assert!(grew("portico_login_guard_refusals_total", &[("reason", "captcha")]) >= 1.0, "{backend:?}: {after}");
        assert!(grew("portico_login_guard_refusals_total", &[("reason", "paused")]) >= 1.0, "{backend:?}");
        assert!(grew("portico_login_pauses_total", &[("key", "account")]) >= 1.0, "{backend:?}");
        assert!(grew("portico_logins_total", &[("method", "PASSWORD"), ("outcome", "failed")]) >= 5.0);
    }
}

#[tokio::test]
async fn pauses_grow_and_strangers_failures_never_pause_the_owner_on_a_trusted_device() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        // The owner trusts this browser: a login with the second factor.
        let owner = app.browser();
        let pkce = Pkce::new();
        app.login_for_code(&owner, &pkce, "maria", "maria-password").await;

        // A stranger fails ten times, solving the CAPTCHA and waiting out each pause.
        let captcha = portico_identity::captcha::DEV_TOKEN;
        let mut pauses = Vec::new();
        for _ in 0..10 {
            // A login process lasts 15 minutes: the stranger starts anew each time.
            let stranger = Flow::start(&app, &[]).await;
            stranger.post_ok(&[("principal", "maria"), ("credentials", "wrong"), ("smart-token", captcha)]).await;
            let user = app.store.find_user_by_login("maria").await.unwrap().unwrap();
            let key = format!("account:{}", user.id);
            let state = app.store.throttle(&key, app.clock.now() - Duration::hours(24), app.clock.now()).await.unwrap();
            if let Some(until) = state.locked_until.filter(|until| *until > app.clock.now()) {
                pauses.push((until - app.clock.now()).whole_seconds());
                app.clock.advance(until - app.clock.now() + Duration::seconds(1));
            }
        }
        assert_eq!(pauses, [30, 60, 120, 240, 480, 960], "pauses double from the fifth failure: {backend:?}");

        // Now paused again for the stranger's account key...
        let stranger = Flow::start(&app, &[]).await;
        stranger.post_ok(&[("principal", "maria"), ("credentials", "wrong"), ("smart-token", captcha)]).await;
        let fresh = Flow::start(&app, &[]).await;
        fresh.post_ok(&[("principal", "maria"), ("credentials", "maria-password"), ("smart-token", captcha)]).await;
        assert_eq!(fresh.errors().await["otherError"], "challenge.username-password.temporarily-paused", "{backend:?}");
        // ...while the owner's trusted browser signs in at once, without a
        // CAPTCHA (the page may offer one: the address has failed often, and
        // the page cannot know who will type; the server does not demand it).
        let trusted = Flow::start_in(&app, owner, &[("prompt", Some("login"))]).await;
        let response = trusted.post(&[("principal", "maria"), ("credentials", "maria-password")]).await;
        assert!(location(&response).starts_with("/oauth2/authorize?"), "{backend:?}: {}", location(&response));
    }
}

#[tokio::test]
async fn consent_is_asked_remembered_narrowed_forced_and_declinable() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let partner = [("client_id", Some(demo::CONSENT_CLIENT_ID))];
        let flow = Flow::start(&app, &partner).await;
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        assert_eq!(flow.enter_code("+79001234567").await, "/login");
        let step = flow.step().await;
        assert_eq!(
            keys(&step),
            ["availableScopeGroups", "clientName", "clientUri", "policyUri", "stepType", "tosUri", "viewType"],
            "{backend:?}"
        );
        assert!(["clientUri", "policyUri", "tosUri"].iter().all(|k| step[k].is_null()), "{backend:?}: none named");
        assert_eq!(step["stepType"], "consent");
        assert_eq!(step["clientName"], "Партнёрское приложение");
        assert_eq!(step["availableScopeGroups"], "profile,email,phone");
        let html = page_html(&flow).await;
        assert_eq!(html.matches("name=\"selected_scope_groups\"").count(), 3);
        assert_eq!(html.matches(" checked>").count(), 3, "first shown: every box ticked");
        flow.post_ok(&[("selected_scope_groups", "")]).await;
        let html = page_html(&flow).await;
        assert_eq!(view_data(&html)["pageData"]["errors"]["otherError"], "challenge.consent.nothing-selected");
        assert_eq!(
            html.matches(" checked>").count(),
            0,
            "the user's choice (none) is kept, not every box ticked again"
        );
        let response = flow.post(&[("selected_scope_groups", "profile,email,admin")]).await;
        let next = location(&response);
        assert!(next.starts_with("/oauth2/authorize?"));
        let response = flow.browser.get(app.url(&next)).send().await.unwrap();
        let code = code_from(&response, &app.redirect_uri());
        let response = app
            .http()
            .post(app.url("/oauth2/token"))
            .basic_auth(demo::CONSENT_CLIENT_ID, Some(demo::CONSENT_CLIENT_SECRET))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("code_verifier", &flow.pkce.verifier),
                ("redirect_uri", &app.redirect_uri()),
            ])
            .send()
            .await
            .unwrap();
        let tokens: Value = response.json().await.unwrap();
        assert_eq!(tokens["scope"], "openid profile email", "narrowed to what was granted");

        // Remembered: the SSO session gets a code at once.
        let pkce = Pkce::new();
        let granted = [partner[0], ("scope", Some("openid profile email"))];
        let response = flow.browser.get(app.authorize_url(&pkce, &granted)).send().await.unwrap();
        assert_eq!(response.status(), 302, "{}", location(&response));
        // ... unless a group was not granted yet, or prompt=consent forces it.
        let response = flow
            .browser
            .get(app.authorize_url(&pkce, &[partner[0], ("scope", Some("openid phone"))]))
            .send()
            .await
            .unwrap();
        assert_eq!(location(&response), "/login");
        let step = flow.step().await;
        assert_eq!(step["stepType"], "consent");
        assert_eq!(step["availableScopeGroups"], "phone");
        let response = flow
            .browser
            .get(app.authorize_url(&pkce, &[partner[0], ("prompt", Some("consent"))]))
            .send()
            .await
            .unwrap();
        assert_eq!(location(&response), "/login");
        // prompt=none when consent is needed: consent_required.
        let none = [partner[0], ("scope", Some("openid phone")), ("prompt", Some("none"))];
        let response = flow.browser.get(app.authorize_url(&pkce, &none)).send().await.unwrap();
        assert_eq!(location_param(&response, "error").as_deref(), Some("consent_required"));

        // Declining ends the login with consent.denied and a way back to the client.
        let flow = Flow::start_in(&app, flow.browser.clone(), &[partner[0], ("prompt", Some("consent"))]).await;
        let response = flow.post(&[("deny", "1")]).await;
        assert_eq!(location(&response), "/error");
        let page = flow.browser.get(app.url("/error")).send().await.unwrap().text().await.unwrap();
        let details = &view_data(&page)["pageData"]["errorDetails"];
        assert_eq!(details["errorCode"], "consent.denied");
        assert_eq!(details["actions"][0]["action"], "REDIRECT");
        assert!(details["actions"][0]["url"].as_str().unwrap().contains("error=access_denied"));
    }
}

/// `prompt` is a set (OpenID Connect Core §3.1.2.1): `login consent`, in
/// either order and with `select_account` for `login`, passes over the
/// single sign-on session and asks for consent again after the login.
#[tokio::test]
async fn prompt_login_consent_asks_for_a_login_then_for_consent() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let partner = ("client_id", Some(demo::CONSENT_CLIENT_ID));
        let flow = Flow::start(&app, &[partner]).await;
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        assert_eq!(flow.enter_code("+79001234567").await, "/login");
        assert_eq!(flow.step().await["stepType"], "consent");
        let response = flow.post(&[("selected_scope_groups", "profile,email,phone")]).await;
        let response = flow.browser.get(app.url(&location(&response))).send().await.unwrap();
        code_from(&response, &app.redirect_uri());
        // Granted and signed in: the next request gets a code at once.
        let response = flow.browser.get(app.authorize_url(&Pkce::new(), &[partner])).send().await.unwrap();
        assert_eq!(response.status(), 302, "{backend:?}: {}", location(&response));

        for prompt in ["login consent", "consent select_account"] {
            let again = Flow::start_in(&app, flow.browser.clone(), &[partner, ("prompt", Some(prompt))]).await;
            assert_eq!(again.step().await["stepType"], "username-password", "{backend:?} {prompt}: a login first");
            // The browser is trusted since the first login: no SMS code.
            let response = again.post(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
            assert_eq!(location(&response), "/login", "{backend:?} {prompt}");
            let step = again.step().await;
            assert_eq!(step["stepType"], "consent", "{backend:?} {prompt}: then consent, granted before or not");
            assert_eq!(step["availableScopeGroups"], "profile,email,phone");
            let response = again.post(&[("selected_scope_groups", "profile")]).await;
            let response = again.browser.get(app.url(&location(&response))).send().await.unwrap();
            code_from(&response, &app.redirect_uri());
        }
    }
}

#[tokio::test]
async fn parallel_requests_cannot_exceed_the_code_limits() {
    use portico_model::clock::Clock as _;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        let id = flow.view().await["pageData"]["authenticationFlowContext"]["authenticationFlowId"]
            .as_str()
            .unwrap()
            .parse::<portico_model::ids::LoginProcessId>()
            .unwrap();
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        // Eight parallel page views of the SMS step: one code.
        let views: Vec<_> = (0..8).map(|_| flow.browser.get(app.url("/login")).send()).collect();
        for view in views {
            let status = view.await.unwrap().status().as_u16();
            assert!(status == 200 || status == 303, "{status}");
        }
        assert_eq!(app.outbox().len(), 1, "{backend:?}: exactly one code");
        // Twelve parallel wrong codes: no more than three tries are spent.
        let right = app.last_code("+79001234567");
        let wrong = if right == "000000" { "111111" } else { "000000" };
        let form = [("_csrf", flow.csrf.as_str()), ("credentials", wrong)];
        let posts: Vec<_> = (0..12).map(|_| flow.browser.post(app.url("/login")).form(&form).send()).collect();
        for post in posts {
            assert_eq!(post.await.unwrap().status(), 303);
        }
        let process = app.store.find_login_process(id, app.clock.now()).await.unwrap().unwrap();
        let failures = process.state.otp.as_ref().map_or(0, |otp| otp.failures);
        assert!((1..=3).contains(&failures), "{failures} tries spent");
        assert_eq!(process.state.step, portico_model::login::StepType::SmsOtp, "nothing advanced");
    }
}

#[tokio::test]
async fn other_steps_fields_replays_and_oversized_fields_never_advance() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let flow = Flow::start(&app, &[]).await;
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        // The password step's submission, replayed at the SMS step: a wrong code.
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        let view = flow.view().await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp", "{backend:?}");
        assert_eq!(view["pageData"]["errors"]["credentialsError"], "challenge.sms-otp.wrong-credentials");
        // Fields of the consent step are ignored here.
        flow.post_ok(&[("selected_scope_groups", "profile"), ("deny", "1")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp");
        // An oversized submission ends on the error page, never a 500.
        let huge = "9".repeat(20_000);
        let response = flow.post(&[("credentials", &huge)]).await;
        assert_eq!(response.status(), 303);
        assert_eq!(location(&response), "/error");
        // Replaying the whole login against a completed process goes on to authorize only.
        let done = Flow::start(&app, &[]).await;
        done.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        done.step().await;
        let next = done.enter_code("+79001234567").await;
        assert!(next.starts_with("/oauth2/authorize?"));
        let replay = done.post(&[("credentials", "000000")]).await;
        assert_eq!(location(&replay), next, "a completed process only goes back to authorize");
    }
}

/// The `Set-Cookie` headers of a response, as (name, cleared) pairs.
fn set_cookies(response: &reqwest::Response) -> Vec<(String, bool)> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|value| {
            let text = value.to_str().unwrap();
            let name = text.split('=').next().unwrap().to_owned();
            (name, text.contains("Max-Age=0"))
        })
        .collect()
}

fn sets(cookies: &[(String, bool)], name: &str) -> bool {
    cookies.iter().any(|(n, cleared)| n == name && !cleared)
}

fn clears(cookies: &[(String, bool)], name: &str) -> bool {
    cookies.iter().any(|(n, cleared)| n == name && *cleared)
}

#[tokio::test]
async fn every_login_cookie_is_set_and_cleared_where_the_state_table_says() {
    let app = TestApp::spawn(backends()[0]).await;
    let browser = app.browser();
    let pkce = Pkce::new();

    // no process → authorize: process created, 303 to /login, cookies set.
    let response = browser.get(app.authorize_url(&pkce, &[])).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let c = set_cookies(&response);
    for name in ["authentication_flow", "XSRF-TOKEN", "login_client_entry", "svc.device.deviceId"] {
        assert!(sets(&c, name), "authorize sets {name}: {c:?}");
    }
    let flow = Flow { app: &app, browser: browser.clone(), pkce, csrf: String::new() };
    let view = flow.view().await;
    let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
    let flow = Flow { csrf, ..flow };

    // input invalid → same step; step_error_details set, then cleared by the page.
    let mut last = None;
    for _ in 0..3 {
        last = Some(flow.post(&[("principal", "ivan"), ("credentials", "wrong")]).await);
    }
    let c = set_cookies(last.as_ref().unwrap());
    assert!(sets(&c, "step_error_details") && sets(&c, "svc.captcha.required"), "{c:?}");
    let page = flow.browser.get(app.url("/login")).send().await.unwrap();
    assert!(clears(&set_cookies(&page), "step_error_details"), "shown once");

    // input valid, steps remain → next step; the failure hints are cleared.
    let captcha = portico_identity::captcha::DEV_TOKEN;
    let response =
        flow.post(&[("principal", "ivan"), ("credentials", "ivan-password"), ("smart-token", captcha)]).await;
    assert_eq!(location(&response), "/login");
    let c = set_cookies(&response);
    assert!(clears(&c, "svc.captcha.required") && clears(&c, "step_error_details"), "{c:?}");
    flow.step().await;

    // all steps finished → 303 to authorize; the SSO session starts.
    let code = app.last_code("+79001234567");
    let response = flow.post(&[("credentials", &code)]).await;
    assert!(location(&response).starts_with("/oauth2/authorize?"));
    assert!(sets(&set_cookies(&response), "svc.session"));
    // authorize with the completed process: the code, and the process cookies cleared.
    let response = flow.browser.get(app.url(&location(&response))).send().await.unwrap();
    assert_eq!(response.status(), 302);
    let c = set_cookies(&response);
    assert!(clears(&c, "authentication_flow") && clears(&c, "login_client_entry"), "{c:?}");

    // CSRF failure → /error with error_page_details and failed_authentication_flow_id;
    // GET /error reads and clears error_page_details; restart clears the failed id.
    let other = Flow::start(&app, &[("prompt", Some("login"))]).await;
    let response = other.browser.post(app.url("/login")).form(&[("_csrf", "forged")]).send().await.unwrap();
    assert_eq!(location(&response), "/error");
    let c = set_cookies(&response);
    assert!(sets(&c, "error_page_details") && sets(&c, "failed_authentication_flow_id"), "{c:?}");
    assert!(clears(&c, "authentication_flow"));
    let page = other.browser.get(app.url("/error")).send().await.unwrap();
    let c = set_cookies(&page);
    assert!(clears(&c, "error_page_details") && sets(&c, "XSRF-TOKEN"), "{c:?}");
    let again = other.browser.get(app.url("/error")).send().await.unwrap();
    assert_eq!(again.status(), 200, "the page stays while its process lives");
    assert!(!sets(&set_cookies(&again), "error_page_details"), "the cookie is not set again");
    let restart = other.browser.get(app.url("/login/restart")).send().await.unwrap();
    assert_eq!(restart.status(), 302);
    assert!(location(&restart).starts_with("/oauth2/authorize?"), "the original request is restored");
    assert!(clears(&set_cookies(&restart), "failed_authentication_flow_id"));
    let gone = other.browser.get(app.url("/error")).send().await.unwrap();
    assert_eq!(gone.status(), 302, "after the restart there is no error to show");

    // process expired, login_client_entry valid → 302 to the client; cookies cleared.
    let expired = Flow::start(&app, &[("prompt", Some("login"))]).await;
    app.clock.advance(Duration::minutes(16));
    let response = expired.browser.get(app.url("/login")).send().await.unwrap();
    assert_eq!(response.status(), 302);
    assert!(location(&response).starts_with(&app.redirect_uri()));
    assert_eq!(location_param(&response, "error").as_deref(), Some("access_denied"));
    let c = set_cookies(&response);
    assert!(clears(&c, "authentication_flow") && clears(&c, "login_client_entry"), "{c:?}");
    // process missing, no login_client_entry → the default logout page.
    let response = app.browser().get(app.url("/login")).send().await.unwrap();
    assert_eq!(response.status(), 302);
    assert!(location(&response).ends_with("/logged-out"));
}

#[tokio::test]
async fn a_tampered_login_client_entry_is_ignored() {
    let app = TestApp::spawn(backends()[0]).await;
    let response = app.browser().get(app.authorize_url(&Pkce::new(), &[])).send().await.unwrap();
    let entry = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("login_client_entry="))
        .unwrap();
    let value = entry.trim_start_matches("login_client_entry=").split(';').next().unwrap().to_owned();
    let plain = app.http();
    let with = |cookie: String| plain.get(app.url("/login")).header("cookie", cookie).send();
    // The genuine cookie (no process): back to the client.
    let response = with(format!("login_client_entry={value}")).await.unwrap();
    assert!(location(&response).starts_with(&app.redirect_uri()), "{}", location(&response));
    // Any change to it: the default logout page, never an address from the cookie.
    let mut tampered = value.clone().into_bytes();
    tampered[3] = if tampered[3] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for forged in [tampered, format!("{value}x"), "eyJjIjoiZXZpbCJ9.c2ln".to_owned()] {
        let response = with(format!("login_client_entry={forged}")).await.unwrap();
        assert_eq!(response.status(), 302);
        assert!(location(&response).ends_with("/logged-out"), "{forged}: {}", location(&response));
    }
}

/// A completed process goes back to the request authorize checked, rebuilt
/// from what the process kept (every parameter Portico uses, none it does
/// not), and its code goes to that request only: another request with the
/// process's cookie starts a login of its own.
#[tokio::test]
async fn a_completed_login_goes_back_to_the_request_it_kept_and_only_that_request_gets_the_code() {
    use reqwest::cookie::CookieStore as _;
    use std::collections::HashMap;
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let jar = std::sync::Arc::new(reqwest::cookie::Jar::default());
        let browser = reqwest::Client::builder()
            .cookie_provider(jar.clone())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let extra = [
            ("prompt", Some("select_account")),
            ("max_age", Some("0")),
            ("ui_locales", Some("de en-GB ru")),
            ("login_hint", Some("ivan")),
            ("claims_locales", Some("en")),
        ];
        let flow = Flow::start_in(&app, browser, &extra).await;
        assert_eq!(flow.view().await["pageData"]["stepViewData"]["principal"], "ivan", "{backend:?}: login_hint");
        flow.post_ok(&[("principal", "ivan"), ("credentials", "ivan-password")]).await;
        assert_eq!(flow.step().await["stepType"], "sms-otp", "{backend:?}");
        let back = flow.enter_code("+79001234567").await;
        assert!(back.starts_with("/oauth2/authorize?"), "{backend:?}: {back}");
        let url = url::Url::parse(&app.url(&back)).unwrap();
        let params: HashMap<String, String> = url.query_pairs().into_owned().collect();
        let redirect_uri = app.redirect_uri();
        let expected = [
            ("response_type", "code"),
            ("client_id", demo::CLIENT_ID),
            ("redirect_uri", redirect_uri.as_str()),
            ("scope", "openid profile email phone"),
            ("state", "st-123"),
            ("nonce", "n-456"),
            ("code_challenge", flow.pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("prompt", "login"),
            ("max_age", "0"),
            ("ui_locales", "en"),
            ("login_hint", "ivan"),
        ];
        let expected: HashMap<String, String> =
            expected.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        assert_eq!(params, expected, "{backend:?}: the way back is the checked request, nothing else");

        // The process's cookie with another request (another `state`): no
        // code for it; with `prompt=login` it starts a login of its own.
        let cookies = jar.cookies(&url).unwrap();
        let flow_cookie = cookies
            .to_str()
            .unwrap()
            .split("; ")
            .find(|c| c.starts_with("authentication_flow="))
            .expect("the process cookie")
            .to_owned();
        let other = app.authorize_url(&flow.pkce, &[("state", Some("another")), ("prompt", Some("login"))]);
        let response = app.http().get(&other).header("cookie", &flow_cookie).send().await.unwrap();
        assert_eq!(response.status(), 303, "{backend:?}: another request gets no code from the process");
        assert_eq!(location(&response), "/login");

        // The request the process kept gets the code, with its nonce.
        let tokens = flow.finish(&back).await;
        let id_token = claims(tokens["id_token"].as_str().unwrap());
        assert_eq!(id_token["nonce"], "n-456", "{backend:?}");
        assert!(id_token["auth_time"].is_i64(), "{backend:?}: max_age asks for auth_time");
    }
}

/// A node that dies (or a database that fails) between counting a
/// password attempt and checking it leaves a count no outcome ever
/// reports: such counts stop counting after `login.unreported_attempt_secs`
/// (`GuardPolicy::report_within`), so a
/// crash does not leave every login from an address behind a CAPTCHA.
#[tokio::test]
async fn attempts_whose_node_died_before_the_check_stop_counting() {
    use portico_identity::login::guard::{self, Attempt, Gate};
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let address: std::net::IpAddr = "198.51.100.20".parse().unwrap();
        let captcha = portico_identity::captcha::DEV_TOKEN;
        // Counted, then the node "dies": the outcome is never reported.
        for i in 0..12 {
            let principal = format!("nobody-{i}");
            let attempt = Attempt { user: None, principal: &principal, trusted_device: None, address: Some(address) };
            let gate = guard::before_check(&app.identity, &attempt, Some(captcha)).await.unwrap();
            assert!(matches!(gate, Gate::Open(_)), "{gate:?}");
            drop(gate);
        }
        let someone = Attempt { user: None, principal: "someone-else", trusted_device: None, address: Some(address) };
        assert!(guard::captcha_due(&app.identity, &someone).await.unwrap(), "{backend:?}: counted while in flight");
        let report_within = app.identity.settings.guard.report_within;
        assert_eq!(report_within, Duration::minutes(2), "the default");
        app.clock.advance(report_within - Duration::seconds(1));
        assert!(guard::captcha_due(&app.identity, &someone).await.unwrap(), "{backend:?}: counted until then");
        app.clock.advance(Duration::seconds(2));
        assert!(!guard::captcha_due(&app.identity, &someone).await.unwrap(), "{backend:?}: no longer counted");
        // The next attempt from the address is its first again.
        let Gate::Open(counted) = guard::before_check(&app.identity, &someone, None).await.unwrap() else {
            panic!("{backend:?}: no CAPTCHA needed");
        };
        let after = guard::failed(&app.identity, counted).await.unwrap();
        assert!(!after.captcha_next, "{backend:?}: {after:?}");
        let key = format!("address:{address}");
        let state = app.store.throttle(&key, app.clock.now() - Duration::hours(24), app.clock.now()).await.unwrap();
        assert_eq!(state.failures, 1, "{backend:?}");
    }
}

/// A code guess meets a paused key: whichever of its keys is paused (the
/// user's code key or the address's), the guess is refused with that
/// pause's end and counts on no key, the other included.
#[tokio::test]
async fn a_code_guess_on_a_paused_key_counts_on_no_key() {
    use portico_identity::login::guard::{self, Gate};
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let ivan = app.store.find_user_by_login("ivan").await.unwrap().unwrap();
        let policy = app.identity.settings.guard;
        let failures = |key: String| {
            let app = &app;
            async move {
                let now = app.clock.now();
                app.store.throttle(&key, now - Duration::hours(24), now).await.unwrap().failures
            }
        };

        // The address is paused by wrong passkey answers.
        let paused: std::net::IpAddr = "198.51.100.30".parse().unwrap();
        for _ in 0..policy.address_delay_after {
            let Gate::Open(counted) = guard::before_passkey(&app.identity, Some(paused)).await.unwrap() else {
                panic!("{backend:?}: counted")
            };
            guard::failed(&app.identity, counted).await.unwrap();
        }
        let gate = guard::before_code(&app.identity, Some(ivan.id), None, Some(paused)).await.unwrap();
        let Gate::Locked(until) = gate else { panic!("{backend:?}: {gate:?}") };
        assert_eq!(until, app.clock.now() + policy.first_delay, "{backend:?}: the address's pause");
        assert_eq!(failures(format!("code:{}", ivan.id)).await, 0, "{backend:?}: the code key was taken back");
        assert_eq!(failures(format!("address:{paused}")).await, policy.address_delay_after, "{backend:?}");

        // Ivan's code key is paused by wrong codes from elsewhere.
        for _ in 0..policy.delay_after {
            let Gate::Open(counted) = guard::before_code(&app.identity, Some(ivan.id), None, None).await.unwrap()
            else {
                panic!("{backend:?}: counted")
            };
            guard::failed(&app.identity, counted).await.unwrap();
        }
        let fresh: std::net::IpAddr = "198.51.100.31".parse().unwrap();
        let gate = guard::before_code(&app.identity, Some(ivan.id), None, Some(fresh)).await.unwrap();
        assert!(matches!(gate, Gate::Locked(_)), "{backend:?}: {gate:?}");
        assert_eq!(failures(format!("code:{}", ivan.id)).await, policy.delay_after, "{backend:?}: not counted again");
        assert_eq!(failures(format!("address:{fresh}")).await, 0, "{backend:?}: the address was never counted");
    }
}
