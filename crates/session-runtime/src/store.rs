//! Blocking store work off the async threads.

use crate::error::Result;
use crate::error::RuntimeError;

/// Runs blocking store work on tokio's blocking pool.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T>
where
    F: FnOnce() -> opencode_session_store::Result<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => Ok(result?),
        Err(err) => Err(RuntimeError::internal(format!("store task failed: {err}"))),
    }
}
