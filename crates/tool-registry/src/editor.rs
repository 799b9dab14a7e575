//! Files a front end keeps open: an editor driving the agent (over ACP's `fs` methods) holds
//! buffers that may differ from the disk. When one is attached to the registry, the file tools read
//! text through it (unsaved changes count) and write approved changes to it instead of the disk.
//! Paths are always authorized against the Location first; the editor only sees paths a tool may
//! touch.

use std::path::Path;

use futures_util::future::BoxFuture;

/// An editor's view of text files, per session. `None` from either method means "not mine": the
/// tool uses the disk (a session the editor did not open, or a client without that capability).
pub trait EditorFiles: Send + Sync {
    /// The text of `path` as the editor has it.
    fn read<'a>(&'a self, session_id: &'a str, path: &'a Path) -> BoxFuture<'a, Option<Result<String, String>>>;

    /// Writes `content` to `path` through the editor.
    fn write<'a>(
        &'a self,
        session_id: &'a str,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Option<Result<(), String>>>;
}
