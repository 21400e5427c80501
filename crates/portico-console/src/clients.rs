//! `/console/clients` (admin): the relying parties: registering one (a
//! generated or given secret, shown once), their addresses, scopes, names
//! and consent, how each authenticates (its method and public keys) and
//! the algorithms its tokens are signed with, a new secret, removal; and
//! approving the registrations `registration.require_approval` holds.

use askama::Template;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_admin::ServiceError;
use portico_admin::service::{AdminService, ClientChanges, NewClient, SecurityChanges};
use portico_api::Problem;
use portico_model::client::{AssertionAlgorithm, AuthMethod, Client, ClientSecurity, SecurityProfile};
use portico_model::key::Algorithm;

use serde::Deserialize;

use crate::ConsoleState;
use crate::forms::{self, NoFields};
use crate::page::{self, Layout, MAX_FORM, Refusal, Segments, done, render};
use crate::session::{AdminOperator, see_other};

#[derive(Template)]
#[template(path = "clients.html")]
struct ClientsPage {
    l: Layout,
    /// The registrations waiting for an operator's approval, oldest first
    /// (the first [`page::LIST_PAGE`]; none on the page that lists only them).
    held: Vec<Client>,
    /// Whether more are held than `held` shows.
    more_held: bool,
    /// Whether the list shows only the registrations held for approval.
    only_held: bool,
    clients: Vec<Client>,
    /// The next page's address.
    next: Option<String>,
}

/// The query of `GET /console/clients`: a list page's, and whether to list
/// only the registrations held for approval (`awaitingApproval=true`, as
/// the admin API's filter).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ClientsQuery {
    done: Option<String>,
    after: Option<String>,
    #[serde(rename = "awaitingApproval")]
    awaiting_approval: Option<String>,
}

/// The authentication and signing part of a client's form, as shown.
pub struct SecurityForm {
    /// `token_endpoint_auth_method`.
    method: &'static str,
    /// The key set by value, pretty-printed; blank for none.
    jwks: String,
    jwks_uri: String,
    /// `token_endpoint_auth_signing_alg` (blank: any its method takes).
    assertion_alg: &'static str,
    /// Each algorithm a client chooses: the field, its label, the choice
    /// (blank: the server's default).
    algs: Vec<(&'static str, &'static str, &'static str)>,
    /// The algorithms the server keeps a key of.
    supported: Vec<&'static str>,
    /// The server's default algorithm.
    default_alg: &'static str,
    /// `request_object_signing_alg` (blank: any asymmetric one).
    request_object_alg: &'static str,
    /// The security profile chosen.
    profile: &'static str,
    /// `refresh_token_rotation`: blank (the profile's), `on` or `off`.
    rotation: &'static str,
    /// The request and binding rules, each: the field, its label, ticked.
    rules: Vec<(&'static str, &'static str, bool)>,
    /// The `tls_client_auth` subject: which field (blank: none) and its value.
    subject_kind: &'static str,
    subject: String,
}

impl SecurityForm {
    fn new(security: &ClientSecurity, admin: &AdminService) -> Self {
        let (subject_kind, subject) = security
            .tls_client_auth_subject()
            .next()
            .map_or(("", String::new()), |(kind, value)| (kind, value.to_owned()));
        let name = |alg: Option<Algorithm>| alg.map_or("", Algorithm::as_str);
        // A choice the server no longer keeps a key of is still shown (so
        // that saving the form does not quietly change it; the service
        // names the problem).
        let mut supported: Vec<&'static str> = admin.signing_algorithms.iter().map(|alg| alg.as_str()).collect();
        for (_, alg) in security.algorithms() {
            if !supported.contains(&alg.as_str()) {
                supported.push(alg.as_str());
            }
        }
        Self {
            method: security.token_endpoint_auth_method.as_str(),
            jwks: security.jwks.as_ref().and_then(|jwks| serde_json::to_string_pretty(jwks).ok()).unwrap_or_default(),
            jwks_uri: security.jwks_uri.clone().unwrap_or_default(),
            assertion_alg: security.token_endpoint_auth_signing_alg.map_or("", AssertionAlgorithm::as_str),
            algs: vec![
                ("id_token_signed_response_alg", "client.id_token_alg", name(security.id_token_signed_response_alg)),
                (
                    "access_token_signed_response_alg",
                    "client.access_token_alg",
                    name(security.access_token_signed_response_alg),
                ),
                ("userinfo_signed_response_alg", "client.userinfo_alg", name(security.userinfo_signed_response_alg)),
                (
                    "introspection_signed_response_alg",
                    "client.introspection_alg",
                    name(security.introspection_signed_response_alg),
                ),
                (
                    "authorization_signed_response_alg",
                    "client.authorization_alg",
                    name(security.authorization_signed_response_alg),
                ),
            ],
            supported,
            default_alg: admin.signing_algorithm.as_str(),
            request_object_alg: name(security.request_object_signing_alg),
            profile: security.security_profile.as_str(),
            rotation: match security.refresh_token_rotation {
                None => "",
                Some(true) => "on",
                Some(false) => "off",
            },
            rules: vec![
                (
                    "require_pushed_authorization_requests",
                    "client.require_par",
                    security.require_pushed_authorization_requests,
                ),
                ("require_signed_request_object", "client.require_jar", security.require_signed_request_object),
                ("dpop_bound_access_tokens", "client.dpop_bound", security.dpop_bound_access_tokens),
                (
                    "tls_client_certificate_bound_access_tokens",
                    "client.certificate_bound",
                    security.tls_client_certificate_bound_access_tokens,
                ),
            ],
            subject_kind,
            subject,
        }
    }

