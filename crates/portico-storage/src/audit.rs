//! The audit log.

use crate::Result;
use async_trait::async_trait;
use portico_model::audit::AuditEvent;

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
}
