//! `opencode-tool-registry`: what the model can do, within which bounds, under whose authority.
//!
//! - **Tools.** A [`Tool`] has a name, a description, a JSON Schema of its input and an async
//!   `execute` given a [`ToolContext`] (session, message, call id, the effective agent of the
//!   issuing provider turn, the [`Location`], cancellation, permission asks and progress).
//!   [`TypedTool`] derives the schema with `schemars`. Built-in tools are in [`tools`].
//! - **Bounded settlement.** [`ToolRegistry::execute`] settles every call into one [`Settlement`]
//!   whose text is bounded (default 2000 lines / 50 KiB, head and tail kept); the complete text goes
//!   to a Managed Tool Output File ([`OutputStore`]). Failing to write that file keeps the success.
//! - **Location authority.** Paths resolve inside the Location or managed tool-output storage;
//!   anything else asks `external_directory` permission; symlink swaps are caught at open time.
//! - **Language servers.** [`Lsp`] runs the servers configured under `lsp` (lazily, per file
//!   extension); [`tools::lsp::register`] adds the `lsp` tool and makes `edit`/`write` report errors.
//! - **Permissions and agents.** OpenCode's last-match-wins [`Ruleset`]s, the built-in [`Agents`],
//!   and [`Permissions`]: pending requests answered once, always or reject; a [`PermissionHook`]
//!   (the plugins' `permission.ask`) may decide what the rules leave at `ask` before the user is asked.

mod agent;
mod diff;
mod editor;
mod error;
mod id;
mod location;
pub mod lsp;
mod output;
mod pending;
mod permission;
mod permission_hook;
mod registry;
mod tool;
pub mod tools;

pub use agent::Agent;
pub use agent::AgentDirs;
pub use agent::Agents;
pub use agent::DEFAULT_AGENT;
pub use diff::FileDiff;
pub use editor::EditorFiles;
pub use error::PermissionFailure;
pub use error::RegistryError;
pub use error::ToolError;
pub use location::Location;
pub use location::ResolvedPath;
pub use location::Scope;
pub use lsp::Lsp;
pub use lsp::LspError;
pub use lsp::LspServer;
pub use output::Bounded;
pub use output::BoundedWriter;
pub use output::FILE_PREFIX;
pub use output::OutputStore;
pub use output::RETENTION;
pub use pending::MemoryPendingStore;
pub use pending::PendingEvent;
pub use pending::PendingKind;
pub use pending::PendingRequest;
pub use pending::PendingStore;
pub use pending::PermissionAsk;
pub use pending::Permissions;
pub use pending::Question;
pub use pending::QuestionOption;
pub use pending::Reply;
pub use pending::ReplyError;
pub use pending::ToolRef;
pub use permission::Rule;
pub use permission::Ruleset;
pub use permission::permission_of_tool;
pub use permission::wildcard;
pub use permission_hook::PermissionHook;
pub use permission_hook::PermissionQuery;
pub use registry::DOOM_LOOP_THRESHOLD;
pub use registry::RegistrationId;
pub use registry::Settlement;
pub use registry::SettlementStatus;
pub use registry::ToolCall;
pub use registry::ToolRegistry;
pub use registry::validate_name;
pub use tool::Media;
pub use tool::NoProgress;
pub use tool::ProgressSink;
pub use tool::Tool;
pub use tool::ToolContext;
pub use tool::ToolOutput;
pub use tool::TypedTool;
pub use tool::schema_for;
pub use tool::typed;