    /// The algorithms a client's assertions may be pinned to.
    fn assertion_algs(&self) -> impl Iterator<Item = &'static str> {
        AssertionAlgorithm::ALL.into_iter().map(AssertionAlgorithm::as_str)
    }

    /// The profiles, with their labels.
    fn profiles(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        SecurityProfile::ALL.into_iter().map(|profile| {
            let label = match profile {
                SecurityProfile::Standard => "client.profile_standard",
                SecurityProfile::Fapi2 => "client.profile_fapi2",
                SecurityProfile::FapiRu => "client.profile_fapi_ru",
            };
            (profile.as_str(), label)
        })
    }

    /// The algorithms of request objects Portico verifies.
    fn request_object_algs(&self) -> impl Iterator<Item = &'static str> {
        [Algorithm::Ps256, Algorithm::Es256, Algorithm::EdDsa, Algorithm::Rs256].into_iter().map(Algorithm::as_str)
    }

    /// The choices of refresh-token rotation, with their labels.
    fn rotations(&self) -> [(&'static str, &'static str); 3] {
        [("", "client.rotation_default"), ("on", "client.rotation_on"), ("off", "client.rotation_off")]
    }

    /// The `tls_client_auth` subject fields (RFC 8705 §2.1.2), with their labels.
    fn subject_kinds(&self) -> [(&'static str, &'static str); 5] {
        [
            ("tls_client_auth_subject_dn", "DN (RFC 4514)"),
            ("tls_client_auth_san_dns", "SAN DNS"),
            ("tls_client_auth_san_uri", "SAN URI"),
            ("tls_client_auth_san_ip", "SAN IP"),
            ("tls_client_auth_san_email", "SAN e-mail"),
        ]
    }

    /// Every method a client authenticates with, as the form offers them.
    fn methods(&self) -> impl Iterator<Item = &'static str> {
        AuthMethod::ALL.into_iter().map(AuthMethod::as_str)
    }
}

