//! `opencode acp [--cwd DIR]`: the Agent Client Protocol agent over stdio. Standard output carries
//! protocol frames only; diagnostics go to a log file (`<data>/log/acp-<time>.log`), and warnings
//! also to standard error, which editors keep in their agent log.

use std::path::PathBuf;

use super::tokio_runtime;
use crate::cli::AcpArgs;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, args: AcpArgs) -> Result<(), CliError> {
    let cwd = directory(context, args.cwd)?;
    let log = crate::logging::to_file(&context.paths, &context.env, "acp");
    tracing::info!(version = env!("CARGO_PKG_VERSION"), cwd = %cwd.display(), log = ?log, "acp agent started");
    let runtime = tokio_runtime()?;
    let env = context.env.clone();
    let result = runtime.block_on(async move {
        let setup_cwd = cwd.clone();
        let engine = tokio::task::spawn_blocking(move || opencode_acp::engine(&env, &setup_cwd))
            .await
            .map_err(|err| CliError::Io(format!("set-up stopped: {err}")))?
            .map_err(|err| CliError::Failed { message: err.to_string(), hint: err.hint().to_owned() })?;
        for warning in &engine.warnings {
            tracing::warn!("{warning}");
            eprintln!("warning: {warning}");
        }
        engine.start_plugins();
        match opencode_acp::serve(engine, cwd, opencode_acp::Stdio::new()).await {
            Err(err) if !client_left(&err) => {
                tracing::error!(%err, "the ACP connection failed");
                Err(CliError::Failed {
                    message: format!("the ACP connection failed: {err}"),
                    hint: "check the editor's agent log and the log file; the session data is kept".to_owned(),
                })
            }
            _ => {
                tracing::info!("the client closed the connection");
                Ok(())
            }
        }
    });
    // Nothing is left to wait for once the client is gone.
    runtime.shutdown_background();
    result
}

/// `--cwd` made absolute (editors may pass a relative one), else the working directory.
fn directory(context: &Context, cwd: Option<PathBuf>) -> Result<PathBuf, CliError> {
    let Some(cwd) = cwd else { return Ok(context.cwd.clone()) };
    let cwd = context.cwd.join(cwd);
    if !cwd.is_dir() {
        return Err(CliError::usage(
            format!("--cwd {} is not a directory", cwd.display()),
            "pass the project directory the editor has open",
        ));
    }
    Ok(cwd)
}

/// Whether the connection ended because the client closed our output (an editor that lets the agent
/// go may stop reading before a last notification is written): a normal end, not a failure. The
/// protocol crate reports it only as an internal error carrying the I/O error's text.
fn client_left(err: &impl std::fmt::Display) -> bool {
    err.to_string().to_ascii_lowercase().contains("broken pipe")
}
