//! The permission model of corporate clients.

use crate::Result;
use async_trait::async_trait;
use portico_model::permissions::PermissionModel;

/// The permission model (companies, roles, catalog, employees), read and
/// written whole; every save is a new revision.
#[async_trait]
pub trait PermissionRepository: Send + Sync {
    /// The revision of the stored model: 0 before the first save, then one
    /// more with every save. Cheap; read on every permission request.
    ///
    /// # Errors
    /// Only when the store fails.
    async fn permission_revision(&self) -> Result<i64>;
    /// The whole model at one revision (a consistent snapshot).
    ///
    /// # Errors
    /// Only when the store fails.
    async fn load_permissions(&self) -> Result<PermissionModel>;
    /// Replaces the stored model with `model`, as revision
    /// `model.revision + 1`, provided the stored revision is still
    /// `model.revision`; all in one transaction. Returns `false`, changing
    /// nothing, when another save came first.
    ///
    /// # Errors
    /// Only when the store fails (a model that names an unknown user among
    /// them: [`StorageError::Other`]).
    async fn save_permissions(&self, model: &PermissionModel) -> Result<bool>;
}
