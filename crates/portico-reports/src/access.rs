//! Who may do what. On the public API (`/v1/reports/...`): `Authorization`
//! and `Id-Token` verified as in the permissions API (both Portico's, same
//! login), then report rights in the company. `cnum` is optional: without it
//! the one company where the user holds the right is used; a user with the
//! right in several companies must name one (400 naming `cnum`); none is 403.
//!
//! On the bank's own channel (`/internal/v1/reports/...`): the internal
//! token, acting for any company, which every request that needs one names
//! with `cnum`.
//!
//! The caller is an extractor ([`Caller`]); which company it acts in, and
//! whether it may, is [`Reports::access`] (or [`Reports::may`] for a task
//! or file found by id).

use uuid::Uuid;

use portico_model::form::Param;

use crate::error::ReportError;
use crate::{Channel, OBJECT, Reports, ReportsState};

/// Report actions of the permission catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    View,
    Create,
    Download,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Create => "create",
            Self::Download => "download",
        }
    }
}

/// Who is calling, verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A user of the public API.
    User(Uuid),
    /// Another system of the bank, with the internal token.
    Bank,
}

impl Caller {
    pub fn user(self) -> Option<Uuid> {
        match self {
            Self::User(user) => Some(user),
            Self::Bank => None,
        }
    }
}

/// A verified caller acting in a company.
#[derive(Debug, Clone)]
pub struct Access {
    pub caller: Caller,
    pub cnum: String,
}

/// A `cnum` as the query gives it: digits, at most 20.
///
/// # Errors
/// `VALIDATION_ERROR` naming `cnum`.
pub fn parse_cnum(raw: &str) -> Result<String, ReportError> {
    let cnum = raw.trim();
    if cnum.is_empty() || cnum.len() > 20 || !cnum.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_a_cnum());
    }
    Ok(cnum.to_owned())
}

fn not_a_cnum() -> ReportError {
    ReportError::field("cnum", "the client organization id: 1 to 20 digits")
}

/// The `cnum` a query gave: `None` when absent; given (even empty), it must
/// be one.
///
/// # Errors
/// `VALIDATION_ERROR` for a `cnum` that is not one.
pub fn given_cnum(param: &Param<String>) -> Result<Option<String>, ReportError> {
    match crate::tasks::text(param) {
        Ok(None) => Ok(None),
        Ok(Some(raw)) => parse_cnum(raw).map(Some),
        Err(_) => Err(not_a_cnum()),
    }
}

/// The verified caller, read from the request before the handler runs:
/// the user behind the token pair on the public API, the bank with the
/// internal token on its channel. No handler reads a credential itself.
impl axum::extract::FromRequestParts<ReportsState> for Caller {
    type Rejection = ReportError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        api: &ReportsState,
    ) -> Result<Self, ReportError> {
        let channel = parts.extensions.get::<Channel>().copied().unwrap_or(Channel::Public);
        api.verify(channel, parts).await
    }
}

impl Reports {
    /// The verified caller: the user behind the request's token pair, or
    /// the bank on its channel.
    ///
    /// # Errors
    /// `UNAUTHORIZED` for a missing or bad token.
    async fn verify(&self, channel: Channel, parts: &axum::http::request::Parts) -> Result<Caller, ReportError> {
        let headers = &parts.headers;
        match channel {
            Channel::Public => {
                let certificate = parts.extensions.get::<portico_crypto::certificate::Presented>();
                let (method, path) = (parts.method.as_str(), portico_api::called_path(parts));
                let pair = self
                    .tokens
                    .check_token_pair(headers, certificate, method, path)
                    .await
                    .map_err(|error| ReportError::refused_pair(headers, error))?;
                Ok(Caller::User(pair.user_id.as_uuid()))
            }
            Channel::Bank if self.api_tokens.is_internal(headers) => Ok(Caller::Bank),
            Channel::Bank => Err(ReportError::Unauthorized(
                "the internal token is missing or wrong".into(),
                portico_tokens::Challenge::for_request(headers, false),
            )),
        }
    }

    /// The company `caller` acts in, where it holds `action`.
    ///
    /// # Errors
    /// `VALIDATION_ERROR` (`cnum`), `FORBIDDEN`.
    pub async fn access(&self, caller: Caller, cnum: &Param<String>, action: Action) -> Result<Access, ReportError> {
        let cnum = given_cnum(cnum)?;
        let Caller::User(user) = caller else {
            let cnum = cnum.ok_or_else(|| ReportError::field("cnum", "required: the company the report is for"))?;
            return Ok(Access { caller, cnum });
        };
        let model = self.permissions.model().await?;
        if let Some(cnum) = cnum {
            if !model.allowed(user, &cnum, OBJECT, action.as_str()) {
                return Err(ReportError::Forbidden(format!(
                    "the user may not {} reports of the company {cnum}",
                    action.as_str()
                )));
            }
            return Ok(Access { caller, cnum });
        }
        let companies: Vec<&String> =
            model.companies_of(user).iter().filter(|c| model.allowed(user, c, OBJECT, action.as_str())).collect();
        match companies.as_slice() {
            [] => Err(ReportError::Forbidden(format!("the user may not {} reports in any company", action.as_str()))),
            [cnum] => Ok(Access { caller, cnum: (*cnum).clone() }),
            _ => Err(ReportError::field(
                "cnum",
                "the user holds report rights in several companies: name one with the cnum parameter",
            )),
        }
    }

    /// Whether `caller` holds `action` in the company `cnum` (for a task or
    /// file looked up by id); the bank holds every right.
    ///
    /// # Errors
    /// When the permission model cannot be read.
    pub async fn may(&self, caller: Caller, cnum: &str, action: Action) -> Result<bool, ReportError> {
        match caller {
            Caller::User(user) => Ok(self.permissions.allowed(user, cnum, OBJECT, action.as_str()).await?),
            Caller::Bank => Ok(true),
        }
    }
}
