//! The terminal loop: keys, server events and call results go into the [`App`]; its commands run as
//! tasks on the client; a frame is drawn only when something changed, at most one per 16 ms. Nothing
//! wakes the loop while nothing happens, so an idle TUI uses no CPU.

use std::io::Stdout;
use std::time::Duration;
use std::time::Instant;

use crossterm::event::DisableBracketedPaste;
use crossterm::event::EnableBracketedPaste;
use crossterm::event::EventStream as TerminalEvents;
use crossterm::event::KeyEventKind;
use crossterm::execute;
use crossterm::terminal::EnterAlternateScreen;
use crossterm::terminal::LeaveAlternateScreen;
use crossterm::terminal::disable_raw_mode;
use crossterm::terminal::enable_raw_mode;
use futures_util::StreamExt;
use opencode_client::Client;
use opencode_client::PromptBody;
use opencode_client::StreamItem;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use crate::app::App;
use crate::app::Command;
use crate::app::Msg;
use crate::theme::Theme;

/// One frame per 60 Hz refresh at most: streaming deltas between two frames share one draw.
const FRAME: Duration = Duration::from_millis(16);

/// What the TUI opens with.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// The session to show first (`--session`, or the latest with `--continue`).
    pub session: Option<String>,
    /// A prompt to send at once (`--prompt`).
    pub prompt: Option<String>,
    /// The agent to start with (`--agent`).
    pub agent: Option<String>,
    /// The model to prompt with (`--model provider/model`).
    pub model: Option<opencode_client::ModelRef>,
    /// Where theme files are (the user's, then the project's).
    pub themes: crate::theme::Themes,
    /// The TUI's own settings file (`tui.json`: `theme`, `keybinds`), read at start; the theme the
    /// user picks is kept there.
    pub settings: Option<std::path::PathBuf>,
    /// Whether the terminal's background is dark (themes have dark and light variants).
    pub dark: bool,
    /// Where the recently used models are kept (`tui-recent-models.json` in the state directory).
    pub recent_models: Option<std::path::PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("the terminal failed: {0}")]
    Terminal(#[from] std::io::Error),
    #[error(transparent)]
    Client(#[from] opencode_client::ClientError),
}

/// Runs the TUI on this terminal against `client`'s server until the user quits.
pub async fn run(client: Client, options: TuiOptions) -> Result<(), TuiError> {
    // Fail before taking over the terminal when the server is not there.
    client.health().await?;
    let mut terminal = enter()?;
    let result = event_loop(&mut terminal, client, options).await;
    leave(&mut terminal);
    result
}

type Term = Terminal<CrosstermBackend<Stdout>>;

/// xterm's alternate-scroll mode: on the alternate screen the wheel sends Up/Down, and the mouse is
/// not captured, so the terminal's own selection and copy keep working.
const ALTERNATE_SCROLL_ON: &str = "\x1b[?1007h";
const ALTERNATE_SCROLL_OFF: &str = "\x1b[?1007l";

fn enter() -> std::io::Result<Term> {
    enable_raw_mode()?;
    execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        crossterm::style::Print(ALTERNATE_SCROLL_ON)
    )?;
    // A panic must not leave the terminal in raw mode on the alternate screen.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _restored = disable_raw_mode();
        let _left = execute!(
            std::io::stdout(),
            crossterm::style::Print(ALTERNATE_SCROLL_OFF),
            LeaveAlternateScreen,
            DisableBracketedPaste
        );
        previous(info);
    }));
    Terminal::new(CrosstermBackend::new(std::io::stdout()))
}

fn leave(terminal: &mut Term) {
    let _restored = disable_raw_mode();
    let _left = execute!(
        terminal.backend_mut(),
        crossterm::style::Print(ALTERNATE_SCROLL_OFF),
        LeaveAlternateScreen,
        DisableBracketedPaste
    );
    let _shown = terminal.show_cursor();
}