/// `GET /console/clients`.
pub async fn list(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let here = page::here("/console/clients", raw.as_deref());
    let query: ClientsQuery = page::query(raw.as_deref());
    let only_held = query.awaiting_approval.as_deref() == Some("true");
    let l = Layout::new(&headers, &operator, "clients", &here).with_notice(query.done.as_deref());
    let list = page::ListQuery { done: None, after: query.after };
    let read = async {
        // The queue above the list, unless the list is the queue.
        let held = if only_held { Vec::new() } else { console.admin.held_clients(page::LIST_PAGE + 1).await? };
        let clients = console.admin.list_clients(list.page(), only_held.then_some(true)).await?;
        Ok::<_, ServiceError>((held, clients))
    };
    match read.await {
        Ok((mut held, clients)) => {
            let more_held = held.len() > page::LIST_PAGE as usize;
            held.truncate(page::LIST_PAGE as usize);
            let (clients, next) = page::list_page(clients, "/console/clients", |c| c.client_id.as_str());
            // A page of the queue leads to the queue's next page.
            let next = next.map(|next| if only_held { format!("{next}&awaitingApproval=true") } else { next });
            render(StatusCode::OK, &ClientsPage { l, held, more_held, only_held, clients, next })
        }
        Err(error) => page::service_error(l, error, "/console/"),
    }
}

#[derive(Template)]
#[template(path = "client.html")]
struct ClientPage {
    l: Layout,
    client: Client,
    sf: SecurityForm,
}

impl ClientPage {
    fn redirect_uris(&self) -> String {
        self.client.redirect_uris.join("\n")
    }

    fn post_logout_redirect_uris(&self) -> String {
        self.client.post_logout_redirect_uris.join("\n")
    }

    fn scope(&self) -> String {
        self.client.scopes.join(" ")
    }
}

/// `GET /console/clients/{id}`.
pub async fn read(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let here = format!("/console/clients/{id}");
    let query: page::Notice = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "clients", &here).with_notice(query.done.as_deref());
    match console.admin.client(&id).await {
        Ok(client) => {
            let sf = SecurityForm::new(&client.security, &console.admin);
            render(StatusCode::OK, &ClientPage { l, client, sf })
        }
        Err(error) => page::service_error(l, error, "/console/clients"),
    }
}

#[derive(Template)]
#[template(path = "client_new.html")]
struct NewClientPage {
    l: Layout,
    sf: SecurityForm,
}

/// `GET /console/clients/new`.
pub async fn new_form(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let l = Layout::new(&headers, &operator, "clients", "/console/clients/new");
    let fresh =
        ClientSecurity { security_profile: console.admin.default_security_profile, ..ClientSecurity::default() };
    render(StatusCode::OK, &NewClientPage { l, sf: SecurityForm::new(&fresh, &console.admin) })
}

/// The page that shows a client's secret, this once.
fn secret_page(l: Layout, client_id: String, secret: String) -> Response {
    let back = format!("/console/clients/{client_id}");
    page::shown_once(l, "client.id", client_id, secret, &back)
}

