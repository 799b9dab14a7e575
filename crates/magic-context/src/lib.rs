//! `opencode-magic-context`: keeps a long session inside the context window without losing its
//! history and without busting the provider's prompt cache. A plugin on the plugin host's hooks.
//!
//! - **The transform** ([`Engine::transform`], run by the `experimental.chat.messages.transform`
//!   hook on every provider turn) is deterministic and makes no model calls. It tags every text
//!   and tool-result part (`§N§`), replays committed drops as `[dropped §N§]`, and replaces the
//!   oldest raw history by two synthetic user messages: **m[0]**, the frozen baseline (decayed
//!   compartments, project memories), and **m[1]**, the delta since m[0] (newer compartments,
//!   memories, notes). Both carry a prompt-cache breakpoint.
//! - **Execute or defer.** A pass defers (replays every byte of the previous request before the
//!   new tail) unless executing is free (the provider cache is dead: first render, model switch,
//!   idle past the cache lifetime, rewritten history) or forced (`/ctx-flush`, usage past the
//!   execute threshold at a turn start, past 85% anywhere). The bust taxonomy: **SOFT+** replays
//!   both slots; **SOFT** re-renders m[1] only; **HARD** folds m[0], only when the cache is dead
//!   anyway or m[0]'s own content changed. A watermark moving (a new compartment, a new memory)
//!   never executes a pass by itself.
//! - **The historian** ([`Engine::run_historian`]) runs out of band after a pass that found
//!   enough eligible history, turning whole user turns outside the protected tail into
//!   compartments; a pass past 95% waits for it.
//! - **State** lives in its own SQLite file, `context.db` ([`store`]); a restarted process
//!   replays the same bytes. Without it the plugin does not start (fail closed): the host's
//!   built-in compaction keeps protecting the window.
//! - **Tools**: `ctx_reduce`, `ctx_expand`, `ctx_note`, `ctx_memory`, `ctx_search`;
//!   [`MagicContext::status`] and [`MagicContext::flush`] back the slash commands `/ctx-status` and `/ctx-flush`.
//!
//! Off unless the configuration's `magic_context` section turns it on
//! ([`MagicContext::from_config`] returns `None` otherwise, and nothing of it runs).

mod compressor;
mod config;
mod engine;
mod error;
pub mod historian;
mod plugin;
pub mod render;
mod state;
pub mod store;
mod tools;

pub use config::BLOCK_PERCENTAGE;
pub use config::FORCE_PERCENTAGE;
pub use config::MagicContextConfig;
pub use engine::Decision;
pub use engine::Engine;
pub use engine::HistorianJob;
pub use engine::Materialized;
pub use engine::PassInput;
pub use engine::PassReport;
pub use engine::Status;
pub use error::Error;
pub use plugin::Clock;
pub use plugin::DATABASE_FILE;
pub use plugin::MagicContext;
pub use plugin::register;
pub use store::Store;
