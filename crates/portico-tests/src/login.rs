//! A browser's login through Portico's pages, as a test drives it.

use crate::responses::{code_from, location, view_data};
use crate::{Pkce, TestApp, demo};

impl TestApp {
    /// An authorize URL for the demo client with `pkce`, overridden or
    /// extended by `extra` (a value of `None` removes the parameter).
    pub fn authorize_url(&self, pkce: &Pkce, extra: &[(&str, Option<&str>)]) -> String {
        let redirect_uri = self.redirect_uri();
        let mut params: Vec<(String, String)> = [
            ("response_type", "code"),
            ("client_id", demo::CLIENT_ID),
            ("redirect_uri", redirect_uri.as_str()),
            ("scope", "openid profile email phone"),
            ("state", "st-123"),
            ("nonce", "n-456"),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        for (key, value) in extra {
            params.retain(|(k, _)| k != key);
            if let Some(value) = value {
                params.push(((*key).to_owned(), (*value).to_owned()));
            }
        }
        let mut url = url::Url::parse(&self.url("/oauth2/authorize")).expect("url");
        url.query_pairs_mut().extend_pairs(params);
        url.into()
    }

    /// Logs `login` in through the browser pages and returns the code.
    ///
    /// # Panics
    /// When any step does not answer as the spec says.
    pub async fn login_for_code(&self, browser: &reqwest::Client, pkce: &Pkce, login: &str, password: &str) -> String {
        let response = self.login_at(browser, &self.authorize_url(pkce, &[]), login, password).await;
        code_from(&response, &self.redirect_uri())
    }

    /// Opens `authorize` (an authorization request of any client), logs
    /// `login` in with the password (and the SMS code when asked, and
    /// consent to every scope group when the client asks for it), and
    /// returns authorize's answer once the login completed: the 302 to the
    /// client.
    ///
    /// # Panics
    /// When any step does not answer as a first login does.
    pub async fn login_at(
        &self,
        browser: &reqwest::Client,
        authorize: &str,
        login: &str,
        password: &str,
    ) -> reqwest::Response {
        let response = browser.get(authorize).send().await.expect("authorize");
        self.login_after(browser, response, login, password).await
    }

    /// [`TestApp::login_at`] after `browser` opened the authorization
    /// request: `response` is authorize's answer to it.
    ///
    /// # Panics
    /// When any step does not answer as a first login does.
    pub async fn login_after(
        &self,
        browser: &reqwest::Client,
        response: reqwest::Response,
        login: &str,
        password: &str,
    ) -> reqwest::Response {
        assert_eq!(response.status(), 303, "authorize without a session goes to /login");
        assert_eq!(location(&response), "/login");
        let page = browser.get(self.url("/login")).send().await.expect("login page");
        assert_eq!(page.status(), 200);
        let view = view_data(&page.text().await.expect("html"));
        let csrf = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().expect("csrf").to_owned();
        let response = browser
            .post(self.url("/login"))
            .form(&[("_csrf", csrf.as_str()), ("principal", login), ("credentials", password)])
            .send()
            .await
            .expect("submit");
        assert_eq!(response.status(), 303);
        let mut back = self.second_factor_if_asked(browser, &csrf, login, location(&response)).await;
        if back == "/login" {
            let view = self.login_view(browser).await;
            let step = &view["pageData"]["stepViewData"];
            assert_eq!(step["stepType"], "consent", "{view}");
            let groups = step["availableScopeGroups"].as_str().expect("scope groups").to_owned();
            let response = browser
                .post(self.url("/login"))
                .form(&[("_csrf", csrf.as_str()), ("selected_scope_groups", groups.as_str())])
                .send()
                .await
                .expect("consent");
            assert_eq!(response.status(), 303);
            back = location(&response);
        }
        assert!(back.starts_with("/oauth2/authorize?"), "completed login goes back to authorize: {back}");
        let response = browser.get(self.url(&back)).send().await.expect("authorize again");
        assert_eq!(response.status(), 302, "authorize with a completed login issues a code");
        response
    }

    /// After a passed password step that answered 303 to `location`: when
    /// that is `/login` (a device not yet trusted for the user), enters the
    /// SMS code from the dev outbox. Returns where the login goes next.
    ///
    /// # Panics
    /// When the second factor does not answer as expected.
    pub async fn second_factor_if_asked(
        &self,
        browser: &reqwest::Client,
        csrf: &str,
        login: &str,
        location_after_password: String,
    ) -> String {
        if location_after_password != "/login" {
            return location_after_password;
        }
        let view = self.login_view(browser).await;
        assert_eq!(view["pageData"]["stepViewData"]["stepType"], "sms-otp", "{view}");
        let user = self.store.find_user_by_login(login).await.expect("store").expect("user");
        let code = self.last_code(user.phone.as_deref().expect("a phone"));
        let response = browser
            .post(self.url("/login"))
            .form(&[("_csrf", csrf), ("credentials", code.as_str())])
            .send()
            .await
            .expect("submit the code");
        assert_eq!(response.status(), 303);
        location(&response)
    }

    /// `GET /login` and its `LoginViewDataDTO`.
    ///
    /// # Panics
    /// When the page is not a 200 with view data.
    pub async fn login_view(&self, browser: &reqwest::Client) -> serde_json::Value {
        let page = browser.get(self.url("/login")).send().await.expect("login page");
        assert_eq!(page.status(), 200, "GET /login");
        view_data(&page.text().await.expect("html"))
    }

    /// The messages in the dev outbox, oldest first.
    pub fn outbox(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(self.config.data_dir.join("outbox.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).expect("an outbox line")).collect()
    }

    /// The last code sent to `to` (a phone number or e-mail address).
    ///
    /// # Panics
    /// When none was sent.
    pub fn last_code(&self, to: &str) -> String {
        let messages = self.outbox();
        let message = messages.iter().rev().find(|m| m["to"] == to).unwrap_or_else(|| panic!("no code for {to}"));
        message["code"].as_str().expect("code").to_owned()
    }
}
