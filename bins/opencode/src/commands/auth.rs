//! `opencode auth login|list|logout`. Keys are read from standard input (one line), so they never
//! appear in the shell history or the process list.

use std::io::{BufRead, IsTerminal, Write};

use opencode_catalog::route::key_variables;
use opencode_config::{AuthEntry, AuthInfo};

use super::emit;
use crate::cli::AuthCommand;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, command: AuthCommand) -> Result<(), CliError> {
    match command {
        AuthCommand::Login { provider } => login(context, provider),
        AuthCommand::List => list(context),
        AuthCommand::Logout { provider } => logout(context, &provider),
    }
}

fn login(context: &Context, provider: Option<String>) -> Result<(), CliError> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let provider = match provider {
        Some(provider) => provider,
        None => prompt(&mut input, "Provider id (for example anthropic): ")?,
    };
    if provider.is_empty() || provider.contains(char::is_whitespace) {
        return Err(CliError::usage(
            format!("`{provider}` is not a provider id"),
            "run `opencode models --all` to see ids",
        ));
    }
    let (catalog, _) = context.catalog()?;
    if catalog.provider(&provider).is_none() {
        eprintln!("warning: `{provider}` is not in the catalog; storing the key anyway for a custom provider");
    }
    let key = prompt(&mut input, &format!("API key for {provider}: "))?;
    if key.is_empty() {
        return Err(CliError::usage(
            "no API key given",
            "paste the key and press enter, or pipe it: `echo $KEY | opencode auth login <provider>`",
        ));
    }
    let store = context.auth();
    store.set(&provider, AuthInfo::Api { key, metadata: None })?;
    eprintln!("saved credentials for {provider} in {}", store.path().display());
    Ok(())
}

fn list(context: &Context) -> Result<(), CliError> {
    let store = context.auth();
    let entries = store.entries()?;
    let (catalog, _) = context.catalog()?;
    let mut out = std::io::stdout().lock();
    emit(&mut out, format_args!("Credentials {}\n", store.path().display()))?;
    for (id, entry) in &entries {
        let kind = match entry {
            AuthEntry::Known(info) => info.kind(),
            AuthEntry::Unknown(_) => "unknown",
        };
        let name = catalog.provider(id).map_or(id.as_str(), |provider| provider.name.as_str());
        emit(&mut out, format_args!("  {id:<24} {kind:<9} {name}\n"))?;
    }
    let from_env: Vec<(String, String)> = catalog
        .providers()
        .filter_map(|provider| {
            let vars = key_variables(provider)?;
            vars.into_iter().find(|var| context.env.get(var).is_some()).map(|var| (provider.id.clone(), var))
        })
        .collect();
    if !from_env.is_empty() {
        emit(&mut out, format_args!("Environment\n"))?;
        for (id, var) in from_env {
            emit(&mut out, format_args!("  {id:<24} ${var}\n"))?;
        }
    }
    Ok(())
}

fn logout(context: &Context, provider: &str) -> Result<(), CliError> {
    let store = context.auth();
    if !store.remove(provider)? {
        return Err(CliError::usage(
            format!("no stored credentials for `{provider}`"),
            "run `opencode auth list` to see stored providers",
        ));
    }
    eprintln!("removed credentials for {provider}");
    Ok(())
}

/// Prints `question` on stderr (when stdin is a terminal) and reads one trimmed line from stdin.
fn prompt(input: &mut impl BufRead, question: &str) -> Result<String, CliError> {
    if std::io::stdin().is_terminal() {
        eprint!("{question}");
        std::io::stderr().flush().ok();
    }
    let mut line = String::new();
    input.read_line(&mut line).map_err(|err| CliError::Io(format!("cannot read standard input: {err}")))?;
    Ok(line.trim().to_owned())
}
