//! `opencode-session-store`: the durable SQLite store behind OpenCode sessions, and the only code that
//! writes SQL.
//!
//! - **What it keeps.** Projects, sessions, messages and their parts (OpenCode 1.x shapes, camelCase JSON
//!   ready to serve), admitted prompts (`session_input`), Context Epochs with their Baseline System
//!   Context and snapshot, Mid-Conversation System Messages, permission requests, saved approvals, todos,
//!   and a per-session event log with gap-free sequence numbers.
//! - **Transactions are the API.** [`Store::write`] runs a closure on a [`Tx`] in one `BEGIN IMMEDIATE`
//!   transaction: every change and the events describing it commit together or not at all.
//!   [`Store::read`] runs on a pooled read connection ([`Reader`]).
//! - **Cheap streaming, explicit durability.** [`Store::stage_part`] coalesces part updates in memory and
//!   commits them in batches; [`Store::flush`] commits and fsyncs before a step is reported finished.
//! - **OpenCode's history.** [`OpenCodeData`] imports OpenCode's own database (read-only) or its older
//!   JSON files, ids kept, idempotently and resumably.
//! - **Safe to share.** WAL, busy timeout and immediate transactions let several processes use one file
//!   without "database is locked"; migrations are versioned; a damaged file is reported, never rewritten.
//!
//! ```no_run
//! use opencode_session_store::{NewSession, Project, ProjectTime, Store};
//!
//! # fn run() -> opencode_session_store::Result<()> {
//! let store = Store::open("/tmp/opencode.db")?;
//! let session = store.write(|tx| {
//!     let time = ProjectTime { created: tx.now(), updated: tx.now(), initialized: None };
//!     tx.upsert_project(&Project { id: "global".into(), worktree: "/".into(), vcs: None, name: None,
//!         icon: None, commands: None, time, sandboxes: vec![] })?;
//!     tx.create_session(NewSession::new("global", "/home/me/project"))
//! })?;
//! let page = store.read(|r| r.history(&session.id, None, 200))?;
//! # let _ = page;
//! # Ok(())
//! # }
//! ```

mod error;
mod events;
mod history;
pub use opencode_config::id;
mod import;
mod part;
mod permissions;
mod runtime;
mod schema;
mod sessions;
mod store;
mod types;

pub use error::Result;
pub use error::StoreError;
pub use history::INTERRUPTED_TOOL_ERROR;
pub use history::MessagePage;
pub use history::MessageWithParts;
pub use import::IMPORTED_META;
pub use import::ImportCounts;
pub use import::ImportProgress;
pub use import::ImportReport;
pub use import::OPENCODE_DATABASE;
pub use import::OpenCodeData;
pub use import::SkippedRow;
pub use part::FileData;
pub use part::Part;
pub use part::PartKind;
pub use part::PartTime;
pub use part::RetryTime;
pub use part::ToolEndTime;
pub use part::ToolStartTime;
pub use part::ToolState;
pub use sessions::GLOBAL_PROJECT;
pub use sessions::NewSession;
pub use sessions::SessionPage;
pub use sessions::SessionQuery;
pub use sessions::project_of;
pub use store::EventHook;
pub use store::Reader;
pub use store::Store;
pub use store::StoreOptions;
pub use store::Tx;
pub use types::*;
