//! The audit log.

use crate::Result;
use async_trait::async_trait;
use portico_model::audit::AuditEvent;
use portico_model::ids::{ClientId, UserId};
use time::OffsetDateTime;

#[async_trait]
pub trait AuditRepository: Send + Sync {
    /// # Errors
    /// Only when the store fails.
    async fn record_audit(&self, event: &AuditEvent) -> Result<()>;
    /// The newest events, newest first.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditEvent>>;
    /// The events matching every condition of `query`, newest first, from
    /// before `query.before`, at most `query.limit`.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn query_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>>;
}

/// An event of the audit log with its place in it (ids grow with time).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    pub id: i64,
    pub event: AuditEvent,
}

/// Which audit events to read, a page at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditQuery {
    pub user_id: Option<UserId>,
    pub client_id: Option<ClientId>,
    pub kind: Option<String>,
    pub actor: Option<String>,
    /// At or after this time.
    pub from: Option<OffsetDateTime>,
    /// Before this time.
    pub to: Option<OffsetDateTime>,
    /// The last id of the previous page.
    pub before: Option<i64>,
    pub limit: u32,
}

impl Default for AuditQuery {
    fn default() -> Self {
        Self { user_id: None, client_id: None, kind: None, actor: None, from: None, to: None, before: None, limit: 50 }
    }
}
