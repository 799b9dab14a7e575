//! `opencode-acp`: OpenCode as an [Agent Client Protocol](https://agentclientprotocol.com) agent
//! (protocol v1) over stdio, for editors such as Zed, embedding the session runtime in-process.
//!
//! - **Sessions are the project's sessions.** An ACP session id is the session id: a session
//!   started in an editor is in `opencode session list`, the server and the TUI, and any of those
//!   can be loaded in the editor (`session/load` replays its whole history).
//! - **A prompt is a runtime prompt.** `session/prompt` admits it durably, streams the turn
//!   (`agent_message_chunk`, `agent_thought_chunk`, `tool_call`/`tool_call_update` with kind,
//!   title, locations, raw input and output and diffs, `plan` from `todowrite`) and answers with the
//!   stop reason; `session/cancel` interrupts the drain.
//! - **Every permission ask is the client's to answer** (`session/request_permission`).
//! - **Modes are the primary agents**; config options `mode`, `model` and `thought_level`.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let env = opencode_config::Env::from_process();
//! let cwd = std::env::current_dir()?;
//! let engine = opencode_acp::engine(&env, &cwd)?;
//! engine.start_plugins();
//! opencode_acp::serve(engine, cwd, opencode_acp::Stdio::new()).await?;
//! # Ok(())
//! # }
//! ```

mod error;
mod files;
mod options;
mod permission;
mod prompt;
mod replay;
mod server;
mod session;
mod setup;
mod tools;
mod turn;

pub use agent_client_protocol::Stdio;
pub use server::AGENT_NAME;
pub use server::AGENT_VERSION;
pub use server::serve;
pub use setup::Engine;
pub use setup::engine;
