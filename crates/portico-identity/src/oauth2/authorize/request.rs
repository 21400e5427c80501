//! A checked authorization request: what a login process keeps of it,
//! where its answer goes, and the way back to it from the login steps.

use portico_model::client::Client;
use portico_model::ids::ClientId;
use portico_model::login::{Locale, PendingAuthorization};
use portico_model::oauth::{Prompt, ResponseMode};
use portico_model::scope::ScopeSet;

use crate::login::ClientEntry;
use crate::oauth2::response::Recipient;

/// A request that passed every check.
#[derive(Debug)]
pub struct AuthorizeRequest {
    pub client: Client,
    pub redirect_uri: String,
    pub scope: ScopeSet,
    /// `None` where the client's profile lets a request leave it out
    /// ([`portico_model::client::SecurityProfile::requires_state`]); the
    /// answer then carries none.
    pub state: Option<String>,
    pub code_challenge: String,
    pub nonce: Option<String>,
    pub prompt: Option<Prompt>,
    /// `max_age`: an SSO session authenticated longer ago than this many
    /// seconds does not count; the user logs in again.
    pub max_age: Option<u32>,
    /// The first language of `ui_locales` that Portico speaks.
    pub ui_locale: Option<Locale>,
    /// `login_hint`: the login (or phone number) the first step shows.
    pub login_hint: Option<String>,
    /// `response_mode`: `query` (the default), `form_post`, or either
    /// signed (JARM).
    pub response_mode: ResponseMode,
    /// The `request_uri` of a pushed request or a request object: what
    /// the way back from the login steps names.
    pub request_uri: Option<String>,
    /// The DPoP key the code is bound to.
    pub dpop_jkt: Option<String>,
    /// `id_token_hint`, as given (checked by authorize before any session
    /// or login is looked at).
    pub id_token_hint: Option<String>,
    /// The hash of the pushed request this one was read from, still to be
    /// taken (used once) by the write that starts serving it: the login
    /// process's or the code's. `None` once a login process holds it.
    pub pushed_to_take: Option<String>,
}

/// Where a request's parameters came from, for the client's rules.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Origin {
    /// Pushed to `/oauth2/par` (RFC 9126).
    pub pushed: bool,
    /// In a signed request object (RFC 9101).
    pub signed: bool,
}

impl AuthorizeRequest {
    /// Where and how the answer to this request goes.
    pub fn recipient(&self) -> Recipient {
        Recipient::new(&self.client, &self.redirect_uri, self.response_mode)
    }

    /// What a login process keeps of this request.
    pub fn pending(&self) -> PendingAuthorization {
        PendingAuthorization {
            redirect_uri: self.redirect_uri.clone(),
            scope: self.scope.iter().map(str::to_owned).collect(),
            state: self.state.clone(),
            code_challenge: self.code_challenge.clone(),
            nonce: self.nonce.clone(),
            prompt: self.prompt,
            max_age: self.max_age,
            ui_locale: self.ui_locale,
            login_hint: self.login_hint.clone(),
            response_mode: self.response_mode,
            request_uri: self.request_uri.clone(),
            dpop_jkt: self.dpop_jkt.clone(),
            id_token_hint: self.id_token_hint.clone(),
        }
    }

    /// What the `login_client_entry` cookie remembers of this request.
    pub fn client_entry(&self) -> ClientEntry {
        ClientEntry {
            client_id: self.client.client_id.clone(),
            redirect_uri: self.redirect_uri.clone(),
            state: self.state.clone(),
            response_mode: self.response_mode,
            jwt_alg: self.client.security.authorization_signed_response_alg,
            profile: self.client.security.security_profile,
        }
    }
}

/// The local address of the authorization request a login process serves,
/// built from what authorize checked: the way back once the steps are done
/// (the contract's "303 to the original `/oauth2/authorize`"). Checking it
/// again gives a request equal to `request`; parameters Portico does not
/// use are not repeated, and `select_account` reads `login`. A pushed
/// request or a request object is named by its `request_uri` alone.
pub fn location(client_id: &ClientId, request: &PendingAuthorization) -> String {
    if let Some(request_uri) = &request.request_uri {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("client_id", client_id.as_str()).append_pair("request_uri", request_uri);
        return format!("/oauth2/authorize?{}", query.finish());
    }
    let scope = request.scope.join(" ");
    let max_age = request.max_age.map(|seconds| seconds.to_string());
    let mut query = form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id.as_str())
        .append_pair("redirect_uri", &request.redirect_uri)
        .append_pair("scope", &scope)
        .append_pair("code_challenge", &request.code_challenge)
        .append_pair("code_challenge_method", "S256");
    let optional = [
        ("state", request.state.as_deref()),
        ("nonce", request.nonce.as_deref()),
        ("prompt", request.prompt.map(Prompt::as_str)),
        ("max_age", max_age.as_deref()),
        ("ui_locales", request.ui_locale.map(Locale::as_str)),
        ("login_hint", request.login_hint.as_deref()),
        ("response_mode", (request.response_mode != ResponseMode::Query).then(|| request.response_mode.as_str())),
        ("dpop_jkt", request.dpop_jkt.as_deref()),
        ("id_token_hint", request.id_token_hint.as_deref()),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    format!("/oauth2/authorize?{}", query.finish())
}
