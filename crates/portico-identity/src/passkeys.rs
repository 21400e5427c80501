//! Passkeys (WebAuthn Level 3) through `webauthn-rs`: enrolment of a
//! passkey for a signed-in user and a sign-in with one, each a ceremony of
//! two halves whose state (the challenge) the caller holds server-side —
//! in the login process — and spends once.
//!
//! The relying party is Portico's public URL: its host is the RP ID and its
//! origin the only one taken. User verification is required for both
//! ceremonies, attestation is `none`, and credentials are made discoverable
//! so that a passkey signs in without a login typed first (the browser's
//! autofill). WebAuthn refuses an IP address as RP ID, so on such a public
//! URL passkeys are off ([`Passkeys::unavailable`] says why).
//!
//! A sign-in is refused for an unknown credential, a credential whose user
//! handle is not its owner's, a locked passkey, and a signature counter
//! that does not advance (WebAuthn Level 3 §7.2 step 22: a possible clone),
//! which also locks the passkey. The counter is advanced in the write that
//! records the use, so of two assertions showing one counter value exactly
//! one passes.

use portico_crypto::b64url;
use portico_model::audit::{AuditEvent, AuditKind};
use portico_model::ids::UserId;
use portico_model::passkey::Passkey as StoredPasskey;
use portico_storage::{PasskeyStored, Storage, StorageError};
use time::OffsetDateTime;
use url::Url;
use uuid::Uuid;
use webauthn_rs::prelude::{
    AttestationCaList, AttestationCaListBuilder, AttestedPasskeyRegistration, Credential, DiscoverableAuthentication,
    Passkey, PasskeyRegistration, PublicKeyCredential, RegisterPublicKeyCredential, WebauthnError,
};
use webauthn_rs::{Webauthn, WebauthnBuilder};

/// The largest browser answer taken (a credential's JSON with its
/// `clientDataJSON` and authenticator data), in bytes.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024;
/// How long a ceremony's challenge is good for.
pub const CHALLENGE_SECONDS: u64 = 300;

/// Why a ceremony failed, for the page that shows it (never a 500).
#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    #[error("passkeys are off: {0}")]
    Unavailable(String),
    #[error("the browser's answer is not a WebAuthn credential")]
    Malformed,
    #[error("the passkey is not known here")]
    UnknownCredential,
    #[error("the passkey is locked")]
    Locked,
    #[error("the passkey's signature counter did not advance: it may be a copy, and is locked now")]
    PossibleClone,
    #[error("the user keeps as many passkeys as allowed")]
    TooMany,
    #[error("the passkey is registered already")]
    Taken,
    #[error("the user is gone")]
    NoUser,
    #[error("the passkey was refused: {0}")]
    Refused(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The relying party: Portico's WebAuthn, or why there is none.
pub struct Passkeys {
    webauthn: Result<Webauthn, String>,
    /// The authenticator models accepted at enrolment, when the bank
    /// limits them: their attestation must chain to one of these CAs and
    /// name one of the allowed AAGUIDs. `None`: any authenticator,
    /// attestation `none`.
    attestation: Option<AttestationCaList>,
}

impl std::fmt::Debug for Passkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passkeys").field("available", &self.webauthn.is_ok()).finish()
    }
}

/// A ceremony's first half: what the page hands to
/// `navigator.credentials` (`publicKey` options, JSON) and the state the
/// server keeps until the second half.
#[derive(Debug, Clone)]
pub struct Started {
    pub options: serde_json::Value,
    pub state: String,
}

/// A passkey sign-in that passed.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user_id: UserId,
    pub passkey: StoredPasskey,
    /// Whether the authenticator verified the user (always, as required).
    pub user_verified: bool,
}

impl Passkeys {
    /// The relying party of `public_url` (Portico's issuer), named
    /// `rp_name` to the user's authenticator.
    pub fn new(public_url: &str, rp_name: &str) -> Self {
        Self { webauthn: relying_party(public_url, rp_name), attestation: None }
    }

