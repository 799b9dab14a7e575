//! `opencode [project]` and `opencode attach URL`: the terminal UI. Without a URL it starts the server
//! in-process on a private loopback port with a fresh random password only this process knows
//! (`ServerOptions::private`), so no other user or program can drive it.

use std::path::Path;
use std::path::PathBuf;

use opencode_client::Client;
use opencode_http_api::ServerOptions;
use opencode_tui::TuiOptions;

use super::tokio_runtime;
use crate::cli::AttachArgs;
use crate::cli::OpenArgs;
use crate::cli::TuiArgs;
use crate::context::Context;
use crate::error::CliError;

pub fn local(context: &Context, args: TuiArgs) -> Result<(), CliError> {
    let directory = directory(&context.cwd, args.project.as_deref())?;
    let runtime = tokio_runtime()?;
    runtime.block_on(async {
        let options = ServerOptions::private().map_err(|err| CliError::Io(format!("no random source: {err}")))?;
        let credentials = options.credentials.clone();
        let server = opencode_http_api::start_server(options, context.env.clone(), directory.clone()).await?;
        let mut client = client(&server.url(), &directory)?;
        if let Some(credentials) = credentials {
            client = client.with_password(&credentials.username, &credentials.password);
        }
        let result = open(context, client, args.open).await;
        let _stopped = server.shutdown().await;
        result
    })
}

pub fn attach(context: &Context, args: AttachArgs) -> Result<(), CliError> {
    let directory = directory(&context.cwd, args.dir.as_deref())?;
    let mut client = client(&args.url, &directory)?;
    let password = args.password.or_else(|| context.env.get("OPENCODE_SERVER_PASSWORD").map(str::to_owned));
    if let Some(password) = password.filter(|p| !p.is_empty()) {
        let username = context.env.get("OPENCODE_SERVER_USERNAME").unwrap_or("opencode");
        client = client.with_password(username, &password);
    }
    tokio_runtime()?.block_on(open(context, client, args.open))
}

async fn open(context: &Context, client: Client, args: OpenArgs) -> Result<(), CliError> {
    let session = match (args.session, args.continue_last) {
        (Some(id), _) => Some(id),
        (None, true) => {
            client.sessions().await.map_err(tui_error)?.into_iter().find(|s| s.parent_id.is_none()).map(|s| s.id)
        }
        (None, false) => None,
    };
    let model = match args.model.as_deref().map(|m| m.split_once('/')) {
        None => None,
        Some(Some((provider, model))) => {
            Some(opencode_client::ModelRef { provider_id: provider.to_owned(), model_id: model.to_owned() })
        }
        Some(None) => {
            return Err(CliError::usage("--model takes provider/model", "e.g. --model anthropic/claude-haiku-4-5"));
        }
    };
    // Themes and `tui.json` are this machine's, whichever server the TUI talks to.
    let config = &context.paths.config;
    let options = TuiOptions {
        session,
        prompt: args.prompt,
        agent: args.agent,
        model,
        themes: opencode_tui::Themes { dirs: opencode_tui::theme_dirs(Some(config), Some(&context.cwd)) },
        settings: Some(config.join("tui.json")),
        dark: opencode_tui::dark_background(context.env.get("COLORFGBG")),
        recent_models: Some(context.paths.state.join("tui-recent-models.json")),
    };
    opencode_tui::run(client, options).await.map_err(|err| match err {
        opencode_tui::TuiError::Client(err) => tui_error(err),
        other => CliError::Io(other.to_string()),
    })
}

fn client(url: &str, directory: &Path) -> Result<Client, CliError> {
    Ok(Client::new(url).map_err(tui_error)?.with_directory(directory.to_string_lossy()))
}

fn directory(cwd: &Path, given: Option<&Path>) -> Result<PathBuf, CliError> {
    let directory = given.map_or_else(|| cwd.to_path_buf(), |dir| cwd.join(dir));
    directory.canonicalize().map_err(|err| {
        CliError::usage(format!("cannot open {}: {err}", directory.display()), "give an existing project directory")
    })
}

fn tui_error(err: opencode_client::ClientError) -> CliError {
    CliError::Failed { message: err.to_string(), hint: err.hint().to_owned() }
}
