//! The permission service: the current model, kept in memory and reloaded
//! when the store's revision moves, and the changes made to it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use portico_model::permissions::{DocumentError, PermissionDocument, PermissionModel, UserRef};
use portico_storage::{Storage, StorageError};
use uuid::Uuid;

/// Saves that lost a race with another node's writer are retried this many
/// times (as changes to a client are).
const SAVE_ATTEMPTS: usize = 20;

pub struct PermissionService {
    store: Arc<dyn Storage>,
    current: RwLock<Arc<PermissionModel>>,
    reload: tokio::sync::Mutex<()>,
    /// This node's documents are applied one at a time: only other nodes'
    /// writers can make a save lose its race.
    writing: tokio::sync::Mutex<()>,
}

/// Why a document was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The document has problems; nothing was changed.
    #[error("the document has {} problem(s)", .0.len())]
    Invalid(Vec<DocumentError>),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// What an applied document did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = PermissionApplySummary)]
pub struct ApplySummary {
    pub revision: i64,
    pub companies: usize,
    pub catalog: usize,
    pub roles: usize,
    pub employees: usize,
}

impl ApplySummary {
    fn of(doc: &PermissionDocument, revision: i64) -> Self {
        Self {
            revision,
            companies: doc.companies.len(),
            catalog: doc.catalog.len(),
            roles: doc.roles.len(),
            employees: doc.employees.len(),
        }
    }
}