    /// Accepts at enrolment only the authenticator models `aaguids`, whose
    /// attestation (asked for as `direct`) chains to one of the CA
    /// certificates in `ca_pem` (one PEM file, several certificates). A
    /// passkey enrolled before keeps working.
    ///
    /// # Errors
    /// No AAGUID, or a PEM without a certificate WebAuthn takes.
    pub fn allowing_only(mut self, aaguids: &[Uuid], ca_pem: &[u8]) -> Result<Self, String> {
        if aaguids.is_empty() {
            return Err("no AAGUID listed".to_owned());
        }
        let certificates = pem_certificates(ca_pem);
        if certificates.is_empty() {
            return Err("the attestation CA file holds no PEM certificate".to_owned());
        }
        let mut builder = AttestationCaListBuilder::new();
        for certificate in &certificates {
            for aaguid in aaguids {
                builder
                    .insert_device_pem(certificate.as_bytes(), *aaguid, aaguid.to_string(), Default::default())
                    .map_err(|e| format!("an attestation CA certificate does not read: {e:?}"))?;
            }
        }
        self.attestation = Some(builder.build());
        Ok(self)
    }

    /// Why passkeys are off (`None`: they are on).
    pub fn unavailable(&self) -> Option<&str> {
        self.webauthn.as_ref().err().map(String::as_str)
    }

    fn webauthn(&self) -> Result<&Webauthn, PasskeyError> {
        self.webauthn.as_ref().map_err(|why| PasskeyError::Unavailable(why.clone()))
    }

    /// Starts enrolling a passkey for `user_id` (`login` and `name` as the
    /// authenticator shows them), excluding the passkeys the user has.
    ///
    /// # Errors
    /// [`PasskeyError::Unavailable`], or [`PasskeyError::Refused`] if the
    /// library cannot make a challenge.
    pub fn start_enrolment(
        &self,
        user_id: UserId,
        login: &str,
        name: &str,
        existing: &[StoredPasskey],
    ) -> Result<Started, PasskeyError> {
        let exclude =
            existing.iter().filter_map(|p| portico_crypto::b64url_decode(&p.credential_id).ok()).collect::<Vec<_>>();
        let webauthn = self.webauthn()?;
        let (options, state) = match &self.attestation {
            None => {
                let (options, state) =
                    webauthn.start_passkey_registration(user_id.into(), login, name, Some(exclude)).map_err(refused)?;
                (options, to_text(&Registration::Any(state))?)
            }
            Some(cas) => {
                let (options, state) = webauthn
                    .start_attested_passkey_registration(user_id.into(), login, name, Some(exclude), cas.clone(), None)
                    .map_err(refused)?;
                (options, to_text(&Registration::Attested(state))?)
            }
        };
        let mut options = to_json(&options)?;
        // Discoverable, so that the passkey signs in without a login typed
        // (the state does not depend on it).
        if let Some(selection) = options.pointer_mut("/publicKey/authenticatorSelection") {
            selection["residentKey"] = "required".into();
            selection["requireResidentKey"] = true.into();
        }
        Ok(Started { options, state })
    }

    /// Finishes an enrolment: checks the browser's `response` against
    /// `state` and stores the passkey as `name` for `user_id`, audited.
    ///
    /// # Errors
    /// [`PasskeyError::Malformed`] or [`PasskeyError::Refused`] for a bad
    /// answer; [`PasskeyError::Taken`], [`PasskeyError::TooMany`],
    /// [`PasskeyError::NoUser`] when it cannot be stored (nothing is).
    pub async fn finish_enrolment(
        &self,
        store: &dyn Storage,
        user_id: UserId,
        state: &str,
        response: &str,
        name: &str,
        now: OffsetDateTime,
    ) -> Result<StoredPasskey, PasskeyError> {
        let webauthn = self.webauthn()?;
        let state: Registration = from_text(state)?;
        let response: RegisterPublicKeyCredential = from_response(response)?;
        let passkey = match state {
            Registration::Any(state) => webauthn.finish_passkey_registration(&response, &state).map_err(refused)?,
            Registration::Attested(state) => {
                Passkey::from(webauthn.finish_attested_passkey_registration(&response, &state).map_err(refused)?)
            }
        };
        let credential: Credential = passkey.clone().into();
        let stored = StoredPasskey {
            id: Uuid::new_v4(),
            user_id,
            credential_id: b64url(passkey.cred_id().as_slice()),
            name: name.to_owned(),
            credential: to_text(&passkey)?,
            sign_count: credential.counter,
            created_at: now,
            last_used_at: None,
            locked_at: None,
        };
        let audit = AuditEvent::new(now, AuditKind::PasskeyCreated)
            .user(user_id)
            .detail(serde_json::json!({ "passkey": stored.id, "name": stored.name }));
        match store.insert_passkey(&stored, &audit).await? {
            PasskeyStored::Stored => Ok(stored),
            PasskeyStored::CredentialTaken => Err(PasskeyError::Taken),
            PasskeyStored::TooMany => Err(PasskeyError::TooMany),
            PasskeyStored::NoUser => Err(PasskeyError::NoUser),
        }
    }

