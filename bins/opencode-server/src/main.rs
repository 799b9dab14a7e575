//! `opencode-server`: runs the OpenCode-compatible HTTP API headless.
//!
//! Prompts run on the session runtime, configured from the working directory's configuration (model,
//! providers, agents, permissions) and the offline catalog. Stops cleanly on SIGINT or SIGTERM: active
//! drains stop at a durable point first.

use std::process::ExitCode;

use clap::Parser;
use opencode_config::Env;
use opencode_http_api::ServerOptions;

/// Run the opencode HTTP API server.
#[derive(Debug, Parser)]
#[command(name = "opencode-server", version)]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = opencode_http_api::DEFAULT_PORT)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    hostname: String,
    /// Extra origins allowed by CORS (repeatable).
    #[arg(long)]
    cors: Vec<String>,
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
    let options =
        ServerOptions { hostname: args.hostname, port: args.port, cors: args.cors, ..ServerOptions::from_env(&env) };
    opencode_http_api::run_server(options, directory).await.map_err(|err| format!("{err}\nhint: {}", err.hint()))
}
