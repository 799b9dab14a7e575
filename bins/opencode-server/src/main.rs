//! `opencode-server`: runs the OpenCode-compatible HTTP API headless.
//!
//! Prompts run on the session runtime, configured from the working directory's configuration (model,
//! providers, agents, permissions) and the offline catalog. Stops cleanly on SIGINT or SIGTERM: active
//! drains stop at a durable point first.

#[path = "../../opencode/src/allocator.rs"]
mod allocator;

use std::process::ExitCode;

use clap::Parser;
use opencode_config::Env;
use opencode_config::LoadOptions;
use opencode_http_api::ServerOptions;

/// Run the opencode HTTP API server.
#[derive(Debug, Parser)]
#[command(name = "opencode-server", version)]
struct Args {
    /// Port to listen on (0 picks a free one) [default: config `server.port`, else 4096].
    #[arg(long)]
    port: Option<u16>,
    /// Address to listen on [default: config `server.hostname`, else 127.0.0.1].
    #[arg(long)]
    hostname: Option<String>,
    /// An origin whose web pages may call the server (repeatable; adds to config `server.cors`).
    #[arg(long)]
    cors: Vec<String>,
    /// A host name clients may reach the server by, besides loopback names and IP addresses
    /// (repeatable; adds to config `server.allowed_hosts`).
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// Print the OpenAPI document and exit.
    #[arg(long)]
    print_openapi: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.print_openapi {
        println!("{:#}", opencode_http_api::openapi_document());
        return ExitCode::SUCCESS;
    }
    allocator::serve();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let env = Env::from_process();
    let directory = std::env::current_dir().map_err(|err| format!("cannot read the working directory: {err}"))?;
    let config = opencode_config::load(&LoadOptions::new(env.clone(), &directory)).config;
    let mut options = ServerOptions::configured(&env, config.server.as_ref());
    options.port = args.port.unwrap_or(options.port);
    options.hostname = args.hostname.unwrap_or(options.hostname);
    options.cors.extend(args.cors);
    options.allowed_hosts.extend(args.allow_hosts);
    opencode_http_api::run_server(options, directory).await.map_err(|err| format!("{err}\nhint: {}", err.hint()))
}
