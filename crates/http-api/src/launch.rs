//! Starting a server over the real session runtime: what `opencode serve` and the `opencode-server`
//! binary run. [`start_server`] assembles the runtime as every front end does
//! ([`Assembly`]: store, each directory's configuration, standard tools, durable permissions with
//! per-project approvals, plugins) and serves it; the plugins start in the background (requests are
//! answered at once, prompts wait for them). [`run_server`] adds the process environment, the
//! listening line, and a graceful stop on SIGINT/SIGTERM.

use std::path::PathBuf;
use std::sync::Arc;

use opencode_config::Env;
use opencode_session_runtime::Assembly;
use opencode_session_runtime::Plugins;
use opencode_session_runtime::Started;

use crate::error::ServeError;
use crate::options::ServerOptions;
use crate::runtime_driver::RuntimeDriver;
use crate::server::Server;
use crate::server::serve;
use crate::state::ServerContext;

/// Runs the API over the session runtime until SIGINT or SIGTERM, in `directory` (the instance of
/// requests that name none, and where configuration is loaded from), with the process environment.
/// Prints `opencode server listening on <url>` and any warnings; on a signal, active drains stop at a
/// durable point, then the server stops accepting and returns.
pub async fn run_server(options: ServerOptions, directory: PathBuf) -> Result<(), ServeError> {
    run_server_with(options, directory, |url| println!("opencode server listening on {url}")).await
}

/// [`run_server`], calling `ready` with the server's URL once it listens (instead of printing it):
/// `opencode web` prints the UI's address and opens a browser there.
pub async fn run_server_with(
    options: ServerOptions,
    directory: PathBuf,
    ready: impl FnOnce(&str),
) -> Result<(), ServeError> {
    let server = start_server(options, Env::from_process(), directory).await?;
    for warning in server.warnings() {
        eprintln!("warning: {warning}");
    }
    ready(&server.url());
    let stop = server.stopper();
    tokio::spawn(async move {
        wait_for_signal().await;
        let _already_stopped = stop.send(true);
    });
    server.wait().await.map_err(|err| ServeError::Setup { message: format!("the server failed: {err}"), hint: RETRY })
}

/// Builds the session runtime from `env` and the configuration of `directory` (the same
/// [`Assembly`] as every front end), and serves it. Unreadable configuration files are skipped and
/// reported in [`Server::warnings`].
pub async fn start_server(options: ServerOptions, env: Env, directory: PathBuf) -> Result<Server, ServeError> {
    let assembly = Assembly::new(env.clone(), directory.clone());
    let started = tokio::task::spawn_blocking(move || assembly.start())
        .await
        .map_err(|err| ServeError::Setup { message: format!("set-up stopped: {err}"), hint: RETRY })?
        .map_err(|err| ServeError::Setup { message: err.to_string(), hint: err.hint() })?;
    let Started { assembled, store, models, warnings, .. } = started;
    start_plugins(&assembled.plugins);
    let driver = Arc::new(RuntimeDriver::new(assembled.runtime, assembled.permissions).with_plugins(assembled.plugins));
    let paths = env.paths();
    let mut context = ServerContext::new(store, driver, env, paths, directory);
    context.models = models;
    let mut server = serve(options, context).await?;
    server.add_warnings(warnings);
    Ok(server)
}

/// Starts the plugins in the background: the server answers meanwhile, prompts wait for them
/// ([`RuntimeDriver::with_plugins`]). Plugins that did not start are warnings on stderr.
fn start_plugins(plugins: &Plugins) {
    let plugins = plugins.clone();
    tokio::spawn(async move {
        match plugins.start().await {
            Ok(warnings) => {
                for warning in warnings {
                    tracing::warn!("{warning}");
                    eprintln!("warning: {warning}");
                }
            }
            Err(err) => {
                tracing::error!(%err, "a required plugin did not start");
                eprintln!("error: {err} ({}); prompts will fail until the server restarts", err.hint());
            }
        }
    });
}

const RETRY: &str = "retry; if it persists, report it with the log";

async fn wait_for_signal() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        let _interrupted = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
