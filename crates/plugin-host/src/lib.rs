//! `opencode-plugin-host`: OpenCode's plugin system in Rust.
//!
//! - **Plugins and hooks.** A [`Plugin`] declares a namespace and the [`HookSet`] it implements, and
//!   implements any of OpenCode's hooks (`event`, `config`, `tool`, `auth`, `provider`,
//!   `chat.message`, `chat.params`, `chat.headers`, `permission.ask`, `tool.execute.before`,
//!   `tool.execute.after`, `tool.definition`, `shell.env`, `experimental.chat.messages.transform`,
//!   `experimental.chat.system.transform`, `experimental.session.compacting`,
//!   `experimental.text.complete`), each with a typed
//!   input and a mutable typed output ([`hooks`]). [`PluginHost::trigger`] dispatches one through the
//!   ready plugins.
//! - **Deterministic order.** Plugins run in registration order, sequentially, each seeing the
//!   output the previous one left: built-in plugins first, then `plugin[]` entries in configuration
//!   order, then `.opencode/plugin/` executables sorted by file name ([`loader`]). A failing or
//!   timed-out hook is skipped for that plugin and reported as a [`HookFailure`].
//! - **Readiness.** [`PluginHost::ready`] starts every plugin concurrently and awaits them; a plugin
//!   that fails is reported with its name and error ([`ReadyReport`]) and the others continue,
//!   unless it was [`Requirement::Required`], in which case `ready` fails and sessions must not run.
//! - **Contributions.** Tools join a tool registry ([`PluginHost::attach_tools`]); plugin-defined
//!   Context Sources join a System Context Registry under `plugin.<namespace>/<name>` through its
//!   scoped seam ([`PluginHost::attach_context`]). [`PluginHost::unload`] removes both: the sources
//!   disappear at the next Safe Provider-Turn Boundary (the next registry load).
//! - **Side completions** ([`side`]): a host that can talk to models hands every ready plugin a
//!   [`SideModel`] ([`PluginHost::provide_side_model`]) for one-shot requests on the small model.
//! - **External plugins** ([`external`]): a program in any language speaking JSON-RPC 2.0 over
//!   stdio (docs/PLUGINS.md), with per-call timeouts, loaded from `plugin[]` and `.opencode/plugin/`.
//! - **Provider auth** ([`auth`]): built-in plugins for the GitHub Copilot device-code flow and the
//!   Anthropic Claude Pro/Max and OpenAI ChatGPT PKCE sign-ins, tokens refreshed before expiry.
//!
//! ## `experimental.chat.system.transform` and Context Sources
//!
//! The baseline system context is the provider prompt-cache prefix of a Context Epoch and must stay
//! byte-stable, so plugins never see or edit it. The supported way for a plugin to add system
//! context is a plugin-defined Context Source: its text enters the next epoch's baseline, and its
//! changes arrive as one Mid-Conversation System Message at the next boundary, keeping the cache.
//! `experimental.chat.system.transform` is kept for compatibility with additive semantics only: its
//! output starts empty and whatever text plugins return is appended as extra system parts AFTER the
//! baseline for that one request, never persisted ([`PluginHost::apply_transforms`]). Text that
//! changes between turns therefore costs the provider cache from that point on; plugins should
//! prefer a Context Source.
//!
//! ```
//! use std::sync::Arc;
//! use opencode_plugin_host::{hook, ChatInput, ChatParamsOutput, HookFuture, HookName, HookSet};
//! use opencode_plugin_host::{Plugin, PluginHost, Requirement};
//!
//! struct Cool;
//!
//! impl Plugin for Cool {
//!     fn namespace(&self) -> &str { "cool" }
//!     fn hooks(&self) -> HookSet { HookSet::of([HookName::ChatParams]) }
//!     fn chat_params<'a>(&'a self, _: &'a ChatInput, out: &'a mut ChatParamsOutput) -> HookFuture<'a> {
//!         out.temperature = Some(0.2);
//!         Box::pin(async { Ok(()) })
//!     }
//! }
//!
//! # async fn run() -> Result<(), opencode_plugin_host::PluginError> {
//! let host = PluginHost::builder().plugin(Arc::new(Cool), Requirement::Required).build();
//! host.ready().await?;
//! let mut params = ChatParamsOutput::default();
//! host.trigger::<hook::ChatParams>(&ChatInput::default(), &mut params).await;
//! assert_eq!(params.temperature, Some(0.2));
//! # Ok(())
//! # }
//! ```

pub mod auth;
pub mod commands;
mod error;
pub mod external;
pub mod hooks;
mod host;
pub mod loader;
mod plugin;
mod seams;
pub mod side;
mod turn;

pub use commands::CommandInput;
pub use commands::CommandOutcome;
pub use commands::PluginCommand;
pub use error::PluginError;
pub use hooks::*;
pub use host::HookFailure;
pub use host::PluginHost;
pub use host::PluginHostBuilder;
pub use host::PluginNotice;
pub use host::PluginState;
pub use host::PluginStatus;
pub use host::ReadyReport;
pub use host::Requirement;
pub use host::START_TIMEOUT;
pub use plugin::Plugin;
pub use plugin::PluginSource;
pub use plugin::StartContext;
pub use plugin::valid_namespace;
pub use seams::PluginPermissions;
pub use seams::PluginShellEnv;
pub use side::SideAnswer;
pub use side::SideModel;
pub use side::SideRequest;
