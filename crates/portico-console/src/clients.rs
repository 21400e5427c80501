//! `/console/clients` (admin): the relying parties: registering one (a
//! generated or given secret, shown once), their addresses, scopes, names
//! and consent, a new secret, removal.

use askama::Template;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use portico_admin::service::{ClientChanges, NewClient};
use portico_model::client::Client;

use serde::Deserialize;

use crate::ConsoleState;
use crate::forms::{self, NoFields};
use crate::page::{self, Layout, MAX_FORM, Refusal, Segments, done, render};
use crate::session::{AdminOperator, see_other};

#[derive(Template)]
#[template(path = "clients.html")]
struct ClientsPage {
    l: Layout,
    clients: Vec<Client>,
}

/// `GET /console/clients`.
pub async fn list(
    State(console): State<ConsoleState>,
    headers: HeaderMap,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
    AdminOperator(operator): AdminOperator,
) -> Response {
    let query: page::Notice = page::query(raw.as_deref());
    let l = Layout::new(&headers, &operator, "clients", "/console/clients").with_notice(query.done.as_deref());
    match console.admin.list_clients().await {
        Ok(clients) => render(StatusCode::OK, &ClientsPage { l, clients }),
        Err(error) => page::service_error(l, error, "/console/"),
    }
}

#[derive(Template)]
#[template(path = "client.html")]
struct ClientPage {
    l: Layout,
    client: Client,
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
        Ok(client) => render(StatusCode::OK, &ClientPage { l, client }),
        Err(error) => page::service_error(l, error, "/console/clients"),
    }
}

#[derive(Template)]
#[template(path = "client_new.html")]
struct NewClientPage {
    l: Layout,
}

/// `GET /console/clients/new`.
pub async fn new_form(headers: HeaderMap, AdminOperator(operator): AdminOperator) -> Response {
    render(StatusCode::OK, &NewClientPage { l: Layout::new(&headers, &operator, "clients", "/console/clients/new") })
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
}

/// `POST /console/clients`: registers a client; its secret (given, or
/// generated when the field is blank) is shown once.
pub async fn create(State(console): State<ConsoleState>, headers: HeaderMap, body: Body) -> Result<Response, Refusal> {
    let (form, _, operator): (ClientFields, _, _) =
        console.read_form(&headers, body, "/console/clients/new", true, MAX_FORM).await?;
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
        // Key-based authentication and per-client algorithms are set
        // through the admin API and the CLI.
        security: Default::default(),
        registration_token_hash: None,
    };
    let l = Layout::new(&headers, &operator, "clients", "/console/clients/new");
    Ok(match console.admin.create_client(&operator.admin.actor, new).await {
        Ok((client, Some(secret))) => secret_page(l, client.client_id.to_string(), secret),
        Ok((client, None)) => see_other(&done(&format!("/console/clients/{}", client.client_id), "created")),
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
    let changes = ClientChanges {
        redirect_uris: Some(form.redirect_uris),
        scope: form.scope,
        name_ru: form.name_ru,
        name_en: form.name_en,
        require_consent: Some(form.require_consent),
        post_logout_redirect_uris: Some(form.post_logout_redirect_uris),
        logout_revokes_grants: Some(form.logout_revokes_grants),
        backchannel_logout_uri: Some(form.backchannel_logout_uri),
        // The form leaves authentication and signing as they are.
        security: Default::default(),
    };
    Ok(match console.admin.update_client(&operator.admin.actor, &id, changes).await {
        Ok(_) => see_other(&done(&here, "saved")),
        Err(error) => page::service_error(Layout::new(&headers, &operator, "clients", &here), error, &here),
    })
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
        async || Ok(console.admin.client(&id).await?.client_id.to_string()),
        async |operator, _: &NoFields| {
            console.admin.delete_client(&operator.admin.actor, &id).await?;
            Ok(done("/console/clients", "deleted"))
        },
    )
    .await
}
