//! The command line, as clap types.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "opencode", version, about = "The open source AI coding agent")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List models as provider/model.
    Models(ModelsArgs),
    /// Manage provider credentials.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Troubleshooting tools.
    #[command(subcommand)]
    Debug(DebugCommand),
}

#[derive(Debug, clap::Args)]
pub struct ModelsArgs {
    /// Only this provider's models.
    pub provider: Option<String>,
    /// Show limits, cost, capabilities and route of each model.
    #[arg(long)]
    pub verbose: bool,
    /// Download the latest models.dev catalog first.
    #[arg(long)]
    pub refresh: bool,
    /// Every provider in the catalog, not only those with credentials.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Store an API key for a provider (read from standard input).
    Login {
        /// The provider id, for example `anthropic` (asked for when omitted).
        provider: Option<String>,
    },
    /// List stored credentials and credentials found in the environment.
    #[command(alias = "ls")]
    List,
    /// Remove a provider's stored credentials.
    Logout { provider: String },
}

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Print the merged configuration with the source of each value.
    Config,
}
