//! `opencode mcp list|add|auth|logout`: the configured MCP servers with their status, tool count and
//! OAuth state; adding a server to the project or global config file; signing in to a remote server
//! with OAuth and removing its stored credentials.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

use indexmap::IndexMap;
use opencode_mcp::McpAuthStore;
use opencode_mcp::McpError;
use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_mcp::OAuthTarget;
use opencode_mcp::ServerStatus;
use opencode_mcp::oauth::Authorization;
use serde_json::Map;
use serde_json::Value;

use super::emit;
use crate::cli::McpAddArgs;
use crate::cli::McpAuthArgs;
use crate::cli::McpCommand;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, command: McpCommand) -> Result<(), CliError> {
    match command {
        McpCommand::List => list(context),
        McpCommand::Add(args) => add(context, args),
        McpCommand::Auth(args) => auth(context, &args),
        McpCommand::Logout { name } => logout(context, &name),
    }
}

/// Connects every server (each within its own timeout) and prints its status, tool count and, for
/// remote servers with OAuth, whether credentials are stored.
fn list(context: &Context) -> Result<(), CliError> {
    let servers = &context.loaded.config.mcp;
    let mut out = std::io::stdout().lock();
    if servers.is_empty() {
        return emit(&mut out, format_args!("No MCP servers configured. Add one with `opencode mcp add`.\n"));
    }
    let store = McpAuthStore::new(&context.paths.data);
    let reports = super::tokio_runtime()?.block_on(async {
        let options = McpOptions::new(&context.cwd).with_auth_store(Some(store.clone()));
        let manager = McpManager::start(servers, options);
        manager.settled().await;
        let reports = manager.reports();
        manager.shutdown();
        reports
    });
    let width = reports.iter().map(|report| report.name.len()).max().unwrap_or(0);
    for report in reports {
        let (mark, detail) = match &report.status {
            ServerStatus::Connected => ("✓", format!("connected ({} tools)", report.tools.len())),
            ServerStatus::Disabled => ("○", "disabled".to_owned()),
            ServerStatus::NeedsAuth => ("⚠", format!("needs auth: run `opencode mcp auth {}`", report.name)),
            other => ("✗", other.to_string()),
        };
        let kind = report.kind.map(|kind| format!(" [{kind}]")).unwrap_or_default();
        let oauth = servers
            .get(&report.name)
            .and_then(|entry| OAuthTarget::from_config(&report.name, entry).ok())
            .map(|target| match store.status(&target.name, &target.url) {
                Ok(status) => format!("  (OAuth: {status})"),
                Err(err) => format!("  (OAuth: {err})"),
            })
            .unwrap_or_default();
        emit(&mut out, format_args!("{mark} {:<width$}{kind}  {detail}{oauth}\n", report.name))?;
    }
    out.flush().map_err(|err| CliError::Io(format!("cannot write output: {err}")))
}

/// Runs the OAuth flow for one remote server, stores its tokens and connects with them.
fn auth(context: &Context, args: &McpAuthArgs) -> Result<(), CliError> {
    let name = &args.name;
    let Some(entry) = context.loaded.config.mcp.get(name) else {
        return Err(CliError::Failed {
            message: format!("no MCP server named {name} is configured"),
            hint: "see `opencode mcp list`, or add one with `opencode mcp add <name> --url <url>`".into(),
        });
    };
    let target = OAuthTarget::from_config(name, entry).map_err(failed(name))?;
    let store = McpAuthStore::new(&context.paths.data);
    let runtime = super::tokio_runtime()?;
    let timeout = std::time::Duration::from_secs(args.timeout);
    let open = !args.no_browser;
    let outcome = runtime
        .block_on(opencode_mcp::oauth::authorize(&target, &store, timeout, |url| {
            let mut out = std::io::stdout().lock();
            let _shown =
                writeln!(out, "Open this URL to authorize opencode with {name}:\n{url}\nWaiting for the browser…");
            let _flushed = out.flush();
            if open {
                open_browser(url);
            }
        }))
        .map_err(failed(name))?;
    let mut out = std::io::stdout().lock();
    if outcome == Authorization::NotRequired {
        return emit(&mut out, format_args!("{name} does not require authorization.\n"));
    }
    emit(&mut out, format_args!("Authorized; credentials stored in {}\n", store.path().display()))?;
    let report = runtime.block_on(async {
        let single = IndexMap::from([(name.clone(), entry.clone())]);
        let manager = McpManager::start(&single, McpOptions::new(&context.cwd).with_auth_store(Some(store.clone())));
        manager.settled().await;
        let report = manager.reports().pop();
        manager.shutdown();
        report
    });
    match report {
        Some(report) if report.status == ServerStatus::Connected => {
            emit(&mut out, format_args!("✓ {name} connected ({} tools)\n", report.tools.len()))
        }
        Some(report) => Err(CliError::Failed {
            message: format!("{name} is authorized but did not connect: {}", report.status),
            hint: "run `opencode mcp list` for details".into(),
        }),
        None => Ok(()),
    }
}

