//! `opencode serve`: the HTTP API server over this directory's configuration, until SIGINT or SIGTERM.

use opencode_http_api::ServerOptions;

use super::tokio_runtime;
use crate::cli::ServeArgs;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, args: ServeArgs) -> Result<(), CliError> {
    crate::allocator::serve();
    let options = options(context, args);
    tokio_runtime()?.block_on(opencode_http_api::run_server(options, context.cwd.clone()))?;
    Ok(())
}

/// The server's options: config `server`, then the command line over it.
pub fn options(context: &Context, args: ServeArgs) -> ServerOptions {
    let mut options = ServerOptions::configured(&context.env, context.loaded.config.server.as_ref());
    options.port = args.port.unwrap_or(options.port);
    options.hostname = args.hostname.unwrap_or(options.hostname);
    options.cors.extend(args.cors);
    options.allowed_hosts.extend(args.allow_hosts);
    options
}
