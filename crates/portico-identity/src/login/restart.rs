//! `GET /login/restart` (operation `restartLogin`): after an error, start the
//! original authorization again.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::{ClientEntry, authorize_url};
use crate::IdentityState;
use crate::cookies::{self, SetCookies};
use crate::http::redirect;

#[utoipa::path(
    get,
    path = "/login/restart",
    operation_id = "restartLogin",
    tag = "login",
    params(crate::edge::RestartCookies),
    responses(
        (status = 302, description = "To the restored `/oauth2/authorize` request, the client address of \
                                      `login_client_entry`, or the logged-out page.",
         headers(("Location" = String), ("Set-Cookie" = String, description = "Clears `failed_authentication_flow_id`, `authentication_flow`.")))
    )
)]
pub async fn restart(State(identity): State<IdentityState>, headers: HeaderMap) -> Response {
    let now = identity.clock.now();
    let failed = cookies::process_id(&headers, cookies::FAILED_AUTHENTICATION_FLOW_ID);
    let process = match failed {
        Some(id) => identity.store.find_login_process(id, now).await.ok().flatten(),
        None => None,
    };
    let mut response = match (&process, ClientEntry::from_cookie(&identity, &headers)) {
        (Some(process), _) => redirect(StatusCode::FOUND, &authorize_url(&identity, process)),
        (None, Some(entry)) => entry.respond(&identity, &headers).await,
        (None, None) => redirect(StatusCode::FOUND, &identity.settings.logged_out_url),
    };
    if let Some(process) = process {
        // The restored request starts a fresh process; the failed one is done.
        let _ = identity.store.delete_login_process(process.id).await;
    }
    let mut set = SetCookies::new(identity.settings.secure_cookies);
    set.clear(cookies::FAILED_AUTHENTICATION_FLOW_ID).clear(cookies::AUTHENTICATION_FLOW);
    set.apply(response.headers_mut());
    response
}