/// Removes one server's stored OAuth credentials.
fn logout(context: &Context, name: &str) -> Result<(), CliError> {
    let store = McpAuthStore::new(&context.paths.data);
    let removed = store.remove(name).map_err(failed(name))?;
    let mut out = std::io::stdout().lock();
    if removed {
        emit(&mut out, format_args!("Removed the OAuth credentials of {name}\n"))
    } else {
        emit(&mut out, format_args!("No OAuth credentials stored for {name}\n"))
    }
}

/// An MCP error as a CLI failure, its hint naming the server.
fn failed(name: &str) -> impl Fn(McpError) -> CliError {
    move |err| CliError::Failed { message: err.to_string(), hint: err.hint().replace("<name>", name) }
}

/// Best effort: the URL is printed either way.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = spawned {
        // Reap it in the background so no zombie is left behind.
        std::thread::spawn(move || child.wait());
    }
}

/// Writes `mcp.<name>` into the project (or global) config file.
fn add(context: &Context, args: McpAddArgs) -> Result<(), CliError> {
    let entry = entry(&args)?;
    let file = if args.global {
        config_file(&context.paths.config)
    } else {
        config_file(&opencode_config::find_worktree(&context.cwd).unwrap_or_else(|| context.cwd.clone()))
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => "{}".to_owned(),
        Err(err) => return Err(CliError::Io(format!("cannot read {}: {err}", file.display()))),
    };
    let snippet = serde_json::to_string_pretty(&serde_json::json!({"mcp": {&args.name: &entry}})).unwrap_or_default();
    if opencode_config::jsonc::strip(&text) != text {
        return Err(CliError::Failed {
            message: format!("{} has comments, which rewriting would lose", file.display()),
            hint: format!("add this entry by hand:\n{snippet}"),
        });
    }
    let mut document: Value =
        serde_json::from_str(&text).map_err(|err| CliError::Io(format!("cannot parse {}: {err}", file.display())))?;
    let Some(root) = document.as_object_mut() else {
        return Err(CliError::Io(format!("{} is not a JSON object", file.display())));
    };
    let mcp = root.entry("mcp").or_insert_with(|| Value::Object(Map::new()));
    let Some(mcp) = mcp.as_object_mut() else {
        return Err(CliError::Io(format!("`mcp` in {} is not an object", file.display())));
    };
    if mcp.contains_key(&args.name) {
        return Err(CliError::usage(
            format!("an MCP server named {} is already configured in {}", args.name, file.display()),
            "pick another name, or edit the file",
        ));
    }
    mcp.insert(args.name.clone(), entry);
    write_atomically(&file, &document)?;
    let mut out = std::io::stdout().lock();
    emit(&mut out, format_args!("Added MCP server {} to {}\n", args.name, file.display()))
}

fn entry(args: &McpAddArgs) -> Result<Value, CliError> {
    let pairs = |values: &[String], what: &str| -> Result<IndexMap<String, String>, CliError> {
        values
            .iter()
            .map(|pair| {
                pair.split_once('=').map(|(key, value)| (key.to_owned(), value.to_owned())).ok_or_else(|| {
                    CliError::usage(format!("--{what} {pair} is not KEY=VALUE"), "write it as KEY=VALUE")
                })
            })
            .collect()
    };
    let entry = match (&args.url, args.command.is_empty()) {
        (Some(url), true) => opencode_config::McpServerConfig::Remote {
            url: url.clone(),
            headers: pairs(&args.header, "header")?,
            enabled: None,
            timeout: args.timeout,
            oauth: None,
        },
        (None, false) => opencode_config::McpServerConfig::Local {
            command: args.command.clone(),
            environment: pairs(&args.env, "env")?,
            enabled: None,
            timeout: args.timeout,
        },
        _ => {
            return Err(CliError::usage(
                "give either --url (a remote server) or a command after `--` (a local server)",
                "for example `opencode mcp add docs --url https://example.com/mcp` or `opencode mcp add fs -- npx -y @modelcontextprotocol/server-filesystem .`",
            ));
        }
    };
    serde_json::to_value(entry).map_err(|err| CliError::Io(format!("cannot encode the entry: {err}")))
}

/// The existing `opencode.jsonc` or `opencode.json` of a directory, else a new `opencode.json`.
fn config_file(dir: &Path) -> PathBuf {
    ["opencode.jsonc", "opencode.json"]
        .into_iter()
        .map(|name| dir.join(name))
        .find(|path| path.exists())
        .unwrap_or_else(|| dir.join("opencode.json"))
}

/// Writes the document next to the file and renames it over, so the file is never half-written.
fn write_atomically(file: &Path, document: &Value) -> Result<(), CliError> {
    let fail = |err: std::io::Error| CliError::Io(format!("cannot write {}: {err}", file.display()));
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut text = serde_json::to_string_pretty(document).map_err(|err| CliError::Io(err.to_string()))?;
    text.push('\n');
    let temp = file.with_extension("json.tmp");
    std::fs::write(&temp, text).map_err(fail)?;
    std::fs::rename(&temp, file).map_err(fail)
}
