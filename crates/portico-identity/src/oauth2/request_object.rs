//! Request objects (RFC 9101, JAR): an authorization request's parameters
//! as the claims of a JWT signed with one of the client's keys, given by
//! value at authorize (`request`) or at `/oauth2/par`. The rules of the
//! JWT itself are [`portico_crypto::jose::verify_request_object`]'s; here
//! the client's keys are found (fetched again once when the object names a
//! key its set lacks) and the claims become the parameters authorize
//! checks, read by the same reader as a query: a string claim as it is, a
//! whole number as its digits, and claims of other types not at all (none
//! of the parameters Portico reads is one).
//!
//! Request objects are not fetched from a `request_uri`: the only
//! `request_uri` Portico takes is one its own `/oauth2/par` issued.

use portico_crypto::jose::{self, RequestObjectError, RequestObjectRules};
use portico_model::client::Client;
use portico_model::form::Form;
use serde_json::Value;

use crate::Identity;
use crate::edge::AuthorizeQuery;

/// The parameters of `client`'s request object `object`.
///
/// # Errors
/// Why the object is refused, in words for the client's developer.
pub(crate) async fn read(identity: &Identity, client: &Client, object: &str) -> Result<AuthorizeQuery, String> {
    let parsed = jose::Assertion::parse(object).map_err(|_| "the request object is not a signed JWT".to_owned())?;
    let rules = RequestObjectRules {
        client_id: client.client_id.as_str(),
        issuer: &identity.settings.issuer,
        alg: client.security.request_object_signing_alg,
        now: identity.clock.now().unix_timestamp(),
    };
    let keys = identity.client_keys.keys(client, false).await?;
    let claims = match jose::verify_request_object(&parsed, &keys, &rules) {
        Err(RequestObjectError::UnknownKey) => {
            // The client may have added a key since its set was fetched.
            let keys = identity.client_keys.keys(client, true).await?;
            jose::verify_request_object(&parsed, &keys, &rules)
        }
        outcome => outcome,
    }
    .map_err(|error| error.to_string())?;
    let profile = client.security.security_profile;
    if let Some(alg) = parsed.algorithm().filter(|alg| !profile.allows_algorithm(*alg)) {
        return Err(format!(
            "the client's security profile {profile} takes request objects signed with {}, not {alg}",
            profile.algorithms_text()
        ));
    }
    if profile.requires_request_object_nbf() && !claims.contains_key("nbf") {
        return Err(format!("the request object has no nbf, which the client's security profile {profile} requires"));
    }
    let pairs = claims
        .into_iter()
        .filter(|(name, _)| !jose::REQUEST_OBJECT_JWT_CLAIMS.contains(&name.as_str()))
        .filter_map(|(name, value)| match value {
            Value::String(text) => Some((name, text)),
            Value::Number(number) if number.is_u64() || number.is_i64() => Some((name, number.to_string())),
            _ => None,
        })
        .collect();
    // Every field is a `Param`, which holds any reading: this cannot fail.
    Ok(Form::from_pairs(pairs).read_each().unwrap_or_default())
}
