//! Why a storage call failed.

/// Why a storage call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// A unique key already exists (a client id, a user login, …).
    #[error("{0} already exists")]
    Conflict(String),
    /// The database could not be reached or gave up; retrying may help.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// Anything else: a bug, a damaged row, a failed migration.
    #[error("storage error: {0}")]
    Other(String),
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
