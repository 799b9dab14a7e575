//! The client's file system as the file tools' editor: while a session's turn runs on this
//! connection, the tools read text through `fs/read_text_file` (so the editor's unsaved buffers
//! count) and write approved changes through `fs/write_text_file` instead of the disk, each when
//! the client advertised it. Other sessions, and clients without those capabilities, use the disk.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::FileSystemCapabilities;
use agent_client_protocol::v1::schema::ReadTextFileRequest;
use agent_client_protocol::v1::schema::WriteTextFileRequest;
use opencode_tool_registry::EditorFiles;

use crate::server::lock;

/// What the editor seam returns: a boxed future (as `futures_util::future::BoxFuture`).
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The sessions whose turn runs on a connection, with what their client's file system offers.
#[derive(Default)]
pub struct ClientFiles {
    sessions: Mutex<HashMap<String, Link>>,
}

#[derive(Clone)]
struct Link {
    cx: ConnectionTo<Client>,
    read: bool,
    write: bool,
}

/// A session linked to its client for the length of a turn.
pub(crate) struct Linked {
    files: Arc<ClientFiles>,
    session: String,
}

impl Drop for Linked {
    fn drop(&mut self) {
        lock(&self.files.sessions).remove(&self.session);
    }
}

impl ClientFiles {
    /// Links `session` to the client behind `cx` until the returned value is dropped.
    pub(crate) fn link(
        self: &Arc<Self>,
        session: &str,
        cx: ConnectionTo<Client>,
        fs: &FileSystemCapabilities,
    ) -> Linked {
        let link = Link { cx, read: fs.read_text_file, write: fs.write_text_file };
        lock(&self.sessions).insert(session.to_owned(), link);
        Linked { files: Arc::clone(self), session: session.to_owned() }
    }

    fn linked(&self, session: &str) -> Option<Link> {
        lock(&self.sessions).get(session).cloned()
    }
}

impl EditorFiles for ClientFiles {
    fn read<'a>(&'a self, session_id: &'a str, path: &'a Path) -> BoxFuture<'a, Option<Result<String, String>>> {
        Box::pin(async move {
            let link = self.linked(session_id).filter(|link| link.read)?;
            let request = ReadTextFileRequest::new(session_id.to_owned(), path);
            let answer = link.cx.send_request(request).block_task().await;
            Some(answer.map(|response| response.content).map_err(|err| err.to_string()))
        })
    }

    fn write<'a>(
        &'a self,
        session_id: &'a str,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Option<Result<(), String>>> {
        Box::pin(async move {
            let link = self.linked(session_id).filter(|link| link.write)?;
            let request = WriteTextFileRequest::new(session_id.to_owned(), path, content.to_owned());
            Some(link.cx.send_request(request).block_task().await.map(drop).map_err(|err| err.to_string()))
        })
    }
}
