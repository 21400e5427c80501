//! Who may do what: `Authorization` and `Id-Token` verified as in the
//! permissions API (both Portico's, same login), then report rights in the
//! company. `cnum` is optional: without it the one company where the user
//! holds the right is used; a user with the right in several companies must
//! name one (400 naming `cnum`); none is 403.

use axum::http::HeaderMap;
use uuid::Uuid;

use crate::error::ReportError;
use crate::{OBJECT, Reports};

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

/// A verified caller acting in a company.
#[derive(Debug, Clone)]
pub struct Access {
    pub user: Uuid,
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
    /// The verified user behind the request's token pair.
    ///
    /// # Errors
    /// `UNAUTHORIZED` for a missing or bad pair.
    pub async fn user(&self, headers: &HeaderMap) -> Result<Uuid, ReportError> {
        Ok(self.identity.check_token_pair(headers).await?.user_id)
    }

    /// The company the request acts in, where the user holds `action`.
    ///
    /// # Errors
    /// `UNAUTHORIZED`, `VALIDATION_ERROR` (`cnum`), `FORBIDDEN`.
    pub async fn access(&self, headers: &HeaderMap, cnum: Option<&str>, action: Action) -> Result<Access, ReportError> {
        let user = self.user(headers).await?;
        let model = self.permissions.model().await?;
        if let Some(raw) = cnum {
            let cnum = parse_cnum(raw)?;
            if !model.allowed(user, &cnum, OBJECT, action.as_str()) {
                return Err(ReportError::Forbidden(format!(
                    "the user may not {} reports of the company {cnum}",
                    action.as_str()
                )));
            }
            return Ok(Access { user, cnum });
        }
        let companies: Vec<&String> =
            model.companies_of(user).iter().filter(|c| model.allowed(user, c, OBJECT, action.as_str())).collect();
        match companies.as_slice() {
            [] => Err(ReportError::Forbidden(format!("the user may not {} reports in any company", action.as_str()))),
            [cnum] => Ok(Access { user, cnum: (*cnum).clone() }),
            _ => Err(ReportError::field(
                "cnum",
                "the user holds report rights in several companies: name one with the cnum parameter",
            )),
        }
    }

    /// What a look-up by id reads from the request: the verified user, the
    /// id in the path (`parameter` names it) and the optional `cnum`.
    ///
    /// # Errors
    /// `UNAUTHORIZED`, `VALIDATION_ERROR`.
    pub async fn by_id(
        &self,
        headers: &HeaderMap,
        query: Option<&str>,
        parameter: &str,
        raw_id: &str,
    ) -> Result<(Uuid, Uuid, Option<String>), ReportError> {
        let params = crate::tasks::Params::parse(query);
        params.only(&["cnum"])?;
        let user = self.user(headers).await?;
        let id = crate::tasks::parse_id(parameter, raw_id)?;
        let cnum = params.get("cnum").map(parse_cnum).transpose()?;
        Ok((user, id, cnum))
    }

    /// Whether `user` holds `action` in the company `cnum` (for a task or
    /// file looked up by id).
    ///
    /// # Errors
    /// When the permission model cannot be read.
    pub async fn may(&self, user: Uuid, cnum: &str, action: Action) -> Result<bool, ReportError> {
        Ok(self.permissions.allowed(user, cnum, OBJECT, action.as_str()).await?)
    }
}
