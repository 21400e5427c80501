//! Where produced files live: an object store (`object_store`), a local
//! folder by default. Files are written whole once and read as a stream.

use std::sync::Arc;

use axum::body::Bytes;
use futures_util::stream::BoxStream;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

/// The object store and the key prefix of report files.
#[derive(Clone)]
pub struct FileStore {
    store: Arc<dyn ObjectStore>,
}

#[derive(Debug, thiserror::Error)]
#[error("the file store failed: {0}")]
pub struct FileError(String);

impl FileStore {
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        Self { store }
    }

    /// A store in the local folder `root` (created if missing).
    ///
    /// # Errors
    /// When the folder cannot be created or used.
    pub fn local(root: &std::path::Path) -> Result<Self, FileError> {
        std::fs::create_dir_all(root).map_err(|e| FileError(format!("cannot create {}: {e}", root.display())))?;
        let store =
            object_store::local::LocalFileSystem::new_with_prefix(root).map_err(|e| FileError(e.to_string()))?;
        Ok(Self::new(Arc::new(store)))
    }

    /// Writes `content` under `key`.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn put(&self, key: &str, content: Vec<u8>) -> Result<(), FileError> {
        self.store.put(&Path::from(key), content.into()).await.map_err(|e| FileError(e.to_string()))?;
        Ok(())
    }

    /// The content of `key` as a stream of chunks, with its size.
    ///
    /// # Errors
    /// When the object is missing or the store fails.
    pub async fn open(
        &self,
        key: &str,
    ) -> Result<(u64, BoxStream<'static, Result<Bytes, object_store::Error>>), FileError> {
        let result = self.store.get(&Path::from(key)).await.map_err(|e| FileError(e.to_string()))?;
        let size = result.meta.size;
        Ok((size, result.into_stream()))
    }

    /// The whole content of `key` (for tests and small files).
    ///
    /// # Errors
    /// When the object is missing or the store fails.
    pub async fn read(&self, key: &str) -> Result<Bytes, FileError> {
        let result = self.store.get(&Path::from(key)).await.map_err(|e| FileError(e.to_string()))?;
        result.bytes().await.map_err(|e| FileError(e.to_string()))
    }
}
