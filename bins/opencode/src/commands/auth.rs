//! `opencode auth login|list|logout`. Keys and pasted codes are read from standard input (one
//! line), so they never appear in the shell history or the process list.
//!
//! `auth login` offers the built-in plugins' OAuth flows (`opencode_plugin_host::auth`, for
//! example the GitHub Copilot device flow) and an API key for any provider. The flows' endpoints
//! can be pointed elsewhere with environment variables (`OPENCODE_COPILOT_URL`,
//! `OPENCODE_COPILOT_POLL_MARGIN_MS`; docs/PLUGINS.md lists them), which the tests use.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use opencode_catalog::route::key_variables;
use opencode_config::{AuthEntry, AuthInfo};
use opencode_plugin_host::auth::{AuthError, AuthMethod, AuthMethodKind, AuthProvider, builtin_plugins};
use opencode_plugin_host::{PluginHost, Requirement};

use super::emit;
use crate::cli::AuthCommand;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, command: AuthCommand) -> Result<(), CliError> {
    match command {
        AuthCommand::Login { provider, method } => login(context, provider, method),
        AuthCommand::List => list(context),
        AuthCommand::Logout { provider } => logout(context, &provider),
    }
}

fn login(context: &Context, provider: Option<String>, method: Option<usize>) -> Result<(), CliError> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let runtime = super::tokio_runtime()?;
    let flows = runtime.block_on(auth_providers(context))?;
    let provider = match provider {
        Some(provider) => provider,
        None => {
            print_methods(&flows);
            prompt(&mut input, "Provider id (for example anthropic): ")?
        }
    };
    if provider.is_empty() || provider.contains(char::is_whitespace) {
        return Err(CliError::usage(
            format!("`{provider}` is not a provider id"),
            "run `opencode models --all` to see ids",
        ));
    }
    let Some(flow) = flows.iter().find(|flow| flow.provider() == provider) else {
        if method.is_some_and(|method| method != 1) {
            return Err(CliError::usage(
                format!("`{provider}` has one login method: an API key"),
                "run `opencode auth login` to see the login methods",
            ));
        }
        return api_key(context, &mut input, &provider);
    };
    let methods = flow.methods();
    let index = choose_method(&mut input, flow.as_ref(), &methods, method)?;
    if methods[index].kind == AuthMethodKind::Api {
        return api_key(context, &mut input, &provider);
    }
    let info = runtime.block_on(oauth(&mut input, flow.as_ref(), index)).map_err(auth_failed)?;
    let store = context.auth();
    store.set(&provider, info)?;
    eprintln!("saved credentials for {provider} in {}", store.path().display());
    Ok(())
}

/// The built-in plugins' credential flows.
async fn auth_providers(context: &Context) -> Result<Vec<Arc<dyn AuthProvider>>, CliError> {
    let builder = builtin_plugins(&context.env)
        .into_iter()
        .fold(PluginHost::builder(), |builder, plugin| builder.plugin(plugin, Requirement::Optional));
    let host = builder.build();
    host.ready().await.map_err(|err| CliError::Failed { message: err.to_string(), hint: err.hint().to_owned() })?;
    Ok(host.auth_providers())
}

/// Lists every login method on stderr.
fn print_methods(flows: &[Arc<dyn AuthProvider>]) {
    eprintln!("Login methods:");
    for flow in flows {
        for (number, method) in flow.methods().iter().enumerate() {
            let label = format!("{} ({})", flow.display_name(), method.label);
            eprintln!("  {:<24} {}. {label}", flow.provider(), number + 1);
        }
    }
    eprintln!("  {:<24} API key, for any provider of `opencode models --all`", "<provider id>");
}

/// `--method` when given; the only method; the API key when stdin is piped; else asks.
fn choose_method(
    input: &mut impl BufRead,
    flow: &dyn AuthProvider,
    methods: &[AuthMethod],
    method: Option<usize>,
) -> Result<usize, CliError> {
    let bad = || {
        CliError::usage(
            format!("{} has login methods 1 to {}", flow.display_name(), methods.len()),
            "run `opencode auth login` to see the login methods",
        )
    };
    if let Some(method) = method {
        return method.checked_sub(1).filter(|index| *index < methods.len()).ok_or_else(bad);
    }
    if methods.len() == 1 {
        return Ok(0);
    }
    let piped_key = methods.iter().position(|method| method.kind == AuthMethodKind::Api);
    if let Some(index) = piped_key.filter(|_| !std::io::stdin().is_terminal()) {
        return Ok(index);
    }
    for (number, method) in methods.iter().enumerate() {
        eprintln!("  {}. {}", number + 1, method.label);
    }
    let answer = prompt(input, &format!("Login method [1-{}]: ", methods.len()))?;
    answer.parse::<usize>().ok().and_then(|method| method.checked_sub(1)).filter(|i| *i < methods.len()).ok_or_else(bad)
}

/// Runs an OAuth method: shows where to go, then waits or reads the pasted code.
async fn oauth(input: &mut impl BufRead, flow: &dyn AuthProvider, method: usize) -> Result<AuthInfo, AuthError> {
    let authorization = flow.authorize(method).await?;
    eprintln!("Go to: {}", authorization.url);
    if let Some(code) = &authorization.user_code {
        eprintln!("Enter the code: {code}");
    }
    if !authorization.instructions.is_empty() {
        eprintln!("{}", authorization.instructions);
    }
    if !authorization.needs_code() {
        eprintln!("Waiting for authorization...");
        return authorization.finish().await;
    }
    let code = prompt(input, "Paste the authorization code: ").map_err(|_| AuthError::CodeRequired)?;
    authorization.finish_with_code(&code).await
}

fn api_key(context: &Context, input: &mut impl BufRead, provider: &str) -> Result<(), CliError> {
    let (catalog, _) = context.catalog()?;
    if catalog.provider(provider).is_none() {
        eprintln!("warning: `{provider}` is not in the catalog; storing the key anyway for a custom provider");
    }
    let key = prompt(input, &format!("API key for {provider}: "))?;
    if key.is_empty() {
        return Err(CliError::usage(
            "no API key given",
            "paste the key and press enter, or pipe it: `echo $KEY | opencode auth login <provider>`",
        ));
    }
    let store = context.auth();
    store.set(provider, AuthInfo::Api { key, metadata: None })?;
    eprintln!("saved credentials for {provider} in {}", store.path().display());
    Ok(())
}

fn auth_failed(err: AuthError) -> CliError {
    CliError::Failed { message: err.to_string(), hint: err.hint().to_owned() }
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
