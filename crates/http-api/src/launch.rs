//! Starting a server over the real session runtime: what `opencode serve` and the `opencode-server`
//! binary run. [`start_server`] builds the store, the configuration of the start directory, the
//! catalog (decoded by the first prompt that needs it), the provider client, the plugins, the runtime
//! (each directory's own configuration, standard tools plus `todowrite`/`todoread` per Location, one
//! permission service with per-project approvals) and serves it; the plugins start in the background (requests are answered at once,
//! prompts wait for them). [`run_server`] adds the process environment, the listening line, and a
//! graceful stop on SIGINT/SIGTERM.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use opencode_catalog::LazyCatalog;
use opencode_config::Config;
use opencode_config::Env;
use opencode_config::LoadOptions;
use opencode_config::Paths;
use opencode_llm::LlmClient;
use opencode_session_runtime::Plugins;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use opencode_session_runtime::StorePending;
use opencode_session_runtime::StoreTodos;
use opencode_session_runtime::ToolHost;
use opencode_session_store::Store;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::tools::todo::TodoRead;
use opencode_tool_registry::tools::todo::TodoWrite;
use opencode_tool_registry::typed;

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

/// Builds the session runtime from `env` and the configuration of `directory`, and serves it.
/// Unreadable configuration files are skipped and reported in [`Server::warnings`].
pub async fn start_server(options: ServerOptions, env: Env, directory: PathBuf) -> Result<Server, ServeError> {
    let setup_env = env.clone();
    let setup_dir = directory.clone();
    let (store, runtime, permissions, plugins, models, warnings) =
        tokio::task::spawn_blocking(move || setup(&setup_env, &setup_dir))
            .await
            .map_err(|err| ServeError::Setup { message: format!("set-up stopped: {err}"), hint: RETRY })??;
    start_plugins(&plugins);
    let driver = Arc::new(RuntimeDriver::new(runtime, permissions).with_plugins(plugins));
    let paths = env.paths();
    let mut context = ServerContext::new(store, driver, env, paths, directory);
    context.models = models;
    let mut server = serve(options, context).await?;
    server.add_warnings(warnings);
    Ok(server)
}

/// The permission service whose requests are durable in `store` (rows the HTTP reply routes answer).
pub fn store_permissions(store: Arc<Store>) -> Arc<Permissions> {
    Arc::new(Permissions::new(Arc::new(StorePending::new(store))))
}

/// A runtime over `store` whose Locations get the standard tools plus `todowrite`/`todoread` (kept in
/// the store), `question` (answered over HTTP) and the plugins' tools, all asking `permissions`
/// (scoped to the directory's project). Each directory's own configuration applies to its sessions
/// (model, agents, providers) and tools; `config` is the start directory's.
#[expect(clippy::too_many_arguments, reason = "the runtime's parts, each built by the caller")]
pub fn build_runtime(
    store: Arc<Store>,
    llm: LlmClient,
    catalog: impl Into<LazyCatalog>,
    config: Arc<Config>,
    paths: Paths,
    env: Env,
    permissions: Arc<Permissions>,
    plugins: &Plugins,
) -> SessionRuntime {
    let todos = Arc::new(StoreTodos::new(Arc::clone(&store)));
    let (tool_paths, tool_plugins) = (paths.clone(), plugins.clone());
    let locations = StandardLocations::new(&config, paths.clone(), env.clone()).per_directory();
    let locations = locations.with_configured_tools(move |directory, config| {
        // `always` approvals are the project's: loaded when its first Location opens, never shared
        // with another project.
        let scoped = permissions.scoped(&crate::instance::project_id(directory));
        let (tools, warnings) = tool_plugins.standard_tools(directory, config, &tool_paths, scoped)?;
        let question = typed(opencode_tool_registry::tools::question::Question);
        for tool in [typed(TodoWrite(todos.clone())), typed(TodoRead(todos.clone())), question] {
            tools
                .registry()
                .register(tool)
                .map_err(|err| opencode_session_runtime::RuntimeError::Tools(err.to_string()))?;
        }
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        Ok(Arc::new(tools) as Arc<dyn ToolHost>)
    });
    let builder = SessionRuntime::builder(store, llm, catalog, config, paths).env(env);
    plugins.wire(builder, locations).build()
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

type Setup = (Arc<Store>, SessionRuntime, Arc<Permissions>, Plugins, LazyCatalog, Vec<String>);

/// Opens the store, loads configuration and catalog, and builds the runtime (blocking).
fn setup(env: &Env, directory: &Path) -> Result<Setup, ServeError> {
    let paths = env.paths();
    std::fs::create_dir_all(&paths.data).map_err(|err| ServeError::Setup {
        message: format!("cannot create {}: {err}", paths.data.display()),
        hint: "check that the data directory (XDG_DATA_HOME) is writable",
    })?;
    let store = Store::open(paths.database())
        .map_err(|err| ServeError::Setup { message: err.to_string(), hint: err.hint() })?;
    let mut load = LoadOptions::new(env.clone(), directory);
    load.paths = paths.clone();
    let loaded = opencode_config::load(&load);
    let warnings: Vec<String> = loaded.errors.iter().map(|err| format!("{err} (skipped; {})", err.hint())).collect();
    let config = Arc::new(loaded.config);
    let models = LazyCatalog::from_sources(paths.clone(), env.clone());
    let catalog = start_catalog(models.clone(), Arc::clone(&config));
    let llm = LlmClient::new();
    let store = Arc::new(store);
    let permissions = store_permissions(Arc::clone(&store));
    let plugins = Plugins::discover(env, &config, directory, false);
    let runtime =
        build_runtime(Arc::clone(&store), llm, catalog, config, paths, env.clone(), Arc::clone(&permissions), &plugins);
    Ok((store, runtime, permissions, plugins, models, warnings))
}

/// The start directory's catalog: `models` (shared with the HTTP routes) with its configuration
/// applied, built by the first prompt that needs a model, so an idle server never holds it.
fn start_catalog(models: LazyCatalog, config: Arc<Config>) -> LazyCatalog {
    LazyCatalog::new(move || models.get()?.as_ref().clone().with_config(&config))
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