async fn event_loop(terminal: &mut Term, client: Client, options: TuiOptions) -> Result<(), TuiError> {
    let mut app = App::new(Theme::default());
    app.theme_names = options.themes.names();
    let settings = options.settings.as_deref().map(settings).unwrap_or_default();
    let (keymap, problems) = crate::keys::Keymap::with(&settings["keybinds"]);
    app.keymap = keymap;
    let mut problems = problems;
    problems.extend(app.apply_display_settings(&settings));
    app.notice = problems.first().map(|problem| format!("tui.json: {problem}"));
    if let Some(name) = settings["theme"].as_str() {
        match options.themes.load(name, options.dark) {
            Ok(theme) => app.set_theme(theme),
            Err(reason) => app.notice = Some(reason),
        }
    }
    let (results, mut done) = mpsc::unbounded_channel::<Msg>();
    let mut keys = TerminalEvents::new();
    let mut server = client.events();
    app.preferred_agent = options.agent;
    app.recent_models = options.recent_models.as_deref().map(crate::recent::load).unwrap_or_default();
    app.model_choice = options.model;
    let mut commands = app.start(options.session);
    if let Some(prompt) = options.prompt {
        app.input.set(&prompt);
        commands.extend(app.update(Msg::Key(enter_key())));
    }
    let mut dirty = true;
    let mut last_frame = Instant::now() - FRAME;
    loop {
        let mut local = Vec::new();
        for command in commands.drain(..) {
            match command {
                Command::Copy(text) => copy(terminal, &text)?,
                Command::SaveRecentModels(models) => {
                    if let Some(file) = &options.recent_models
                        && let Err(err) = crate::recent::save(file, &models)
                    {
                        app.notice = Some(err);
                    }
                }
                Command::SetTheme(name) => {
                    app.notice = Some(match options.themes.load(&name, options.dark) {
                        Ok(theme) => {
                            app.set_theme(theme);
                            let saved = options.settings.as_deref().map(|file| save_theme(file, &name));
                            match saved {
                                Some(Err(reason)) => reason,
                                _ => format!("theme: {name}"),
                            }
                        }
                        Err(reason) => reason,
                    });
                    dirty = true;
                }
                Command::Editor(text) => {
                    // The editor reads the keyboard: our reader stops until it exits.
                    drop(keys);
                    let edited = edit(terminal, &text);
                    keys = TerminalEvents::new();
                    redraw_all(terminal)?;
                    dirty = true;
                    local.push(match edited {
                        Ok(text) => Msg::Edited(text),
                        Err(message) => Msg::Failed(message),
                    });
                }
                command => drop(tokio::spawn(execute(client.clone(), command, results.clone()))),
            }
        }
        for msg in local {
            commands.extend(app.update(msg));
        }
        if app.quit {
            return Ok(());
        }
        let next_frame = last_frame + FRAME;
        let msg = tokio::select! {
            key = keys.next() => match key {
                Some(Ok(crossterm::event::Event::Key(key))) if key.kind != KeyEventKind::Release => Some(Msg::Key(key)),
                Some(Ok(crossterm::event::Event::Paste(text))) => Some(Msg::Paste(text)),
                Some(Ok(crossterm::event::Event::Resize(..))) => {
                    dirty = true;
                    None
                }
                Some(Ok(_)) => None,
                Some(Err(err)) => return Err(err.into()),
                None => return Ok(()),
            },
            item = server.next() => match item {
                Some(StreamItem::Event { event, .. }) => Some(Msg::Server(event)),
                Some(StreamItem::Disconnected(reason)) => Some(Msg::Disconnected(reason)),
                Some(StreamItem::Reconnected) => Some(Msg::Reconnected),
                None => None,
            },
            Some(result) = done.recv() => Some(result),
            () = tokio::time::sleep_until(next_frame.into()), if dirty => {
                terminal.draw(|frame| crate::view::draw(frame, &mut app))?;
                last_frame = Instant::now();
                dirty = false;
                None
            }
        };
        if let Some(msg) = msg {
            commands = app.update(msg);
            dirty = true;
        }
    }
}

/// `tui.json` as JSON (an object; nothing when absent or unreadable).
fn settings(file: &std::path::Path) -> serde_json::Value {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::json!({}))
}

