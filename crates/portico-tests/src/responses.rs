//! What a test reads off Portico's answers: redirects, the login pages'
//! view data, JWTs.

/// The `Location` header.
pub fn location(response: &reqwest::Response) -> String {
    response.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// The query parameters of a redirect's `Location`.
pub fn location_params(response: &reqwest::Response) -> Vec<(String, String)> {
    url::Url::parse(&location(response))
        .map(|u| u.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
        .unwrap_or_default()
}

/// One query parameter of a redirect's `Location`.
pub fn location_param(response: &reqwest::Response, name: &str) -> Option<String> {
    location_params(response).into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// The code from a success redirect to `redirect_uri`.
///
/// # Panics
/// When the response is not such a redirect.
pub fn code_from(response: &reqwest::Response, redirect_uri: &str) -> String {
    let target = location(response);
    assert!(target.starts_with(redirect_uri), "redirects to the client: {target}");
    assert_eq!(location_param(response, "state").as_deref(), Some("st-123"));
    location_param(response, "code").expect("a code")
}

/// The JSON in `<script id="viewData" type="application/json">`.
///
/// # Panics
/// When the page has no such element.
pub fn view_data(html: &str) -> serde_json::Value {
    let start_tag = r#"<script id="viewData" type="application/json">"#;
    let start = html.find(start_tag).expect("script#viewData") + start_tag.len();
    let end = html[start..].find("</script>").expect("end of script") + start;
    serde_json::from_str(&html[start..end]).expect("viewData is JSON")
}

/// Decodes a JWT's claims without verifying (for assertions only).
pub fn jwt_claims(token: &str) -> serde_json::Value {
    let payload = token.split('.').nth(1).expect("JWT payload");
    serde_json::from_slice(&portico_crypto::b64url_decode(payload).expect("base64url")).expect("JSON claims")
}

/// Decodes a JWT's header.
pub fn jwt_header(token: &str) -> serde_json::Value {
    let header = token.split('.').next().expect("JWT header");
    serde_json::from_slice(&portico_crypto::b64url_decode(header).expect("base64url")).expect("JSON header")
}

/// What a route answered: its status, its `WWW-Authenticate` challenge and
/// its body (JSON, or null when it was not).
pub struct Answer {
    pub status: u16,
    pub challenge: Option<String>,
    pub body: serde_json::Value,
}

/// Sends `request` and reads its [`Answer`].
pub async fn answer(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("the request reaches Portico");
    let challenge = response.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let status = response.status().as_u16();
    Answer { status, challenge, body: response.json().await.unwrap_or(serde_json::Value::Null) }
}

/// RFC 9110 §15.5.2 and RFC 6750 §3: the request `request` makes answers
/// 401 with the challenge `Bearer` alone when it carries no credential, and
/// `Bearer error="invalid_token"` when it carries `wrong` as its
/// `Authorization` header. Returns both answers, in that order, for the
/// caller to read their bodies.
pub async fn assert_bearer_challenges(
    request: impl Fn() -> reqwest::RequestBuilder,
    wrong: &str,
    place: &str,
) -> [Answer; 2] {
    let mut answers = Vec::with_capacity(2);
    for (authorization, expected) in [(None, "Bearer"), (Some(wrong), "Bearer error=\"invalid_token\"")] {
        let request = match authorization {
            Some(value) => request().header("authorization", value),
            None => request(),
        };
        let answer = answer(request).await;
        assert_eq!(
            (answer.status, answer.challenge.as_deref()),
            (401, Some(expected)),
            "{place}, authorization {authorization:?}: {}",
            answer.body
        );
        answers.push(answer);
    }
    answers.try_into().unwrap_or_else(|_| unreachable!("two answers"))
}
