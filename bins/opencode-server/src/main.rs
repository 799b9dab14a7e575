//! `opencode-server`: runs the OpenCode-compatible HTTP API headless.
//!
//! Without the session runtime linked in, prompts are answered with 503 (`UnavailableDriver`); every
//! durable route (sessions, messages, events, files, config, providers) works. Stops cleanly on SIGINT
//! or SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use opencode_config::Env;
use opencode_http_api::ServerContext;
use opencode_http_api::ServerOptions;
use opencode_http_api::UnavailableDriver;
use opencode_session_store::Store;

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
    let paths = env.paths();
    std::fs::create_dir_all(&paths.data).map_err(|err| format!("cannot create {}: {err}", paths.data.display()))?;
    let store = Store::open(paths.database()).map_err(|err| format!("{err}\nhint: {}", err.hint()))?;
    let directory = std::env::current_dir().map_err(|err| format!("cannot read the working directory: {err}"))?;
    let context = ServerContext::new(Arc::new(store), Arc::new(UnavailableDriver), env.clone(), paths, directory);
    let options =
        ServerOptions { hostname: args.hostname, port: args.port, cors: args.cors, ..ServerOptions::from_env(&env) };
    let server =
        opencode_http_api::serve(options, context).await.map_err(|err| format!("{err}\nhint: {}", err.hint()))?;
    for warning in server.warnings() {
        eprintln!("warning: {warning}");
    }
    println!("opencode server listening on {}", server.url());
    let stop = server.stopper();
    tokio::spawn(async move {
        wait_for_signal().await;
        let _already_stopped = stop.send(true);
    });
    server.wait().await.map_err(|err| format!("server failed: {err}"))
}

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