/// Keeps the chosen theme in `tui.json`, its other settings untouched.
fn save_theme(file: &std::path::Path, name: &str) -> Result<(), String> {
    let mut settings = settings(file);
    settings["theme"] = serde_json::json!(name);
    let text = serde_json::to_string_pretty(&settings).unwrap_or_default();
    let written = file.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(file, text));
    written.map_err(|err| format!("theme not saved: cannot write {}: {err}", file.display()))
}

/// Hands the terminal to `$VISUAL` (else `$EDITOR`) on a file holding `text`; what it saved.
fn edit(terminal: &mut Term, text: &str) -> Result<String, String> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
        .ok_or("set EDITOR (or VISUAL) to the editor to write prompts in")?;
    let file = std::env::temp_dir().join(format!("opencode-prompt-{}.md", std::process::id()));
    std::fs::write(&file, text).map_err(|err| format!("cannot write {}: {err}", file.display()))?;
    leave(terminal);
    // Through the shell, so EDITOR may carry arguments (`code --wait`).
    let status =
        std::process::Command::new("sh").arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(&file).status();
    let entered =
        enable_raw_mode().and_then(|()| execute!(std::io::stdout(), EnterAlternateScreen, EnableBracketedPaste));
    let edited = std::fs::read_to_string(&file);
    let _removed = std::fs::remove_file(&file);
    entered.map_err(|err| format!("cannot take the terminal back: {err}"))?;
    match status {
        Ok(status) if status.success() => edited.map_err(|err| format!("cannot read the edited prompt: {err}")),
        Ok(status) => Err(format!("{editor} exited with {status}; the prompt is unchanged")),
        Err(err) => Err(format!("cannot run {editor}: {err}")),
    }
}

/// Blanks the screen and makes the next frame draw every cell. (`Terminal::clear` would ask the
/// terminal for the cursor position, whose answer races the key reader just restarted.)
fn redraw_all(terminal: &mut Term) -> std::io::Result<()> {
    execute!(terminal.backend_mut(), crossterm::terminal::Clear(crossterm::terminal::ClearType::All))?;
    // Each swap resets the buffer it leaves behind: two swaps leave both blank, as the screen is.
    terminal.swap_buffers();
    terminal.swap_buffers();
    Ok(())
}

/// Writes the session's transcript to `opencode-<session>.md` in the current directory.
async fn export(client: &Client, id: &str) -> Result<Msg, opencode_client::ClientError> {
    let (session, messages) = tokio::try_join!(client.session(id), client.messages(id))?;
    let file = std::path::PathBuf::from(format!("opencode-{id}.md"));
    let text = crate::app::transcript_markdown(&session, &messages);
    Ok(match std::fs::write(&file, text) {
        Ok(()) => Msg::Notice(format!("transcript saved to {}", file.display())),
        Err(err) => Msg::Failed(format!("cannot write {}: {err}", file.display())),
    })
}

/// Puts `text` on the clipboard with OSC 52: the terminal (local, or the one an SSH session runs
/// in) sets it; nothing here can tell whether it did, so the notice says where the text was sent.
fn copy(terminal: &mut Term, text: &str) -> std::io::Result<()> {
    use base64::Engine;
    use std::io::Write;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let backend = terminal.backend_mut();
    write!(backend, "\x1b]52;c;{encoded}\x07")?;
    backend.flush()
}

fn enter_key() -> crossterm::event::KeyEvent {
    crossterm::event::KeyEvent::new(crossterm::event::KeyCode::Enter, crossterm::event::KeyModifiers::NONE)
}

/// Runs one command and reports its result (or its failure, as a one-line notice).
async fn execute(client: Client, command: Command, results: mpsc::UnboundedSender<Msg>) {
    let msg = match run_command(&client, command, &results).await {
        Ok(Some(msg)) => msg,
        Ok(None) => return,
        Err(err) => Msg::Failed(err.to_string()),
    };
    let _closed = results.send(msg);
}

