//! `opencode-http-api`: OpenCode's HTTP API over the durable session store, so that OpenCode's own
//! clients (the `@opencode-ai/sdk` package, the TUI, editors) work against opencode-rs unchanged.
//!
//! - **Routes.** The OpenCode 1.x surface (`/global/health`, `/session...`, `/event`, `/config`,
//!   `/provider`, `/agent`, `/path`, `/project...`, `/file...`, `/find/file`, permission replies,
//!   `/global/config`, `/instance/dispose`, `/global/dispose`, `/auth/{providerID}`, the terminal
//!   panel's `/pty...` with its WebSocket), the
//!   seed's project-scoped API (`/project/{projectID}/session...`) and the V2 prompt surface
//!   (`/api/session/{id}/prompt|interrupt|context|event`), all in OpenCode's JSON shapes.
//! - **Instances.** Every request runs in a directory (`?directory=`, `x-opencode-directory`, or the
//!   server's default); its project, configuration and catalog are resolved once per directory, and
//!   configuration updates and dispose requests reload them (and the runtime's Locations).
//! - **The runtime is a seam.** Everything durable is read from and written to the store directly;
//!   prompts, interrupts, compaction and live events go through [`SessionDriver`]. [`RuntimeDriver`]
//!   drives the real session runtime ([`start_server`] / [`run_server`] build it from configuration);
//!   [`EchoDriver`] is a model-free reference implementation, [`UnavailableDriver`] refuses prompts.
//! - **Events.** `/event` streams the store's committed events and the driver's live ones, filtered
//!   to the instance directory, as `{"id","type","properties"}`. The store has one event hook: the
//!   server installs its own unless the driver owns it and forwards committed events in order (the
//!   runtime does).
//! - **Safety.** HTTP Basic auth (constant-time) when a password is set, JSON errors with stable codes
//!   and no 500 for bad input, a body limit, CORS, graceful shutdown.
//!
//! `opencode serve` is `run_server(options, directory)`; embedding with another driver:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use opencode_http_api::{serve, EchoDriver, ServerContext, ServerOptions};
//! use opencode_session_store::Store;
//!
//! let env = opencode_config::Env::from_process();
//! let paths = env.paths();
//! let store = Arc::new(Store::open(paths.database())?);
//! let driver = Arc::new(EchoDriver::new(Arc::clone(&store)));
//! let context = ServerContext::new(store, driver, env.clone(), paths, std::env::current_dir()?);
//! let server = serve(ServerOptions::from_env(&env), context).await?;
//! println!("listening on {}", server.url());
//! server.wait().await?;
//! # Ok(())
//! # }
//! ```

mod bus;
mod catalog_json;
mod driver;
mod echo;
mod error;
mod extract;
mod guard;
mod instance;
mod launch;
mod memory;
mod middleware;
mod openapi;
mod options;
mod pty;
mod routes;
mod runtime_driver;
mod server;
mod state;
pub mod web;

pub use bus::BusEvent;
pub use bus::EventBus;
pub use driver::AgentPartInput;
pub use driver::BoxFuture;
pub use driver::DriverError;
pub use driver::DriverEvent;
pub use driver::FilePartInput;
pub use driver::LiveEvent;
pub use driver::PartInput;
pub use driver::PermissionRequest;
pub use driver::PromptBody;
pub use driver::PromptModel;
pub use driver::QuestionRequest;
pub use driver::QuestionTool;
pub use driver::SessionDriver;
pub use driver::SessionStatus;
pub use driver::SubtaskPartInput;
pub use driver::TextPartInput;
pub use driver::UnavailableDriver;
pub use driver::part_from_input;
pub use echo::EchoDriver;
pub use error::ApiError;
pub use error::ServeError;
pub use launch::run_server;
pub use launch::run_server_with;
pub use launch::start_server;
pub use memory::report_allocator;
pub use openapi::document as openapi_document;
pub use opencode_session_runtime::StorePending;
pub use opencode_session_runtime::StoreTodos;
pub use options::Credentials;
pub use options::DEFAULT_BODY_LIMIT;
pub use options::DEFAULT_PORT;
pub use options::ServerOptions;
pub use runtime_driver::RuntimeDriver;
pub use server::Server;
pub use server::serve;
pub use state::ServerContext;