/// A client's form (new, or its page's): every text field trimmed, the
/// address lists one per line.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ClientFields {
    /// Only when registering.
    #[serde(deserialize_with = "forms::trimmed")]
    pub client_id: Option<String>,
    /// Only when registering: blank generates one.
    #[serde(deserialize_with = "forms::trimmed")]
    pub secret: Option<String>,
    #[serde(deserialize_with = "forms::lines")]
    pub redirect_uris: Vec<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub scope: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub name_ru: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub name_en: Option<String>,
    #[serde(deserialize_with = "forms::ticked")]
    pub require_consent: bool,
    #[serde(deserialize_with = "forms::lines")]
    pub post_logout_redirect_uris: Vec<String>,
    #[serde(deserialize_with = "forms::ticked")]
    pub logout_revokes_grants: bool,
    #[serde(deserialize_with = "forms::trimmed")]
    pub backchannel_logout_uri: Option<String>,
    /// With the rest of the authentication and signing fieldset; a form
    /// without it leaves them as they are.
    #[serde(deserialize_with = "forms::trimmed")]
    pub token_endpoint_auth_method: Option<String>,
    /// A JWK Set (JSON); blank for none.
    #[serde(deserialize_with = "forms::trimmed")]
    pub jwks: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub jwks_uri: Option<String>,
    /// Blank: the server's default.
    #[serde(deserialize_with = "forms::trimmed")]
    pub id_token_signed_response_alg: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub access_token_signed_response_alg: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub userinfo_signed_response_alg: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub introspection_signed_response_alg: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub authorization_signed_response_alg: Option<String>,
    /// Blank: any asymmetric algorithm.
    #[serde(deserialize_with = "forms::trimmed")]
    pub request_object_signing_alg: Option<String>,
    /// Blank: any algorithm the client's method takes.
    #[serde(deserialize_with = "forms::trimmed")]
    pub token_endpoint_auth_signing_alg: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub security_profile: Option<String>,
    /// Blank: the profile's default; `on` or `off`.
    #[serde(deserialize_with = "forms::trimmed")]
    pub refresh_token_rotation: Option<String>,
    #[serde(deserialize_with = "forms::ticked")]
    pub require_pushed_authorization_requests: bool,
    #[serde(deserialize_with = "forms::ticked")]
    pub require_signed_request_object: bool,
    #[serde(deserialize_with = "forms::ticked")]
    pub dpop_bound_access_tokens: bool,
    #[serde(deserialize_with = "forms::ticked")]
    pub tls_client_certificate_bound_access_tokens: bool,
    /// Which `tls_client_auth` subject field the value is (blank: none).
    #[serde(deserialize_with = "forms::trimmed")]
    pub tls_client_auth_subject_kind: Option<String>,
    #[serde(deserialize_with = "forms::trimmed")]
    pub tls_client_auth_subject: Option<String>,
    /// The client's revision the page was made of (its edit form).
    #[serde(deserialize_with = "forms::trimmed")]
    pub revision: Option<String>,
}