async fn run_command(
    client: &Client,
    command: Command,
    results: &mpsc::UnboundedSender<Msg>,
) -> Result<Option<Msg>, opencode_client::ClientError> {
    Ok(Some(match command {
        // The terminal loop runs these itself: they use the terminal.
        Command::Copy(_) | Command::Editor(_) | Command::SetTheme(_) | Command::SaveRecentModels(_) => return Ok(None),
        Command::Export(id) => export(client, &id).await?,
        Command::LoadSessions => Msg::Sessions(client.sessions().await?),
        Command::LoadCommands => Msg::Commands(client.commands().await?),
        Command::LoadAgents => Msg::Agents(client.agents().await?),
        Command::LoadProviders => Msg::Providers(client.providers().await?),
        Command::LoadPermissions => Msg::Permissions(client.permissions().await?),
        Command::FindFiles(query) => {
            let files = client.find_files(&query).await?.into_iter().take(10).collect();
            Msg::Files { query, files }
        }
        Command::OpenChild(id) => {
            let children = client.children(&id).await?;
            let Some(child) = children.into_iter().max_by_key(|child| child.time.created) else {
                return Ok(Some(Msg::Notice("no subagent sessions here".to_owned())));
            };
            let messages = client.messages(&child.id).await?;
            Msg::Opened(child, messages)
        }
        Command::OpenSession(id) => {
            let (session, messages) = tokio::try_join!(client.session(&id), client.messages(&id))?;
            Msg::Opened(session, messages)
        }
        Command::Prompt { session, text, agent, model, variant, files } => {
            let id = session_for(client, session, results).await?;
            let mut body = PromptBody { agent, model, variant, ..PromptBody::text(text) };
            body.parts.extend(files.iter().map(|file| file_part(client, file)));
            client.prompt_async_with(&id, &body).await?;
            return Ok(None);
        }
        Command::RunCommand { session, name, arguments, agent, model } => {
            let id = session_for(client, session, results).await?;
            let model = model.map(|m| format!("{}/{}", m.provider_id, m.model_id));
            client.command(&id, &name, &arguments, Some(&agent), model.as_deref()).await?;
            return Ok(None);
        }
        Command::Shell { session, command, agent } => {
            let id = session_for(client, session, results).await?;
            client.shell(&id, &agent, &command).await?;
            return Ok(None);
        }
        Command::Abort(id) => {
            client.abort(&id).await?;
            return Ok(None);
        }
        Command::Reply { request, reply, message } => {
            client.reply_permission(&request, reply, message.as_deref()).await?;
            return Ok(None);
        }
        Command::Revert { session, message } => {
            Msg::Opened(client.revert(&session, &message).await?, client.messages(&session).await?)
        }
        Command::Unrevert(session) => Msg::Opened(client.unrevert(&session).await?, client.messages(&session).await?),
        Command::LoadConnectable => Msg::ProvidersToConnect(client.all_providers().await?),
        Command::SetApiKey { provider, name, key } => {
            client.set_api_key(&provider, &key).await?;
            Msg::Connected(name, client.providers().await?)
        }
        Command::Share { session, shared: true } => match client.share(&session).await? {
            Some(url) => Msg::Shared(url),
            None => Msg::Notice("the server published no link for this session".to_owned()),
        },
        Command::Share { session, shared: false } => {
            client.unshare(&session).await?;
            Msg::Notice("the shared link is withdrawn".to_owned())
        }
        Command::Compact { session, provider, model } => {
            client.compact(&session, &provider, &model).await?;
            return Ok(None);
        }
    }))
}

/// A file mentioned with `@`, relative to the client's directory, as OpenCode's clients send it.
fn file_part(client: &Client, file: &str) -> serde_json::Value {
    let path = match client.directory() {
        Some(directory) => format!("{}/{file}", directory.trim_end_matches('/')),
        None => file.to_owned(),
    };
    serde_json::json!({"type": "file", "mime": "text/plain", "filename": file, "url": format!("file://{path}")})
}

/// `session`, or a new one, announced to the app before the prompt is sent so that the turn's events
/// find it open.
async fn session_for(
    client: &Client,
    session: Option<String>,
    results: &mpsc::UnboundedSender<Msg>,
) -> Result<String, opencode_client::ClientError> {
    if let Some(id) = session {
        return Ok(id);
    }
    let created = client.create_session(None).await?;
    let id = created.id.clone();
    let _closed = results.send(Msg::Opened(created, Vec::new()));
    Ok(id)
}
