//! `opencode mcp list|add`: the configured MCP servers with their status and tool count, and adding
//! a server to the project or global config file.

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;

use indexmap::IndexMap;
use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_mcp::ServerStatus;
use serde_json::Map;
use serde_json::Value;

use super::emit;
use crate::cli::McpAddArgs;
use crate::cli::McpCommand;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, command: McpCommand) -> Result<(), CliError> {
    match command {
        McpCommand::List => list(context),
        McpCommand::Add(args) => add(context, args),
    }
}

/// Connects every server (each within its own timeout) and prints its status and tool count.
fn list(context: &Context) -> Result<(), CliError> {
    let servers = &context.loaded.config.mcp;
    let mut out = std::io::stdout().lock();
    if servers.is_empty() {
        return emit(&mut out, format_args!("No MCP servers configured. Add one with `opencode mcp add`.\n"));
    }
    let reports = super::tokio_runtime()?.block_on(async {
        let manager = McpManager::start(servers, McpOptions::new(&context.cwd));
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
            ServerStatus::NeedsAuth => {
                ("⚠", "needs auth (OAuth is not supported yet; set an Authorization header)".into())
            }
            other => ("✗", other.to_string()),
        };
        let kind = report.kind.map(|kind| format!(" [{kind}]")).unwrap_or_default();
        emit(&mut out, format_args!("{mark} {:<width$}{kind}  {detail}\n", report.name))?;
    }
    out.flush().map_err(|err| CliError::Io(format!("cannot write output: {err}")))
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