impl PermissionService {
    pub fn new(store: Arc<dyn Storage>) -> Self {
        Self {
            store,
            current: RwLock::new(Arc::new(PermissionModel::default())),
            reload: tokio::sync::Mutex::new(()),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    fn cached(&self) -> Arc<PermissionModel> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The model as the store holds it now: one revision read, and a reload
    /// when another writer (a CLI import, another node) has saved since.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn model(&self) -> Result<Arc<PermissionModel>, StorageError> {
        let revision = self.store.permission_revision().await?;
        let cached = self.cached();
        if cached.revision == revision {
            return Ok(cached);
        }
        let _one_reload = self.reload.lock().await;
        let cached = self.cached();
        if cached.revision >= revision {
            return Ok(cached);
        }
        let fresh = Arc::new(self.store.load_permissions().await?);
        tracing::debug!(revision = fresh.revision, "permission model reloaded");
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = fresh.clone();
        Ok(fresh)
    }

    /// May `user` do `action` on `object` in company `cnum`? The question
    /// other modules (the report API) ask; see [`PermissionModel::allowed`].
    ///
    /// # Errors
    /// When the store fails.
    pub async fn allowed(&self, user: Uuid, cnum: &str, object: &str, action: &str) -> Result<bool, StorageError> {
        Ok(self.model().await?.allowed(user, cnum, object, action))
    }

    /// Resolves the users a document names (by id or login).
    async fn resolve_users(&self, doc: &PermissionDocument) -> Result<HashMap<UserRef, Uuid>, StorageError> {
        let mut users = HashMap::new();
        for user in doc.user_refs() {
            let found = match user.as_id() {
                Some(id) => self.store.find_user(id.into()).await?,
                None => self.store.find_user_by_login(&user.0).await?,
            };
            if let Some(found) = found {
                users.insert(user.clone(), found.id.as_uuid());
            }
        }
        Ok(users)
    }

    /// What [`PermissionService::apply`] would do, without saving: the
    /// summary names the current revision.
    ///
    /// # Errors
    /// As [`PermissionService::apply`].
    pub async fn check(&self, doc: &PermissionDocument) -> Result<ApplySummary, ApplyError> {
        let users = self.resolve_users(doc).await?;
        let current = self.store.load_permissions().await?;
        current.merge(doc, &users, Uuid::new_v4).map_err(ApplyError::Invalid)?;
        Ok(ApplySummary::of(doc, current.revision))
    }

    /// Merges `doc` into the stored model and saves it as a new revision, all
    /// or nothing.
    ///
    /// # Errors
    /// [`ApplyError::Invalid`] with every problem of the document;
    /// [`ApplyError::Storage`] when the store fails or other writers keep
    /// winning the race.
    pub async fn apply(&self, doc: &PermissionDocument) -> Result<ApplySummary, ApplyError> {
        let users = self.resolve_users(doc).await?;
        let _turn = self.writing.lock().await;
        for _ in 0..SAVE_ATTEMPTS {
            let current = self.store.load_permissions().await?;
            let next = current.merge(doc, &users, Uuid::new_v4).map_err(ApplyError::Invalid)?;
            if self.store.save_permissions(&next).await? {
                return Ok(ApplySummary::of(doc, next.revision + 1));
            }
        }
        Err(StorageError::Unavailable("other writers kept changing the permission model; try again".into()).into())
    }
}

/// Reads a document in JSON or YAML (YAML is a superset of JSON; `yaml`
/// selects the parser whose messages fit the input best). A YAML document
/// may stand for no more than the largest document taken
/// ([`crate::admin::MAX_DOCUMENT`]) once its aliases are expanded.
///
/// # Errors
/// The parser's message, with the line and column it gives; or what the
/// aliases would have grown the document to.
pub fn parse_document(text: &str, yaml: bool) -> Result<PermissionDocument, String> {
    if yaml {
        crate::expansion::within(text, crate::admin::MAX_DOCUMENT)?;
        serde_yaml_ng::from_str(text).map_err(|e| e.to_string())
    } else {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

/// [`parse_document`] on a thread of its own: a document of 16 MiB takes
/// long enough to hold up the requests that share a runtime worker.
///
/// # Errors
/// As [`parse_document`].
pub async fn read_document(text: String, yaml: bool) -> Result<PermissionDocument, String> {
    tokio::task::spawn_blocking(move || parse_document(&text, yaml))
        .await
        .unwrap_or_else(|_| Err("the document could not be read; try again".to_owned()))
}

#[cfg(test)]
mod document_tests {
    use super::parse_document;

    #[test]
    fn only_a_string_is_text_a_yaml_null_bool_or_number_is_refused() {
        let error = parse_document("roles:\n  - code: null\n", true).unwrap_err();
        assert!(error.contains("must be text, not null"), "{error}");
        let error =
            parse_document("companies:\n  - cnum: ~\n    name: A\n    contractStatus: ACTIVE\n", true).unwrap_err();
        assert!(error.contains("must be text, not null"), "{error}");
        let error = parse_document(r#"{"roles": [{"code": null}]}"#, false).unwrap_err();
        assert!(error.contains("must be text, not null"), "{error}");
        for value in ["false", "7700000001", "1.5"] {
            let error = parse_document(&format!("roles:\n  - code: {value}\n"), true).unwrap_err();
            assert!(error.contains("expected text"), "{value}: {error}");
        }
        let doc = parse_document("roles:\n  - code: \"null\"\n", true).expect("a quoted word is text");
        assert_eq!(doc.roles[0].code, "null");
    }

    #[test]
    fn a_yaml_document_its_aliases_would_grow_past_the_largest_document_is_refused() {
        // Two gigabytes of action names from one megabyte of text.
        let big = "v".repeat(1_000_000);
        let bomb =
            format!("roles:\n  - code: R\n    grants: {{payments: [&s \"{big}\", {}]}}\n", ["*s"; 2000].join(","));
        let error = parse_document(&bomb, true).unwrap_err();
        assert!(error.contains("YAML aliases"), "{error}");
        // Nested collections, each repeating the one before nine times
        // (the parser's own limit on repetitions).
        let mut laughs = String::from("roles:\n  - code: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..9 {
            let previous = vec![format!("*a{}", level - 1); 9].join(", ");
            laughs.push_str(&format!("  - code: &a{level} [{previous}]\n"));
        }
        assert!(parse_document(&laughs, true).is_err());
        // Anchors as people use them.
        let doc =
            parse_document("roles:\n  - {code: A, grants: &g {payments: [view]}}\n  - {code: B, grants: *g}\n", true)
                .expect("a shared grant list");
        assert_eq!(doc.roles[1].grants, doc.roles[0].grants);
    }
}
