//! The command line, as clap types.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "opencode",
    version,
    about = "The open source AI coding agent",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Without a command: the terminal UI, on a private server started in-process.
    #[command(flatten)]
    pub tui: TuiArgs,
}

/// `opencode [project]`: the terminal UI on this machine.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TuiArgs {
    /// The project directory (default: the current one).
    pub project: Option<PathBuf>,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// `opencode attach URL`: the terminal UI on a running server.
#[derive(Debug, clap::Args)]
pub struct AttachArgs {
    /// The server's URL, e.g. http://127.0.0.1:4096 (ours or OpenCode's).
    pub url: String,
    /// The directory whose sessions to show (default: the current one).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The server's password (default: OPENCODE_SERVER_PASSWORD).
    #[arg(short, long)]
    pub password: Option<String>,
    #[command(flatten)]
    pub open: OpenArgs,
}

/// What the terminal UI opens with.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OpenArgs {
    /// Continue the latest session of the directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub continue_last: bool,
    /// Open this session.
    #[arg(short, long)]
    pub session: Option<String>,
    /// The model to prompt with, as provider/model.
    #[arg(short, long)]
    pub model: Option<String>,
    /// The agent to start with.
    #[arg(long)]
    pub agent: Option<String>,
    /// A prompt to send at once.
    #[arg(long)]
    pub prompt: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the terminal UI on a running server (ours or OpenCode's).
    Attach(AttachArgs),
    /// Run opencode with a message, headless: streams the answer, then exits.
    Run(RunArgs),
    /// List, show and delete sessions.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Print a session (info and messages with their parts) as JSON.
    Export {
        /// The session id (default: the latest session of this directory).
        session: Option<String>,
    },
    /// Import a session from a JSON file written by `opencode export`, or OpenCode's own history.
    Import {
        /// The exported file (`-` for standard input).
        #[arg(required_unless_present = "from_opencode", conflicts_with = "from_opencode")]
        file: Option<PathBuf>,
        /// Copy OpenCode's projects, sessions, messages and parts from its data directory (read-only
        /// there; again later, only what is new is added).
        #[arg(long)]
        from_opencode: bool,
    },
    /// Run the OpenCode-compatible HTTP API server, headless.
    Serve(ServeArgs),
    /// Serve the Agent Client Protocol over stdio, for editors (Zed, JetBrains, Neovim plugins).
    Acp(AcpArgs),
    /// Run the server with its web UI, print the UI's address and open it in a browser.
    Web(WebArgs),
    /// List models as provider/model.
    Models(ModelsArgs),
    /// Manage provider credentials.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Troubleshooting tools.
    #[command(subcommand)]
    Debug(DebugCommand),
    /// Manage MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// The agent on GitHub: answer issues and pull requests from a GitHub Actions job.
    #[command(subcommand)]
    Github(GithubCommand),
}

#[derive(Debug, Subcommand)]
pub enum GithubCommand {
    /// Handle the event of the current GitHub Actions job (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH,
    /// GITHUB_REPOSITORY, GITHUB_TOKEN; GITHUB_API_URL for GitHub Enterprise Server).
    Run(GithubRunArgs),
    /// Write the workflow that runs the agent in this repository's GitHub Actions
    /// (.github/workflows/opencode.yml) and print the secrets to set.
    Install(GithubInstallArgs),
}

