//! Client applications (OAuth relying parties).

use crate::ids::ClientId;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// A registered client system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub client_id: ClientId,
    /// Hash of the client secret (see `portico_crypto::secret`), never the secret.
    pub secret_hash: String,
    pub name: LocalizedText,
    /// Redirect URIs, compared by exact string match.
    pub redirect_uris: Vec<String>,
    /// Scopes this client may request.
    pub scopes: Vec<String>,
    /// Whether the user must consent before this client gets a code.
    pub require_consent: bool,
    /// Where RP-initiated logout may return the browser, compared by exact
    /// string match.
    pub post_logout_redirect_uris: Vec<String>,
    /// Ending a single sign-on session revokes the grants this client got
    /// under it (its refresh tokens and access tokens die with them).
    pub logout_revokes_grants: bool,
    /// Where back-channel logout tokens are posted when a session the client
    /// has a grant under ends (OpenID Connect Back-Channel Logout 1.0).
    pub backchannel_logout_uri: Option<String>,
    pub created_at: OffsetDateTime,
}

impl Client {
    pub fn has_redirect_uri(&self, uri: &str) -> bool {
        self.redirect_uris.iter().any(|u| u == uri)
    }

    pub fn has_post_logout_redirect_uri(&self, uri: &str) -> bool {
        self.post_logout_redirect_uris.iter().any(|u| u == uri)
    }

    pub fn allows_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

/// A display text in the two languages of the login pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalizedText {
    pub ru: String,
    pub en: String,
}

impl LocalizedText {
    pub fn same(text: impl Into<String>) -> Self {
        let text = text.into();
        Self { ru: text.clone(), en: text }
    }
}
