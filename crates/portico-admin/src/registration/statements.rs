//! Software statements (RFC 7591 §2.3): JWTs an issuer the bank trusts
//! signed about a client's software, whose claims take precedence over the
//! registration body's.

use portico_crypto::jose::{self, AssertionError, KeySet};
use serde_json::Value;

use super::RegistrationError;

/// An issuer of software statements the bank trusts, with its public keys.
pub struct TrustedIssuer {
    /// The statements' `iss`.
    pub issuer: String,
    pub keys: KeySet,
}

/// The software statement rules (`registration.software_statement_issuers`,
/// `registration.require_software_statement`).
#[derive(Default)]
pub struct SoftwareStatements {
    pub issuers: Vec<TrustedIssuer>,
    /// Whether a registration must carry a statement of a trusted issuer.
    pub required: bool,
}

/// Claims of a software statement that are about the JWT, not the client,
/// and members a statement may not set.
const NOT_METADATA: [&str; 10] =
    ["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "client_secret", "software_statement"];

impl SoftwareStatements {
    /// The metadata a statement asserts, once its signature and times are
    /// checked (at `now`, Unix seconds).
    ///
    /// # Errors
    /// `invalid_software_statement` for a statement that is not a JWT, is
    /// badly signed, expired or not yet valid; `unapproved_software_statement`
    /// for one of an issuer not trusted here.
    pub(super) fn verify(
        &self,
        statement: &str,
        now: i64,
    ) -> Result<serde_json::Map<String, Value>, RegistrationError> {
        let invalid = |why: String| RegistrationError::statement("invalid_software_statement", why);
        let parsed = jose::Assertion::parse(statement).map_err(|_| invalid("not a signed JWT".into()))?;
        let issuer = parsed.claims().get("iss").and_then(Value::as_str);
        let issuer = issuer.ok_or_else(|| invalid("has no iss".into()))?;
        let Some(trusted) = self.issuers.iter().find(|trusted| trusted.issuer == issuer) else {
            return Err(RegistrationError::statement(
                "unapproved_software_statement",
                format!("the issuer {issuer:?} is not one this bank trusts"),
            ));
        };
        parsed.verify_signature(&trusted.keys).map_err(|error| {
            invalid(match error {
                AssertionError::UnknownKey => "no key of its issuer matches its kid and alg".into(),
                AssertionError::Algorithm(alg, _) => {
                    format!("is signed with {alg}; statements are signed with PS256, ES256, EdDSA or RS256")
                }
                _ => "its signature does not verify with its issuer's keys".into(),
            })
        })?;
        let time = |name: &str| {
            parsed.claims().get(name).map(|v| v.as_i64().ok_or_else(|| invalid(format!("{name} is not a number"))))
        };
        if let Some(exp) = time("exp").transpose()?
            && exp + jose::LEEWAY <= now
        {
            return Err(invalid("has expired".into()));
        }
        for name in ["nbf", "iat"] {
            if time(name).transpose()?.is_some_and(|at| at > now + jose::LEEWAY) {
                return Err(invalid(format!("is not valid yet ({name} in the future)")));
            }
        }
        let mut claims = parsed.claims().as_object().cloned().unwrap_or_default();
        claims.retain(|name, _| !NOT_METADATA.contains(&name.as_str()));
        Ok(claims)
    }
}
