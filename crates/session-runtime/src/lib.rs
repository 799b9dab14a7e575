//! `opencode-session-runtime`: turns admitted prompts into provider turns, durably.
//!
//! - **Admission is separate from execution.** [`SessionRuntime::prompt`] writes one durable
//!   `session_input` row (steer by default, or queue), then schedules an advisory wake. Reusing a
//!   prompt id is an exact retry only when session, prompt and delivery match.
//! - **One drain per session, many sessions at once.** A process-global run coordinator serialises
//!   drains per session id, coalesces wakes into one follow-up drain, and interrupts the active drain
//!   ([`SessionRuntime::interrupt`]; idle or unknown sessions are a no-op).
//! - **Safe Provider-Turn Boundaries.** Before every provider call the runner fences on the session's
//!   Location, initialises the Context Epoch before the first promotion, promotes steers (and one
//!   queued prompt when the session would otherwise go idle), reconciles the System Context into at
//!   most one Mid-Conversation System Message, reloads projected history, and makes exactly one
//!   `llm.stream(request)`. Local tool calls run through a [`ToolHost`] with the turn's agent pinned.
//! - **Compaction and recovery.** Requests that would not fit are compacted first (an anchored summary
//!   turn without tools, then a new epoch); an overflow before any output compacts once and retries
//!   once; retryable failures are retried a bounded number of times. After a crash, tool calls left
//!   running are failed as interrupted, never re-run, and admitted prompts stay pending.
//! - **Events.** Durable store events and live deltas on one bus ([`SessionRuntime::subscribe`]).
//! - **Front ends.** What an editor or server shows of a session comes from here too: the agents and
//!   catalog of a directory ([`SessionRuntime::agents`], [`SessionRuntime::catalog`]), the model the
//!   next turn would use ([`SessionRuntime::next_model`]), switching agent or model without a prompt
//!   ([`SessionRuntime::configure`]), and the store-backed permission requests and todo lists the
//!   standard tools ask through ([`StorePending`], [`StoreTodos`]). Every front end assembles the
//!   runtime the same way, with [`Assembly`].
//!
//! ```no_run
//! # async fn run() -> Result<(), opencode_session_runtime::RuntimeError> {
//! use std::sync::Arc;
//! use opencode_session_runtime::{PromptRequest, SessionRuntime};
//!
//! let paths = opencode_config::Paths::from_env();
//! let store = Arc::new(opencode_session_store::Store::open(paths.database())?);
//! let catalog = Arc::new(opencode_catalog::Catalog::bundled()?);
//! let config = Arc::new(opencode_config::Config::default());
//! let llm = opencode_llm::LlmClient::new();
//! let runtime = SessionRuntime::builder(store, llm, catalog, config, paths)
//!     .env(opencode_config::Env::from_process())
//!     .build();
//! let session = runtime.create_session(std::path::Path::new("."), Default::default()).await?;
//! let mut prompt = PromptRequest::text(&session.id, "Say hi");
//! prompt.model = Some(opencode_session_runtime::ModelChoice::parse("anthropic/claude-haiku-4-5")?);
//! let result = runtime.run(prompt).await?;
//! println!("{:?}, cost ${:.4}", result.outcome, result.session.cost);
//! # Ok(())
//! # }
//! ```

mod assembly;
pub mod compaction;
mod coordinator;
mod defaults;
mod epoch;
mod error;
mod events;
mod fold;
mod history;
mod hooks;
mod location;
mod locations;
mod memory;
mod plugins;
mod progress;
mod projection;
mod records;
mod registry;
mod replies;
mod runner;
mod runtime;
mod services;
mod settings;
mod side;
mod snapshots;
mod store;
mod subagent;
mod subtask;
mod title;
mod tools;

pub use assembly::Assembled;
pub use assembly::Assembly;
pub use assembly::Started;
pub use compaction::CompactionPrompt;
pub use compaction::CompactionSettings;
pub use coordinator::DrainOutcome;
pub use defaults::PROVIDER_PRIORITY;
pub use defaults::callable_providers;
pub use defaults::default_model;
pub use defaults::small_model;
pub use error::Result;
pub use error::RuntimeError;
pub use events::DeltaKind;
pub use events::RuntimeEvent;
pub use events::SessionStatus;
pub use history::PromptFile;
pub use history::StoredPrompt;
pub use history::to_llm_messages;
pub use hooks::Hooks;
pub use hooks::PluginHooks;
pub use hooks::TurnInfo;
pub use location::Location;
pub use location::LocationFactory;
pub use location::StandardLocations;
pub use locations::Reload;
pub use memory::HistoryReport;
pub use memory::MemoryOptions;
pub use memory::MemoryReport;
pub use opencode_mcp as mcp;
pub use opencode_plugin_host::PluginCommand;
pub use opencode_session_store::Delivery;
pub use opencode_tool_registry::Agent;
pub use opencode_tool_registry::Agents;
pub use plugins::CommandRun;
pub use plugins::Plugins;
pub use registry::RegistryTools;
pub use runner::DEFAULT_SYSTEM_PROMPT;
pub use runner::MAX_STEPS_PROMPT;
pub use runtime::LocationTools;
pub use runtime::ModelChoice;
pub use runtime::PromptRequest;
pub use runtime::Receipt;
pub use runtime::RunResult;
pub use runtime::RuntimeBuilder;
pub use runtime::RuntimeOptions;
pub use runtime::SessionHold;
pub use runtime::SessionRuntime;
pub use services::StorePending;
pub use services::StoreTodos;
pub use subagent::DEFAULT_SUBAGENT_DEPTH;
pub use subtask::SUBTASK_SUMMARY_PROMPT;
pub use subtask::SubtaskPrompt;
pub use title::TITLE_PROMPT;
pub use tools::FnTools;
pub use tools::NoTools;
pub use tools::ToolFuture;
pub use tools::ToolHost;
pub use tools::ToolInvocation;
pub use tools::ToolResult;
pub use tools::ToolRunContext;
pub use tools::ToolStatus;