impl ClientFields {
    /// The authentication and signing the form chose (`None`: the form has
    /// no such fieldset).
    ///
    /// # Errors
    /// An unknown method or algorithm, or key set that is not JSON.
    fn security(&self) -> Result<Option<ClientSecurity>, ServiceError> {
        let Some(method) = self.token_endpoint_auth_method.as_deref() else { return Ok(None) };
        let mut problems = Vec::new();
        let token_endpoint_auth_method = AuthMethod::parse(method).unwrap_or_else(|| {
            let methods: Vec<_> = AuthMethod::ALL.into_iter().map(AuthMethod::as_str).collect();
            problems.push(Problem::new("tokenEndpointAuthMethod", format!("one of {}", methods.join(", "))));
            AuthMethod::default()
        });
        let jwks = self.jwks.as_deref().and_then(|text| {
            serde_json::from_str(text)
                .map_err(|e| problems.push(Problem::new("jwks", format!("not a JSON JWK Set: {e}"))))
                .ok()
        });
        let assertion_alg = self.token_endpoint_auth_signing_alg.as_deref().and_then(|name| {
            name.parse::<AssertionAlgorithm>()
                .map_err(|problem| problems.push(Problem::new("tokenEndpointAuthSigningAlg", problem)))
                .ok()
        });
        let mut alg = |place: &str, name: &Option<String>| {
            let name = name.as_deref()?;
            let alg = Algorithm::parse(name);
            if alg.is_none() {
                problems.push(Problem::new(place, format!("{name} is not an algorithm Portico signs with")));
            }
            alg
        };
        let security = ClientSecurity {
            token_endpoint_auth_method,
            jwks,
            jwks_uri: self.jwks_uri.clone(),
            id_token_signed_response_alg: alg("idTokenSignedResponseAlg", &self.id_token_signed_response_alg),
            userinfo_signed_response_alg: alg("userinfoSignedResponseAlg", &self.userinfo_signed_response_alg),
            access_token_signed_response_alg: alg(
                "accessTokenSignedResponseAlg",
                &self.access_token_signed_response_alg,
            ),
            introspection_signed_response_alg: alg(
                "introspectionSignedResponseAlg",
                &self.introspection_signed_response_alg,
            ),
            authorization_signed_response_alg: alg(
                "authorizationSignedResponseAlg",
                &self.authorization_signed_response_alg,
            ),
            request_object_signing_alg: alg("requestObjectSigningAlg", &self.request_object_signing_alg),
            token_endpoint_auth_signing_alg: assertion_alg,
            require_pushed_authorization_requests: self.require_pushed_authorization_requests,
            require_signed_request_object: self.require_signed_request_object,
            dpop_bound_access_tokens: self.dpop_bound_access_tokens,
            tls_client_certificate_bound_access_tokens: self.tls_client_certificate_bound_access_tokens,
            // Not on the form (registration sets it).
            logo_uri: None,
            ..ClientSecurity::default()
        };
        let mut security = security;
        match self.security_profile.as_deref().map(|name| (name, SecurityProfile::parse(name))) {
            None => {}
            Some((_, Some(profile))) => security.security_profile = profile,
            Some((name, None)) => {
                problems.push(Problem::new("securityProfile", format!("{name}: one of standard, fapi2, fapi-ru")));
            }
        }
        security.refresh_token_rotation = match self.refresh_token_rotation.as_deref() {
            None => None,
            Some("on") => Some(true),
            Some("off") => Some(false),
            Some(other) => {
                problems.push(Problem::new("refreshTokenRotation", format!("{other}: blank, on or off")));
                None
            }
        };
        let value = self.tls_client_auth_subject.clone();
        match self.tls_client_auth_subject_kind.as_deref() {
            None => {}
            Some("tls_client_auth_subject_dn") => security.tls_client_auth_subject_dn = value,
            Some("tls_client_auth_san_dns") => security.tls_client_auth_san_dns = value,
            Some("tls_client_auth_san_uri") => security.tls_client_auth_san_uri = value,
            Some("tls_client_auth_san_ip") => security.tls_client_auth_san_ip = value,
            Some("tls_client_auth_san_email") => security.tls_client_auth_san_email = value,
            Some(other) => problems.push(Problem::new("tlsClientAuthSubject", format!("{other}: not a subject field"))),
        }
        if problems.is_empty() { Ok(Some(security)) } else { Err(ServiceError::Invalid(problems)) }
    }
}

/// `POST /console/clients`: registers a client; its secret (given, or
/// generated when the field is blank) is shown once.
pub async fn create(State(console): State<ConsoleState>, headers: HeaderMap, body: Body) -> Result<Response, Refusal> {
    let (form, _, operator): (ClientFields, _, _) =
        console.read_form(&headers, body, "/console/clients/new", true, MAX_FORM).await?;
    let l = Layout::new(&headers, &operator, "clients", "/console/clients/new");
    let security = match form.security() {
        Ok(security) => security.unwrap_or_default(),
        Err(error) => return Ok(page::service_error(l, error, "/console/clients/new")),
    };
    let new = NewClient {
        client_id: form.client_id.unwrap_or_default(),
        secret: form.secret,
        redirect_uris: form.redirect_uris,
        scope: form.scope,
        name_ru: form.name_ru,
        name_en: form.name_en,
        require_consent: form.require_consent,
        post_logout_redirect_uris: form.post_logout_redirect_uris,
        logout_revokes_grants: form.logout_revokes_grants,
        backchannel_logout_uri: form.backchannel_logout_uri,
        security_profile: form.token_endpoint_auth_method.is_some().then_some(security.security_profile),
        security,
        registration_token_hash: None,
        awaiting_approval: false,
        spends_initial_access_token: None,
    };
    Ok(match console.admin.create_client(&operator.admin.actor, new).await {
        // A key or certificate client is given no secret to show.
        Ok((client, Some(secret))) => secret_page(l, client.client_id.to_string(), secret),
        Ok((client, _)) => see_other(&done(&format!("/console/clients/{}", client.client_id), "created")),
        Err(error) => page::service_error(l, error, "/console/clients/new"),
    })
}