#[derive(Debug, clap::Args)]
pub struct GithubInstallArgs {
    /// The model as provider/model [default: config `model`].
    #[arg(short, long)]
    pub model: Option<String>,
    /// Also review every opened pull request (a check run on its head commit).
    #[arg(long)]
    pub review: bool,
    /// Replace an existing workflow file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct GithubRunArgs {
    /// Words that call on the agent in a comment, comma-separated.
    #[arg(long, default_value = "/opencode,/oc")]
    pub mentions: String,
    /// The prompt: required for `workflow_dispatch` and `schedule`; elsewhere it replaces the
    /// comment's request, or leads an issue's or a pull request's text.
    #[arg(long)]
    pub prompt: Option<String>,
    /// The model as provider/model.
    #[arg(short, long)]
    pub model: Option<String>,
    /// The agent that works on it.
    #[arg(long, default_value = "build")]
    pub agent: String,
    /// Also write the session's export (as `opencode export` prints it) to this file.
    #[arg(long)]
    pub export: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Port to listen on (0 picks a free one) [default: config `server.port`, else 4096].
    #[arg(long)]
    pub port: Option<u16>,
    /// Address to listen on [default: config `server.hostname`, else 127.0.0.1].
    #[arg(long)]
    pub hostname: Option<String>,
    /// An origin whose web pages may call the server (repeatable; adds to config `server.cors`).
    #[arg(long)]
    pub cors: Vec<String>,
    /// A host name clients may reach the server by, besides loopback names and IP addresses
    /// (repeatable; adds to config `server.allowed_hosts`; `.example.com` allows subdomains).
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct AcpArgs {
    /// The directory whose configuration the agent loads [default: the working directory]; each
    /// session runs in the directory the editor names for it.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct WebArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Only print the address; do not try to open a browser.
    #[arg(long)]
    pub no_open: bool,
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
    /// Sign in to a provider: OAuth (GitHub Copilot, ...) or an API key read from standard input.
    Login {
        /// The provider id, for example `anthropic` (asked for when omitted; the login methods are listed).
        provider: Option<String>,
        /// Which of the provider's login methods (1-based, as listed); asked for on a terminal,
        /// the API key method when standard input is piped.
        #[arg(long)]
        method: Option<usize>,
    },
    /// List stored credentials and credentials found in the environment.
    #[command(alias = "ls")]
    List,
    /// Remove a provider's stored credentials.
    Logout { provider: String },
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect to every configured MCP server and show its status and tool count.
    #[command(alias = "ls")]
    List,
    /// Add an MCP server to the project config (or the global one with --global).
    Add(McpAddArgs),
    /// Sign in to a remote MCP server with OAuth: prints the authorization URL, opens the browser
    /// and waits for it to come back.
    Auth(McpAuthArgs),
    /// Remove a server's stored OAuth credentials.
    Logout {
        /// The server name.
        name: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct McpAuthArgs {
    /// The server name (a remote server in the `mcp` config).
    pub name: String,
    /// Only print the authorization URL; do not try to open a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// Seconds to wait for the browser to come back.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
}

#[derive(Debug, clap::Args)]
pub struct McpAddArgs {
    /// The server name (its tools are named `<name>_<tool>`).
    pub name: String,
    /// A remote server's URL (streamable HTTP).
    #[arg(long)]
    pub url: Option<String>,
    /// A header sent to a remote server, KEY=VALUE (repeatable).
    #[arg(long)]
    pub header: Vec<String>,
    /// An environment variable for a local server, KEY=VALUE (repeatable).
    #[arg(long)]
    pub env: Vec<String>,
    /// Connect timeout in milliseconds.
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Write to the global config instead of the project's.
    #[arg(long)]
    pub global: bool,
    /// A local server's command and arguments, after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Print the merged configuration with the source of each value.
    Config,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The message to send (joined with spaces; standard input is appended when it is not a terminal).
    pub message: Vec<String>,
    /// Run this command (a configured template or `command/*.md` file); the message is its arguments.
    #[arg(long)]
    pub command: Option<String>,
    /// Run without external plugins (config `plugin[]` and `.opencode/plugin/`).
    #[arg(long)]
    pub pure: bool,
    /// The model, as provider/model (default: `model` from opencode.json).
    #[arg(short, long)]
    pub model: Option<String>,
    /// The model variant (e.g. a reasoning effort), applied to the
    /// model given with -m, else to the session's or the default model.
    #[arg(long)]
    pub variant: Option<String>,
    /// The agent to use (default: the session's, else `build`).
    #[arg(long)]
    pub agent: Option<String>,
    /// Continue the latest session of this directory.
    #[arg(short, long = "continue")]
    pub continue_: bool,
    /// Continue this session.
    #[arg(short, long, conflicts_with = "continue_")]
    pub session: Option<String>,
    /// Fork the session given by --continue or --session and continue the copy.
    #[arg(long)]
    pub fork: bool,
    /// Attach a file (repeatable).
    #[arg(short, long = "file")]
    pub files: Vec<PathBuf>,
    /// Output format: `default` (text) or `json` (one JSON event per line).
    #[arg(long, value_enum, default_value_t = Format::Default)]
    pub format: Format,
    /// Title of a new session.
    #[arg(long)]
    pub title: Option<String>,
    /// Approve every permission request (without it they are rejected: nobody is there to answer).
    #[arg(long, visible_alias = "yolo", alias = "dangerously-skip-permissions")]
    pub auto: bool,
    /// Show the model's reasoning.
    #[arg(long)]
    pub thinking: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Default,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List sessions, latest activity first.
    #[command(alias = "ls")]
    List {
        /// Sessions of every directory, not only this one.
        #[arg(long)]
        all: bool,
        /// At most this many.
        #[arg(short = 'n', long, default_value_t = 50)]
        max_count: usize,
        /// Output format: `table` or `json`.
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Print a session's transcript.
    Show { session: String },
    /// Delete a session with its messages and child sessions.
    #[command(alias = "rm")]
    Delete { session: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
}
