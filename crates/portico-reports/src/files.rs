//! Where produced files live: an object store (`object_store`), a local
//! folder by default or an S3-compatible bucket (AWS S3, MinIO, Ceph,
//! Yandex Object Storage, ...) chosen by `reports.s3`. Files are written
//! whole once and read as a stream.

use std::sync::Arc;

use axum::body::Bytes;
use futures_util::stream::BoxStream;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};

/// An S3-compatible bucket for report files (`reports.s3.*`). Credentials not
/// given here come from the standard `AWS_*` environment variables, a web
/// identity or the instance metadata service, as the AWS SDKs find them.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Settings {
    /// The bucket; it must exist.
    pub bucket: String,
    /// A key prefix inside the bucket (`portico/reports`); default: none.
    #[serde(default)]
    pub prefix: String,
    /// The region; default `us-east-1`.
    #[serde(default = "default_region")]
    pub region: String,
    /// The endpoint of a store other than AWS (`https://storage.yandexcloud.net`,
    /// `http://minio:9000`); requests use path-style addressing then.
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub access_key_id: Option<String>,
    #[serde(default)]
    pub secret_access_key: Option<String>,
    /// Allow a plain `http://` endpoint (a store inside a private network).
    #[serde(default)]
    pub allow_http: bool,
}

impl std::fmt::Debug for S3Settings {
    /// Everything but the secret key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key.as_ref().map(|_| "<redacted>"))
            .field("allow_http", &self.allow_http)
            .finish()
    }
}

fn default_region() -> String {
    "us-east-1".to_owned()
}

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

    /// A store in an S3-compatible bucket. Writes the small object
    /// `.portico-probe` under the prefix to check that the bucket takes
    /// writes with the credentials given, so that a wrong setting stops the
    /// start rather than the first report.
    ///
    /// # Errors
    /// When the settings are incomplete or the bucket cannot be reached.
    pub async fn s3(settings: &S3Settings) -> Result<Self, FileError> {
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&settings.bucket)
            .with_region(&settings.region)
            .with_allow_http(settings.allow_http);
        if let Some(endpoint) = &settings.endpoint {
            builder = builder.with_endpoint(endpoint).with_virtual_hosted_style_request(false);
        }
        if let Some(key) = &settings.access_key_id {
            builder = builder.with_access_key_id(key);
        }
        if let Some(secret) = &settings.secret_access_key {
            builder = builder.with_secret_access_key(secret);
        }
        let bucket = builder.build().map_err(|e| FileError(e.to_string()))?;
        let store: Arc<dyn ObjectStore> = match settings.prefix.trim_matches('/') {
            "" => Arc::new(bucket),
            prefix => Arc::new(PrefixStore::new(bucket, prefix)),
        };
        let probe = Path::from(".portico-probe");
        match store.put(&probe, Bytes::from_static(b"Portico writes report files here\n").into()).await {
            Ok(_) => Ok(Self::new(store)),
            Err(e) => Err(FileError(format!("cannot write to bucket {:?}: {e}", settings.bucket))),
        }
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

    /// Removes `key`; one already gone is no error.
    ///
    /// # Errors
    /// When the store fails.
    pub async fn delete(&self, key: &str) -> Result<(), FileError> {
        match self.store.delete(&Path::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(FileError(e.to_string())),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_key_never_shows_in_debug_output() {
        let settings = S3Settings {
            bucket: "b".into(),
            prefix: String::new(),
            region: default_region(),
            endpoint: None,
            access_key_id: Some("AKIA-visible".into()),
            secret_access_key: Some("very-secret-key".into()),
            allow_http: false,
        };
        let shown = format!("{settings:?}");
        assert!(shown.contains("AKIA-visible") && shown.contains("<redacted>"), "{shown}");
        assert!(!shown.contains("very-secret-key"), "{shown}");
    }
}