    /// Starts a sign-in with whichever passkey the browser offers (a
    /// discoverable credential; also the autofill's, conditional mediation).
    ///
    /// # Errors
    /// [`PasskeyError::Unavailable`], or [`PasskeyError::Refused`] if the
    /// library cannot make a challenge.
    pub fn start_sign_in(&self) -> Result<Started, PasskeyError> {
        let (options, state) = self.webauthn()?.start_discoverable_authentication().map_err(refused)?;
        Ok(Started { options: to_json(&options)?, state: to_text(&state)? })
    }

    /// Finishes a sign-in: checks the browser's `response` against `state`
    /// and the stored passkey, advances its counter and records the use.
    /// The caller decides whether the user may sign in (blocked, deleted).
    ///
    /// # Errors
    /// The [`PasskeyError`] that says why; a counter that does not advance
    /// locks the passkey ([`PasskeyError::PossibleClone`], audited).
    pub async fn finish_sign_in(
        &self,
        store: &dyn Storage,
        state: &str,
        response: &str,
        now: OffsetDateTime,
    ) -> Result<SignedIn, PasskeyError> {
        let webauthn = self.webauthn()?;
        let state: DiscoverableAuthentication = from_text(state)?;
        let response: PublicKeyCredential = from_response(response)?;
        let (handle, credential_id) =
            webauthn.identify_discoverable_authentication(&response).map_err(|_| PasskeyError::Malformed)?;
        let stored = store.find_passkey(&b64url(credential_id)).await?.ok_or(PasskeyError::UnknownCredential)?;
        // The user handle the authenticator signed for must be the owner's.
        if Uuid::from(stored.user_id) != handle {
            return Err(PasskeyError::UnknownCredential);
        }
        if stored.locked_at.is_some() {
            return Err(PasskeyError::Locked);
        }
        let mut passkey: Passkey = from_text(&stored.credential)?;
        let credential: Credential = passkey.clone().into();
        let result = match webauthn.finish_discoverable_authentication_v2(&response, state, &credential) {
            Ok(result) => result,
            Err(WebauthnError::CredentialPossibleCompromise) => return Err(self.lock(store, &stored, now).await?),
            Err(error) => return Err(refused(error)),
        };
        passkey.update_credential(&result);
        let audit = AuditEvent::new(now, AuditKind::PasskeyUsed)
            .user(stored.user_id)
            .detail(serde_json::json!({ "passkey": stored.id }));
        if !store.record_passkey_use(stored.id, &to_text(&passkey)?, result.counter(), now, &audit).await? {
            // Locked or removed meanwhile, or another use showed this counter.
            return Err(match store.find_passkey(&stored.credential_id).await? {
                Some(now_stored) if now_stored.locked_at.is_none() => self.lock(store, &stored, now).await?,
                Some(_) => PasskeyError::Locked,
                None => PasskeyError::UnknownCredential,
            });
        }
        let passkey = StoredPasskey { sign_count: result.counter(), last_used_at: Some(now), ..stored };
        Ok(SignedIn { user_id: passkey.user_id, passkey, user_verified: result.user_verified() })
    }

    /// Locks `stored` after a counter that did not advance, audited.
    async fn lock(
        &self,
        store: &dyn Storage,
        stored: &StoredPasskey,
        now: OffsetDateTime,
    ) -> Result<PasskeyError, PasskeyError> {
        let audit = AuditEvent::new(now, AuditKind::PasskeyLocked)
            .user(stored.user_id)
            .detail(serde_json::json!({ "passkey": stored.id, "reason": "signature counter did not advance" }));
        store.lock_passkey(stored.id, now, &audit).await?;
        tracing::warn!(user = %stored.user_id, passkey = %stored.id, "a passkey's signature counter did not advance: locked");
        Ok(PasskeyError::PossibleClone)
    }
}