/// `POST /console/clients/{id}`: every field of the form replaces the
/// stored one (a blank back-channel address removes it).
pub async fn update(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/clients/{id}");
    let (form, _, operator): (ClientFields, _, _) = console.read_form(&headers, body, &here, true, MAX_FORM).await?;
    let l = Layout::new(&headers, &operator, "clients", &here);
    let security = match form.security() {
        // Each choice replaces the stored one; the addresses registration
        // sets (logo, home page, policy, terms) are not on the form, and a
        // form without the profile keeps it.
        Ok(security) => security
            .map(|chosen| {
                SecurityChanges {
                    security_profile: form.security_profile.is_some().then_some(chosen.security_profile),
                    ..chosen.into()
                }
                .keeping_registered_pages()
            })
            .unwrap_or_default(),
        Err(error) => return Ok(page::service_error(l, error, &here)),
    };
    let changes = ClientChanges {
        redirect_uris: Some(form.redirect_uris),
        scope: form.scope,
        name_ru: form.name_ru,
        name_en: form.name_en,
        require_consent: Some(form.require_consent),
        post_logout_redirect_uris: Some(form.post_logout_redirect_uris),
        logout_revokes_grants: Some(form.logout_revokes_grants),
        backchannel_logout_uri: Some(form.backchannel_logout_uri),
        security,
        // Every field of the form replaces the stored one: only on what the
        // form was made of, never over a change made since.
        if_match: forms::revision(form.revision.as_deref()),
    };
    Ok(match console.admin.update_client(&operator.admin.actor, &id, changes).await {
        Ok(_) => see_other(&done(&here, "saved")),
        Err(error) => page::service_error(l, error, &here),
    })
}

/// `POST /console/clients/{id}/approve`: a registration held for an
/// operator's approval may authenticate and start logins from now on.
pub async fn approve(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/clients/{id}");
    let action = page::Action {
        admin: true,
        section: "clients",
        here: here.clone(),
        question: "confirm.approve_client",
        button: "client.approve",
        path: format!("{here}/approve"),
    };
    page::confirmed(
        &console,
        &headers,
        body,
        action,
        async |_| Ok(console.admin.client(&id).await?.client_id.to_string()),
        async |operator, _: &NoFields| {
            console.admin.approve_client(&operator.admin.actor, &id).await?;
            Ok(done(&here, "approved"))
        },
    )
    .await
}

/// `POST /console/clients/{id}/secret`: a new generated secret, shown
/// once; the old one stops working at once.
pub async fn rotate_secret(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/clients/{id}");
    let (_, form, operator): (NoFields, _, _) = console.read_form(&headers, body, &here, true, MAX_FORM).await?;
    let l = Layout::new(&headers, &operator, "clients", &here);
    if !form.confirmed() {
        let action = format!("{here}/secret");
        return Ok(page::confirm(l, &form, "confirm.client_secret", id, &action, "client.new_secret"));
    }
    Ok(match console.admin.rotate_client_secret(&operator.admin.actor, &id, None).await {
        Ok(secret) => secret_page(l, id, secret),
        Err(error) => page::service_error(l, error, &here),
    })
}

/// `POST /console/clients/{id}/delete`: the client, its grants and codes.
pub async fn delete(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    Segments(id): Segments<String>,
    body: Body,
) -> Result<Response, Refusal> {
    let here = format!("/console/clients/{id}");
    let action = page::Action {
        admin: true,
        section: "clients",
        here: here.clone(),
        question: "confirm.delete_client",
        button: "client.delete",
        path: format!("{here}/delete"),
    };
    page::confirmed(
        &console,
        &headers,
        body,
        action,
        async |_| Ok(console.admin.client(&id).await?.client_id.to_string()),
        async |operator, _: &NoFields| {
            console.admin.delete_client(&operator.admin.actor, &id).await?;
            Ok(done("/console/clients", "deleted"))
        },
    )
    .await
}
