//! `opencode serve`: the HTTP API server over this directory's configuration, until SIGINT or SIGTERM.

use opencode_http_api::ServerOptions;

use super::tokio_runtime;
use crate::cli::ServeArgs;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, args: ServeArgs) -> Result<(), CliError> {
    let options = ServerOptions {
        hostname: args.hostname,
        port: args.port,
        cors: args.cors,
        ..ServerOptions::from_env(&context.env)
    };
    tokio_runtime()?.block_on(opencode_http_api::run_server(options, context.cwd.clone()))?;
    Ok(())
}
