//! A real OpenID Connect client library (`openidconnect`) against Portico:
//! discovery, PKCE, code exchange with id_token signature and nonce
//! validation, refresh.

use openidconnect::core::{CoreAuthenticationFlow, CoreClient};
use openidconnect::{
    AccessTokenHash, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, ProviderMetadataWithLogout, RedirectUrl,
    Scope, TokenResponse,
};
use portico_tests::{TestApp, backends, demo, location, location_param, view_data};

/// A client the library built from discovery.
pub(crate) type RelyingParty =
    CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointMaybeSet>;

/// The demo client as the library makes it from Portico's discovery
/// document: the HTTP client it talks with (redirects not followed), the
/// relying party, and the provider metadata (with the logout extension).
pub(crate) async fn demo_relying_party(
    app: &TestApp,
) -> (openidconnect::reqwest::Client, RelyingParty, ProviderMetadataWithLogout) {
    let http = openidconnect::reqwest::ClientBuilder::new()
        .redirect(openidconnect::reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let metadata = ProviderMetadataWithLogout::discover_async(IssuerUrl::new(app.base.clone()).unwrap(), &http)
        .await
        .expect("discovery");
    let client = CoreClient::from_provider_metadata(
        metadata.clone(),
        ClientId::new(demo::CLIENT_ID.into()),
        Some(ClientSecret::new(demo::CLIENT_SECRET.into())),
    )
    .set_redirect_uri(RedirectUrl::new(app.redirect_uri()).unwrap());
    (http, client, metadata)
}

#[tokio::test]
async fn openidconnect_crate_completes_the_flow() {
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (http, client, _) = demo_relying_party(&app).await;

        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (auth_url, csrf, nonce) = client
            .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
            .add_scope(Scope::new("profile".into()))
            .add_scope(Scope::new("email".into()))
            .set_pkce_challenge(challenge)
            .url();

        // The browser part.
        let browser = app.browser();
        let response = browser.get(auth_url.as_str()).send().await.unwrap();
        assert_eq!(location(&response), "/login");
        let view = view_data(&browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap());
        let form = [
            ("_csrf", view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap()),
            ("principal", "ivan"),
            ("credentials", "ivan-password"),
        ];
        let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        let next = app.second_factor_if_asked(&browser, form[0].1, "ivan", location(&response)).await;
        let response = browser.get(app.url(&next)).send().await.unwrap();
        assert_eq!(location_param(&response, "state").as_deref(), Some(csrf.secret().as_str()));
        let code = location_param(&response, "code").expect("code");

        let tokens = client
            .exchange_code(AuthorizationCode::new(code))
            .expect("token endpoint known")
            .set_pkce_verifier(verifier)
            .request_async(&http)
            .await
            .expect("code exchange");
        let id_token = tokens.id_token().expect("id_token");
        let verifier = client.id_token_verifier();
        let claims = id_token.claims(&verifier, &nonce).expect("id_token signature, issuer, audience and nonce");
        assert_eq!(claims.preferred_username().map(|u| u.as_str()), Some("ivan"));
        assert_eq!(claims.email().map(|e| e.as_str()), Some("ivan@example.com"));
        let expected_hash = AccessTokenHash::from_token(
            tokens.access_token(),
            id_token.signing_alg().unwrap(),
            id_token.signing_key(&verifier).unwrap(),
        )
        .unwrap();
        assert_eq!(claims.access_token_hash(), Some(&expected_hash), "at_hash");
        let wrong_nonce = Nonce::new("other".into());
        assert!(id_token.claims(&verifier, &wrong_nonce).is_err(), "{backend:?}: nonce is checked");

        let refreshed = client
            .exchange_refresh_token(tokens.refresh_token().expect("refresh token"))
            .expect("token endpoint known")
            .request_async(&http)
            .await
            .expect("refresh");
        assert_ne!(refreshed.access_token().secret(), tokens.access_token().secret());
        assert_ne!(refreshed.refresh_token().unwrap().secret(), tokens.refresh_token().unwrap().secret());
        assert_eq!(app.liveness(refreshed.access_token().secret()).await, 200);
    }
}

/// The authorization parameters relying parties set, through the library's
/// own setters: `login_hint` fills the first step, `ui_locales` picks its
/// language, `max_age=0` asks for a new login despite the session (and
/// `auth_time` then names it), and the response carries `iss` (RFC 9207).
#[tokio::test]
async fn openidconnect_crate_sets_login_hint_ui_locales_and_max_age() {
    use openidconnect::{LanguageTag, LoginHint};
    for backend in backends() {
        let app = TestApp::spawn(backend).await;
        let (http, client, _) = demo_relying_party(&app).await;
        let browser = app.browser();
        app.login_for_code(&browser, &portico_tests::Pkce::new(), "ivan", "ivan-password").await;

        // A live session, but max_age=0: log in again, in English, the login filled in.
        app.clock.advance(time::Duration::seconds(30));
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, csrf, nonce) = client
            .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
            .set_pkce_challenge(challenge)
            .set_max_age(std::time::Duration::ZERO)
            .set_login_hint(LoginHint::new("ivan".into()))
            .add_ui_locale(LanguageTag::new("en-GB".into()))
            .url();
        let response = browser.get(url.as_str()).send().await.unwrap();
        assert_eq!(location(&response), "/login", "{backend:?}: max_age=0 outlives no session");
        let page = browser.get(app.url("/login")).send().await.unwrap().text().await.unwrap();
        assert!(page.contains("<html lang=\"en\">"), "{backend:?}: ui_locales");
        assert!(page.contains("value=\"ivan\""), "{backend:?}: login_hint fills the login");
        let view = view_data(&page);
        let csrf_token = view["pageData"]["authenticationFlowContext"]["csrf"].as_str().unwrap().to_owned();
        let form = [("_csrf", csrf_token.as_str()), ("principal", "ivan"), ("credentials", "ivan-password")];
        let response = browser.post(app.url("/login")).form(&form).send().await.unwrap();
        let next = app.second_factor_if_asked(&browser, &csrf_token, "ivan", location(&response)).await;
        let response = browser.get(app.url(&next)).send().await.unwrap();
        assert_eq!(location_param(&response, "iss").as_deref(), Some(app.base.as_str()), "RFC 9207");
        assert_eq!(location_param(&response, "state").as_deref(), Some(csrf.secret().as_str()));
        let code = location_param(&response, "code").expect("a code");
        let tokens = client
            .exchange_code(AuthorizationCode::new(code))
            .unwrap()
            .set_pkce_verifier(verifier)
            .request_async(&http)
            .await
            .expect("code exchange");
        let claims = tokens.id_token().unwrap().claims(&client.id_token_verifier(), &nonce).expect("valid");
        let auth_time = claims.auth_time().expect("auth_time with max_age");
        let now = portico_model::clock::Clock::now(app.clock.as_ref()).unix_timestamp();
        assert_eq!(auth_time.timestamp(), now, "{backend:?}: the new login's time, not the session's");
    }
}
