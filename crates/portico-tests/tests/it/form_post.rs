//! `response_mode=form_post` (OAuth 2.0 Form Post Response Mode): the
//! authorization response, success or error, is a page that posts its
//! parameters to `redirect_uri`; a relying-party library exchanges the code
//! it carries.

use openidconnect::core::CoreAuthenticationFlow;
use openidconnect::{AuthorizationCode, CsrfToken, Nonce, PkceCodeChallenge};
use portico_tests::{Pkce, TestApp, backends, location, location_param};

/// The form of a form_post page: its action and fields, in order.
fn posted_form(html: &str) -> (String, Vec<(String, String)>) {
    let attr = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\"")).map(|i| i + name.len() + 2)?;
        let end = tag[start..].find('"')? + start;
        Some(unescape(&tag[start..end]))
    };
    let form_tag = &html[html.find("<form").expect("a form")..];
    let form_tag = &form_tag[..form_tag.find('>').unwrap()];
    assert_eq!(attr(form_tag, "method").as_deref(), Some("post"), "{html}");
    let action = attr(form_tag, "action").expect("an action");
    let fields = html
        .split("<input ")
        .skip(1)
        .map(|input| {
            let tag = &input[..input.find('>').unwrap()];
            assert_eq!(attr(tag, "type").as_deref(), Some("hidden"));
            (attr(tag, "name").unwrap(), attr(tag, "value").unwrap())
        })
        .collect();
    (action, fields)
}

fn unescape(text: &str) -> String {
    text.replace("&#x2f;", "/")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn openidconnect_crate_exchanges_the_code_a_form_post_page_carries() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (http, client, metadata) = crate::oidc_client::demo_relying_party(&app).await;
        let modes = metadata.response_modes_supported().expect("response_modes_supported");
        assert!(modes.iter().any(|m| m.as_ref() == "form_post"), "{backend:?}: discovery lists form_post");

        // Signed in once; the next request asks for form_post.
        let browser = app.browser();
        app.login_for_code(&browser, &Pkce::new(), "ivan", "ivan-password").await;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, csrf, nonce) = client
            .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
            .set_pkce_challenge(challenge)
            .add_extra_param("response_mode", "form_post")
            .url();
        let response = browser.get(url.as_str()).send().await.unwrap();
        assert_eq!(response.status(), 200, "{backend:?}: a page, not a redirect");
        assert_eq!(response.headers()["cache-control"], "no-store");
        let csp = response.headers()["content-security-policy"].to_str().unwrap().to_owned();
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        // The page's one form posts to the client's origin, and nowhere else.
        assert!(csp.ends_with(&format!("; form-action {}", app.base.trim_end_matches('/'))), "{csp}");
        let (action, fields) = posted_form(&response.text().await.unwrap());
        assert_eq!(action, app.redirect_uri(), "{backend:?}");
        assert_eq!(field(&fields, "state"), Some(csrf.secret().as_str()));
        assert_eq!(field(&fields, "iss"), Some(app.base.as_str()), "RFC 9207");
        let code = field(&fields, "code").expect("a code").to_owned();
        let tokens = client
            .exchange_code(AuthorizationCode::new(code))
            .unwrap()
            .set_pkce_verifier(verifier)
            .request_async(&http)
            .await
            .expect("code exchange");
        let id_token = openidconnect::TokenResponse::id_token(&tokens).expect("id_token");
        id_token.claims(&client.id_token_verifier(), &nonce).expect("a valid id_token");

        // The page posts by script, allowed by the page's policy.
        let script = app.http().get(app.url("/login/assets/form_post.js")).send().await.unwrap();
        assert_eq!(script.status(), 200);
        assert!(script.text().await.unwrap().contains("getElementById(\"form-post\").submit()"));
    }
}

#[tokio::test]
async fn errors_are_posted_too_and_a_bad_response_mode_is_refused_in_the_query() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let pkce = Pkce::new();
        // prompt=none without a session: login_required, posted.
        let url = app.authorize_url(&pkce, &[("response_mode", Some("form_post")), ("prompt", Some("none"))]);
        let response = app.browser().get(url).send().await.unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        let (action, fields) = posted_form(&response.text().await.unwrap());
        assert_eq!(action, app.redirect_uri());
        assert_eq!(field(&fields, "error"), Some("login_required"));
        assert_eq!(field(&fields, "state"), Some("st-123"));
        assert_eq!(field(&fields, "iss"), Some(app.base.as_str()));
        // A parameter error after response_mode is posted as well.
        let url =
            app.authorize_url(&pkce, &[("response_mode", Some("form_post")), ("code_challenge_method", Some("plain"))]);
        let (_, fields) = posted_form(&app.browser().get(url).send().await.unwrap().text().await.unwrap());
        assert_eq!(field(&fields, "error_description"), Some("OAuth 2.0 Parameter: code_challenge_method"));
        // An unknown mode (fragment is not offered for `code`): in the query.
        for mode in ["fragment", "web_message"] {
            let url = app.authorize_url(&pkce, &[("response_mode", Some(mode))]);
            let response = app.browser().get(url).send().await.unwrap();
            assert_eq!(response.status(), 302, "{backend:?}: {mode}");
            assert_eq!(location_param(&response, "error").as_deref(), Some("invalid_request"));
            assert_eq!(
                location_param(&response, "error_description").as_deref(),
                Some("OAuth 2.0 Parameter: response_mode")
            );
        }
    }
}

#[tokio::test]
async fn leaving_a_form_post_login_posts_access_denied_back() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let browser = app.browser();
        let url = app.authorize_url(&Pkce::new(), &[("response_mode", Some("form_post"))]);
        let response = browser.get(url).send().await.unwrap();
        assert_eq!(location(&response), "/login", "{backend:?}");
        // The way back from an error page of this login (a link) leads to
        // /login/return, which posts the answer the client asked for.
        let response = browser.get(app.url("/login/return")).send().await.unwrap();
        assert_eq!(response.status(), 200, "{backend:?}");
        let (action, fields) = posted_form(&response.text().await.unwrap());
        assert_eq!(action, app.redirect_uri());
        assert_eq!(field(&fields, "error"), Some("access_denied"));
        assert_eq!(field(&fields, "state"), Some("st-123"));
        // Used once: the entry is cleared, then the logged-out page.
        let again = browser.get(app.url("/login/return")).send().await.unwrap();
        assert_eq!(location(&again), app.url("/logged-out"), "{backend:?}");
    }
}
