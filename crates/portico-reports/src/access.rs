//! Who may do what. On the public API (`/v1/reports/...`): `Authorization`
//! and `Id-Token` verified as in the permissions API (both Portico's, same
//! login), then report rights in the company. `cnum` is optional: without it
//! the one company where the user holds the right is used; a user with the
//! right in several companies must name one (400 naming `cnum`); none is 403.
//!
//! On the bank's own channel (`/internal/v1/reports/...`): the internal
//! token, acting for any company, which every request that needs one names
//! with `cnum`.

use axum::http::HeaderMap;
use uuid::Uuid;

use crate::error::ReportError;
use crate::{Channel, OBJECT, Reports};

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
        return Err(ReportError::field("cnum", "the client organization id: 1 to 20 digits"));
    }
    Ok(cnum.to_owned())
}

impl Reports {
    /// The verified caller: the user behind the request's token pair, or
    /// the bank on its channel.
    ///
    /// # Errors
    /// `UNAUTHORIZED` for a missing or bad token.
    pub async fn caller(&self, channel: Channel, headers: &HeaderMap) -> Result<Caller, ReportError> {
        match channel {
            Channel::Public => Ok(Caller::User(self.tokens.check_token_pair(headers).await?.user_id.as_uuid())),
            Channel::Bank if self.is_internal(headers) => Ok(Caller::Bank),
            Channel::Bank => Err(ReportError::Unauthorized("the internal token is missing or wrong".into())),
        }
    }

    /// Whether the request carries the internal token (`Bearer`).
    pub fn is_internal(&self, headers: &HeaderMap) -> bool {
        self.api_tokens.is_internal(headers)
    }

    /// The company the request acts in, where the caller holds `action`.
    ///
    /// # Errors
    /// `UNAUTHORIZED`, `VALIDATION_ERROR` (`cnum`), `FORBIDDEN`.
    pub async fn access(
        &self,
        channel: Channel,
        headers: &HeaderMap,
        cnum: Option<&str>,
        action: Action,
    ) -> Result<Access, ReportError> {
        let caller = self.caller(channel, headers).await?;
        let Caller::User(user) = caller else {
            let raw = cnum.ok_or_else(|| ReportError::field("cnum", "required: the company the report is for"))?;
            return Ok(Access { caller, cnum: parse_cnum(raw)? });
        };
        let model = self.permissions.model().await?;
        if let Some(raw) = cnum {
            let cnum = parse_cnum(raw)?;
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

    /// What a look-up by id reads from the request: the verified caller,
    /// the id in the path (`parameter` names it) and the optional `cnum`.
    ///
    /// # Errors
    /// `UNAUTHORIZED`, `VALIDATION_ERROR`.
    pub async fn by_id<Id: From<Uuid>>(
        &self,
        channel: Channel,
        headers: &HeaderMap,
        query: Option<&str>,
        parameter: &str,
        raw_id: &str,
    ) -> Result<(Caller, Id, Option<String>), ReportError> {
        let params = crate::tasks::Params::parse(query);
        params.only(&["cnum"])?;
        let user = self.caller(channel, headers).await?;
        let id = crate::tasks::parse_id(parameter, raw_id)?;
        let cnum = params.get("cnum").map(parse_cnum).transpose()?;
        Ok((user, id.into(), cnum))
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
