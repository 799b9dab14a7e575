//! The session runtime the agent embeds, assembled as the HTTP server's and `opencode run`'s
//! ([`Assembly`]), in-process.

use std::path::Path;
use std::sync::Arc;

use opencode_config::Env;
use opencode_session_runtime::{Assembled, Assembly, Plugins, RuntimeError, SessionRuntime, Started};
use opencode_tool_registry::{EditorFiles, Permissions};

use crate::files::ClientFiles;

/// A runtime and the permission service its tools ask through.
#[derive(Clone)]
pub struct Engine {
    pub runtime: SessionRuntime,
    pub permissions: Arc<Permissions>,
    pub plugins: Plugins,
    /// Problems met while loading configuration, one line each.
    pub warnings: Vec<String>,
    /// The client's file system, which the file tools use for the sessions whose turn runs here.
    pub files: Arc<ClientFiles>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("runtime", &self.runtime).finish_non_exhaustive()
    }
}

/// Builds the runtime from `env` and the configuration of `directory` as every front end does
/// ([`Assembly`]; no `question` tool: the protocol has no way to ask one; text files read and
/// written through the client's file system where it offers one) (blocking: opens the
/// database and reads configuration). The catalog is decoded by the first turn that needs it, and the
/// plugins are started by [`Engine::start_plugins`], so that `initialize` is answered at once.
pub fn engine(env: &Env, directory: &Path) -> Result<Engine, RuntimeError> {
    let files = Arc::new(ClientFiles::default());
    let assembly = Assembly {
        questions: false,
        editor: Some(Arc::clone(&files) as Arc<dyn EditorFiles>),
        ..Assembly::new(env.clone(), directory.to_path_buf())
    };
    let Started { assembled, warnings, .. } = assembly.start()?;
    let Assembled { runtime, permissions, plugins } = assembled;
    Ok(Engine { runtime, permissions, plugins, warnings, files })
}

impl Engine {
    /// Starts the plugins in the background; prompts wait for them. Problems are warnings on stderr
    /// (stdout carries protocol frames only).
    pub fn start_plugins(&self) {
        let plugins = self.plugins.clone();
        tokio::spawn(async move {
            match plugins.start().await {
                Ok(warnings) => warnings.iter().for_each(|warning| eprintln!("warning: {warning}")),
                Err(err) => eprintln!("error: {err} ({}); prompts will fail until the agent restarts", err.hint()),
            }
        });
    }
}
