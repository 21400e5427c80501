//! The `consent` step: the user grants the client some or all of the
//! requested scope groups (`selected_scope_groups`, comma-separated), or
//! declines (`deny`), which ends the login with `consent.denied` and a way
//! back to the client. The grant is remembered per user and client.

use portico_model::login::{LoginProcess, StepType, codes};
use portico_storage::StorageError;

use super::{Field, retry};
use crate::Identity;
use crate::edge::LoginStepRequest;
use crate::login::answer::Answer;
use crate::login::flow::fatal_with;
use crate::login::flow::{advance, requested_scope};
use crate::login::view::{ActionKind, ErrorAction, ErrorDetails};
use crate::login::{error_page, return_url_of};

pub async fn consent(
    identity: &Identity,
    mut process: LoginProcess,
    form: &LoginStepRequest,
) -> Result<Answer, StorageError> {
    let Some(user) = (match process.state.user_id {
        Some(id) => identity.store.find_user(id).await?,
        None => None,
    }) else {
        return Ok(fatal_with(identity, &process, codes::UNKNOWN_ERROR, ActionKind::RetryLogin).await);
    };
    if form.deny.is_some() {
        let details = ErrorDetails {
            error_code: codes::CONSENT_DENIED.to_owned(),
            actions: vec![ErrorAction { action: ActionKind::Redirect, url: Some(return_url_of(identity, &process)) }],
        };
        return Ok(error_page::error(identity, details, Some(&process)).await);
    }
    let available = portico_model::consent::groups(&requested_scope(&process.state));
    let selected: Vec<String> =
        form.selected_scope_groups.0.iter().filter(|group| available.contains(group)).cloned().collect();
    if selected.is_empty() {
        process.state.consent_choice = Some(selected);
        return retry(identity, process, Field::Other, codes::CONSENT_NOTHING_SELECTED, false).await;
    }
    let now = identity.clock.now();
    identity.store.grant_consent(user.id, &process.state.client_id, &selected, now).await?;
    process.state.granted_groups = Some(selected);
    advance(identity, process, &user, StepType::Consent, None).await
}