/// An enrolment's state: of any authenticator, or of an allowed model.
#[derive(serde::Serialize, serde::Deserialize)]
enum Registration {
    Any(PasskeyRegistration),
    Attested(AttestedPasskeyRegistration),
}

/// The PEM certificates in `pem`, each with its armour.
fn pem_certificates(pem: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(pem);
    let (begin, end) = ("-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----");
    let mut found = Vec::new();
    let mut rest = text.as_ref();
    while let Some(start) = rest.find(begin) {
        let Some(stop) = rest[start..].find(end) else { break };
        found.push(rest[start..start + stop + end.len()].to_owned());
        rest = &rest[start + stop + end.len()..];
    }
    found
}

/// The relying party of `public_url`, or why there is none.
fn relying_party(public_url: &str, rp_name: &str) -> Result<Webauthn, String> {
    let url = Url::parse(public_url).map_err(|e| format!("the public URL {public_url} does not parse: {e}"))?;
    let host = match url.host() {
        Some(url::Host::Domain(host)) => host.to_owned(),
        Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => {
            return Err(format!(
                "the public URL {public_url} names an IP address, which WebAuthn does not take as a relying \
                 party: use a host name (http://localhost:8080 for the demo)"
            ));
        }
        None => return Err(format!("the public URL {public_url} has no host")),
    };
    let origin = Url::parse(&url.origin().ascii_serialization()).map_err(|e| e.to_string())?;
    WebauthnBuilder::new(&host, &origin)
        .and_then(|b| b.rp_name(rp_name).timeout(std::time::Duration::from_secs(CHALLENGE_SECONDS)).build())
        .map_err(|e| format!("WebAuthn refuses the public URL {public_url}: {e}"))
}

fn refused(error: WebauthnError) -> PasskeyError {
    PasskeyError::Refused(error.to_string())
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, PasskeyError> {
    serde_json::to_value(value).map_err(|e| PasskeyError::Refused(e.to_string()))
}

fn to_text<T: serde::Serialize>(value: &T) -> Result<String, PasskeyError> {
    serde_json::to_string(value).map_err(|e| PasskeyError::Refused(e.to_string()))
}

/// A state or stored credential Portico wrote itself.
fn from_text<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, PasskeyError> {
    serde_json::from_str(text).map_err(|e| PasskeyError::Refused(format!("stored WebAuthn state does not read: {e}")))
}

/// The browser's answer, bounded.
fn from_response<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, PasskeyError> {
    if text.len() > MAX_RESPONSE_BYTES {
        return Err(PasskeyError::Malformed);
    }
    serde_json::from_str(text).map_err(|_| PasskeyError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ip_address_as_public_url_turns_passkeys_off_with_the_reason() {
        let off = Passkeys::new("http://127.0.0.1:8080", "Portico");
        assert!(off.unavailable().is_some_and(|why| why.contains("IP address") && why.contains("localhost")));
        assert!(matches!(off.start_sign_in(), Err(PasskeyError::Unavailable(_))));
        assert!(Passkeys::new("http://localhost:8080", "Portico").unavailable().is_none());
        assert!(Passkeys::new("https://id.bank.example", "Portico").unavailable().is_none());
    }

    #[test]
    fn an_enrolment_asks_for_a_discoverable_user_verified_passkey_of_this_host() {
        let passkeys = Passkeys::new("https://id.bank.example", "Bank");
        let started = passkeys.start_enrolment(UserId::random(), "ivan", "Ivan", &[]).unwrap();
        let options = &started.options["publicKey"];
        assert_eq!(options["rp"]["id"], "id.bank.example");
        assert_eq!(options["authenticatorSelection"]["residentKey"], "required");
        assert_eq!(options["authenticatorSelection"]["userVerification"], "required");
        assert_eq!(options["attestation"], "none");
        let challenge = options["challenge"].as_str().unwrap();
        assert!(challenge.len() >= 43, "at least 32 random bytes");
    }
}
