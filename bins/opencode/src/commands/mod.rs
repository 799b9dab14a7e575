//! One module per command.

mod acp;
mod auth;
mod debug;
mod github;
mod import;
mod mcp;
mod models;
mod output;
mod run;
mod serve;
mod sessions;
mod tui;
mod web;

use std::path::Path;

use crate::cli::{Cli, Command, DebugCommand, GithubCommand};
use crate::context::Context;
use crate::error::CliError;

pub fn run(cli: Cli) -> Result<(), CliError> {
    let context = Context::load()?;
    let Some(command) = cli.command else {
        import::hint_once(&context);
        return tui::local(&context, cli.tui);
    };
    if matches!(
        command,
        Command::Run(_) | Command::Session(_) | Command::Export { .. } | Command::Serve(_) | Command::Web(_)
    ) {
        import::hint_once(&context);
    }
    match command {
        Command::Attach(args) => tui::attach(&context, args),
        Command::Run(args) => run::run(&context, args),
        Command::Session(command) => sessions::run(&context, command),
        Command::Export { session } => sessions::export(&context, session.as_deref()),
        Command::Import { from_opencode: true, .. } => import::from_opencode(&context),
        Command::Import { file, .. } => sessions::import(&context, file.as_deref().unwrap_or(Path::new("-"))),
        Command::Serve(args) => serve::run(&context, args),
        Command::Acp(args) => acp::run(&context, args),
        Command::Web(args) => web::run(&context, args),
        Command::Models(args) => models::run(&context, &args),
        Command::Auth(command) => auth::run(&context, command),
        Command::Debug(DebugCommand::Config) => debug::config(&context),
        Command::Mcp(command) => mcp::run(&context, command),
        Command::Github(GithubCommand::Run(args)) => github::run(&context, args),
        Command::Github(GithubCommand::Install(args)) => github::install::install(&context, args),
    }
}

/// Writes to stdout; a closed pipe (`opencode models | head`) ends quietly.
fn emit(out: &mut impl std::io::Write, text: std::fmt::Arguments<'_>) -> Result<(), CliError> {
    match out.write_fmt(text) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(err) => Err(CliError::Io(format!("cannot write output: {err}"))),
    }
}

/// A tokio runtime for the commands that drive sessions.
fn tokio_runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| CliError::Io(format!("cannot start the async runtime: {err}")))
}
