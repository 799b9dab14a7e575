//! Plugin commands: slash commands a plugin contributes beside the configured ones. Front ends list
//! them with the rest (`GET /command`, the TUI's `/` menu, ACP's available commands) and run them by
//! name; the plugin answers either with text shown in the session as it is, without a model call
//! (a status, a confirmation), or with a prompt the model then answers as it does a command
//! template's.

use futures_util::future::BoxFuture;

/// A command a plugin offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginCommand {
    /// Its name, without the slash (`ctx-status`).
    pub name: String,
    pub description: String,
    /// What its arguments are, for a front end's completion (`[reason]`), if it takes any.
    pub hint: Option<String>,
}

/// A run of a plugin command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInput {
    pub session_id: String,
    /// Everything typed after the command's name.
    pub arguments: String,
}

/// What a plugin command answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutcome {
    /// Shown in the session as the command's answer; the model is not called.
    Reply(String),
    /// Sent to the model as the user's prompt (as a command template's expansion is).
    Prompt(String),
}

/// A plugin's command runner (what [`crate::Plugin::run_command`] returns).
pub type CommandFuture<'a> = BoxFuture<'a, Result<CommandOutcome, String>>;
