//! The TUI's state and how it changes: keys, server events and the results of calls go in; the
//! calls to make come out as [`Command`]s. Nothing here does I/O, so every behaviour is testable by
//! feeding messages and looking at the state or a rendered frame.

use std::collections::HashMap;

use crossterm::event::KeyCode;
use crossterm::event::KeyEvent;
use crossterm::event::KeyModifiers;
use opencode_client::Agent;
use opencode_client::CommandInfo;
use opencode_client::Event;
use opencode_client::FileDiff;
use opencode_client::Message;
use opencode_client::ModelRef;
use opencode_client::PartKind;
use opencode_client::PermissionReply;
use opencode_client::PermissionRequest;
use opencode_client::ProviderEntry;
use opencode_client::Providers;
use opencode_client::Role;
use opencode_client::Session;
use opencode_client::SessionStatus;

use crate::input::Input;
use crate::keys::Action;
use crate::keys::Keymap;
use crate::theme::Theme;
use crate::transcript;
use crate::transcript::Transcript;

/// A call to make; its result comes back as a [`Msg`].
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    LoadSessions,
    LoadCommands,
    LoadAgents,
    LoadProviders,
    LoadPermissions,
    /// Files of the directory matching the `@` word being typed.
    FindFiles(String),
    OpenSession(String),
    /// Opens the newest child session (a subagent's `task`) of the session, if it has one.
    OpenChild(String),
    /// Creates a session first when `session` is `None`.
    Prompt {
        session: Option<String>,
        text: String,
        agent: Option<String>,
        model: Option<ModelRef>,
        /// The model's variant chosen with ctrl+t.
        variant: Option<String>,
        /// Files mentioned with `@` (completed from the directory), sent as file parts.
        files: Vec<String>,
    },
    Shell {
        session: Option<String>,
        command: String,
        agent: String,
    },
    Abort(String),
    Reply {
        request: String,
        reply: PermissionReply,
        message: Option<String>,
    },
    Revert {
        session: String,
        message: String,
    },
    Unrevert(String),
    /// Keeps the recently used models (most recent first) for the next start.
    SaveRecentModels(Vec<ModelRef>),
    /// Fetches the providers `/connect` offers.
    LoadConnectable,
    /// Stores an API key for a provider on the server.
    SetApiKey {
        provider: String,
        name: String,
        key: String,
    },
    /// Publishes (`true`) or withdraws the session's read-only transcript.
    Share {
        session: String,
        shared: bool,
    },
    Compact {
        session: String,
        provider: String,
        model: String,
    },
    /// A configured command (`/name arguments`), expanded and run by the server.
    RunCommand {
        session: Option<String>,
        name: String,
        arguments: String,
        agent: String,
        model: Option<ModelRef>,
    },
    /// Switches to theme `name` and keeps the choice in `tui.json`.
    SetTheme(String),
    /// Edits the prompt in `$VISUAL` / `$EDITOR` (the terminal is handed over until it exits).
    Editor(String),
    /// Writes the session's transcript as markdown to a file in the current directory.
    Export(String),
    /// Puts text on the clipboard through the terminal (OSC 52: works over SSH and without xclip).
    Copy(String),
}

/// Everything that can change the state.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Paste(String),
    Server(Event),
    Disconnected(String),
    Reconnected,
    Sessions(Vec<Session>),
    Agents(Vec<Agent>),
    Commands(Vec<CommandInfo>),
    Providers(Providers),
    Permissions(Vec<PermissionRequest>),
    /// Files matching `query` (an `@` completion).
    Files {
        query: String,
        files: Vec<String>,
    },
    /// The prompt as the external editor left it.
    Edited(String),
    /// A session and its messages (opened, or just created for a prompt).
    Opened(Session, Vec<Message>),
    Failed(String),
    /// Something done that the status line reports (a file written).
    Notice(String),
    /// The session's transcript is published at this link.
    Shared(String),
    /// Every provider the server knows (for `/connect`).
    ProvidersToConnect(Vec<ProviderEntry>),
    /// A provider's key is stored (its name), with the providers as they are now.
    Connected(String, Providers),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    Connected,
    Reconnecting(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    None,
    /// `/connect`: the providers, filtered by what is typed.
    Connect {
        query: String,
        selected: usize,
    },
    /// `/connect`: the API key being typed for a provider (shown masked).
    ApiKey {
        provider: String,
        name: String,
        key: String,
    },
    Sessions {
        selected: usize,
    },
    /// Every model of the providers that can answer, as `provider/model`.
    Models {
        selected: usize,
    },
    /// Every command, filtered by what is typed (ctrl+p).
    Palette {
        query: String,
        selected: usize,
    },
    /// The themes found (`system` and the theme files).
    Themes {
        selected: usize,
    },
    /// The primary agents (Tab cycles the same list).
    Agents {
        selected: usize,
    },
    Help,
}

/// The `@` completion popup: what was typed after `@`, and the matching files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub query: String,
    pub files: Vec<String>,
    pub selected: usize,
}

/// The commands the TUI runs itself, with what they do (the `/` menu lists them first).
pub const BUILT_IN_COMMANDS: &[(&str, &str)] = &[
    ("new", "start a new session"),
    ("sessions", "switch session"),
    ("models", "choose the model"),
    ("agents", "choose the agent"),
    ("compact", "compact the history"),
    ("undo", "undo the last prompt"),
    ("redo", "restore what undo removed"),
    ("copy", "copy the last answer"),
    ("editor", "write the prompt in $EDITOR"),
    ("export", "save the transcript as markdown"),
    ("share", "publish a read-only link and copy it"),
    ("connect", "add a provider's API key"),
    ("unshare", "withdraw the shared link"),
    ("sidebar", "show or hide the sidebar"),
    ("thinking", "show or hide reasoning"),
    ("themes", "choose the colours"),
    ("help", "keys and commands"),
    ("exit", "quit"),
];

/// Rows one wheel step (or Up/Down on a one-line prompt) scrolls.
pub const WHEEL_ROWS: usize = 3;

/// Terminal width from which the sidebar shows unless the user hid it.
pub const SIDEBAR_MIN_WIDTH: u16 = 120;

pub struct App {
    pub theme: Theme,
    pub connection: Connection,
    pub session: Option<Session>,
    pub messages: Vec<Message>,
    pub(crate) revisions: HashMap<String, u64>,
    next_revision: u64,
    pub transcript: Transcript,
    pub busy: bool,
    pub sessions: Vec<Session>,
    /// Primary agents (Tab cycles them).
    pub agents: Vec<Agent>,
    pub agent: usize,
    /// The agent to select once the agents are known (`--agent`).
    pub preferred_agent: Option<String>,
    pub providers: Providers,
    /// The configured commands (`/name` runs them).
    pub commands: Vec<CommandInfo>,
    /// The highlighted entry of the `/` menu.
    pub slash_selected: usize,
    /// The model chosen in the picker (or with `--model`) for the next prompts.
    pub model_choice: Option<ModelRef>,
    /// The model's variant for the next prompts (ctrl+t cycles them; `None` is the default).
    pub variant: Option<String>,
    pub completion: Option<Completion>,
    /// Paths accepted from the `@` popup since the last prompt.
    mentions: Vec<String>,
    /// The prompt text an undo put back into the input (a redo takes it out again).
    undone: Option<String>,
    pub permissions: Vec<PermissionRequest>,
    /// 0 allow once, 1 allow always, 2 reject.
    pub permission_choice: usize,
    pub input: Input,
    /// Rows scrolled up from the bottom of the transcript.
    pub scroll: usize,
    /// Rows one wheel step scrolls (`tui.json` `scroll_speed`).
    pub wheel_rows: usize,
    /// Recently used models, most recent first (F2 steps through them).
    pub recent_models: Vec<ModelRef>,
    /// Every provider the server knows, as `/connect` last fetched them.
    pub providers_to_connect: Vec<ProviderEntry>,
    pub overlay: Overlay,
    pub options: transcript::Options,
    /// A one-line notice in the status line (an error or a hint), until the next key.
    pub notice: Option<String>,
    /// Prompts typed while disconnected, sent once the server is back.
    pub queued: Vec<Command>,
    /// The sidebar shown or hidden by the user; `None` leaves it to the width (shown from
    /// [`SIDEBAR_MIN_WIDTH`] columns).
    pub sidebar: Option<bool>,
    /// The terminal's width at the last frame (the sidebar's default depends on it).
    pub last_width: u16,
    /// The files the session changed (its user messages' diffs, then `session.diff`).
    pub diff: Vec<FileDiff>,
    /// The session's todo list (`todo.updated`).
    pub todos: Vec<serde_json::Value>,
    /// The themes the user can choose (ctrl+x t).
    pub theme_names: Vec<String>,
    /// What each key does (OpenCode's defaults, `tui.json` `keybinds` over them).
    pub keymap: Keymap,
    leader: bool,
    pub quit: bool,
}

impl App {
    /// `tui.json`'s `diff_style` (`auto`: side by side when wide; `stacked`: always unified) and
    /// `scroll_speed` (rows per wheel step); a value that does not fit is named and the default kept.
    pub fn apply_display_settings(&mut self, settings: &serde_json::Value) -> Vec<String> {
        let mut problems = Vec::new();
        match &settings["diff_style"] {
            serde_json::Value::Null => {}
            serde_json::Value::String(style) if style == "auto" => {}
            serde_json::Value::String(style) if style == "stacked" => self.options.stacked_diffs = true,
            other => problems.push(format!("diff_style {other} is not \"auto\" or \"stacked\" (auto kept)")),
        }
        match &settings["scroll_speed"] {
            serde_json::Value::Null => {}
            value => match value.as_f64().filter(|speed| *speed > 0.0 && *speed <= 100.0) {
                // Fractions round up: a slow wheel still moves.
                Some(speed) => self.wheel_rows = (speed.ceil() as usize).max(1),
                None => problems.push(format!("scroll_speed {value} is not a number from 0 to 100 (3 kept)")),
            },
        }
        problems
    }

    pub fn new(theme: Theme) -> Self {
        Self {
            theme,
            connection: Connection::Connected,
            session: None,
            messages: Vec::new(),
            revisions: HashMap::new(),
            next_revision: 1,
            transcript: Transcript::default(),
            busy: false,
            sessions: Vec::new(),
            agents: Vec::new(),
            agent: 0,
            preferred_agent: None,
            providers: Providers::default(),
            commands: Vec::new(),
            slash_selected: 0,
            model_choice: None,
            variant: None,
            completion: None,
            mentions: Vec::new(),
            undone: None,
            permissions: Vec::new(),
            permission_choice: 0,
            input: Input::default(),
            scroll: 0,
            wheel_rows: WHEEL_ROWS,
            providers_to_connect: Vec::new(),
            recent_models: Vec::new(),
            overlay: Overlay::None,
            options: transcript::Options::default(),
            notice: None,
            queued: Vec::new(),
            sidebar: None,
            last_width: 0,
            diff: Vec::new(),
            todos: Vec::new(),
            theme_names: vec!["system".to_owned()],
            keymap: Keymap::default(),
            leader: false,
            quit: false,
        }
    }

    /// The calls to make at start: what the screens need, and the session to show.
    pub fn start(&mut self, session: Option<String>) -> Vec<Command> {
        let mut commands = vec![
            Command::LoadAgents,
            Command::LoadProviders,
            Command::LoadCommands,
            Command::LoadSessions,
            Command::LoadPermissions,
        ];
        commands.extend(session.map(Command::OpenSession));
        commands
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Command> {
        match msg {
            Msg::Key(key) => self.key(key),
            Msg::Paste(text) => {
                self.input.insert_str(&text);
                Vec::new()
            }
            Msg::Server(event) => self.event(event),
            Msg::Disconnected(reason) => {
                self.connection = Connection::Reconnecting(reason);
                Vec::new()
            }
            Msg::Reconnected => {
                self.connection = Connection::Connected;
                let mut commands = vec![Command::LoadSessions, Command::LoadPermissions];
                commands.extend(self.session.as_ref().map(|s| Command::OpenSession(s.id.clone())));
                commands.append(&mut self.queued);
                commands
            }
            Msg::Sessions(sessions) => {
                self.sessions = sessions.into_iter().filter(|s| s.parent_id.is_none()).collect();
                Vec::new()
            }
            Msg::Agents(agents) => {
                self.agents = agents.into_iter().filter(|a| a.mode != "subagent" && !a.hidden).collect();
                let wanted = self.preferred_agent.as_deref().unwrap_or("build");
                self.agent = self.agents.iter().position(|a| a.name == wanted).unwrap_or(0);
                Vec::new()
            }
            Msg::Providers(providers) => {
                self.providers = providers;
                Vec::new()
            }
            Msg::Commands(commands) => {
                self.commands = commands;
                Vec::new()
            }
            Msg::Permissions(permissions) => {
                self.permissions = permissions;
                Vec::new()
            }
            Msg::Files { query, files } => {
                // Only the answer to what is typed now; an older search's answer is stale.
                if self.at_word().is_some_and(|word| word == query) {
                    self.completion = (!files.is_empty()).then_some(Completion { query, files, selected: 0 });
                }
                Vec::new()
            }
            Msg::Edited(text) => {
                self.input.set(text.trim_end_matches('\n'));
                Vec::new()
            }
            Msg::Opened(session, messages) => {
                self.open(session, messages);
                Vec::new()
            }
            Msg::Failed(message) | Msg::Notice(message) => {
                self.notice = Some(message);
                Vec::new()
            }
            Msg::ProvidersToConnect(providers) => {
                self.providers_to_connect = providers;
                self.overlay = Overlay::Connect { query: String::new(), selected: 0 };
                Vec::new()
            }
            Msg::Connected(name, providers) => {
                self.providers = providers;
                self.notice = Some(format!("{name} connected: its models are in the model list"));
                Vec::new()
            }
            Msg::Shared(url) => {
                self.notice = Some(format!("shared at {url} (link copied)"));
                vec![Command::Copy(url)]
            }
        }
    }

    fn open(&mut self, session: Session, messages: Vec<Message>) {
        let same = self.session.as_ref().is_some_and(|s| s.id == session.id);
        if !same {
            self.scroll = 0;
            self.busy = false;
            self.todos.clear();
        }
        self.session = Some(session);
        self.messages = messages;
        self.diff = turn_diffs(&self.messages);
        for message in &self.messages {
            let revision = self.next_revision;
            self.next_revision += 1;
            self.revisions.insert(message.info.id.clone(), revision);
        }
        let ids: std::collections::HashSet<String> = self.messages.iter().map(|m| m.info.id.clone()).collect();
        self.transcript.retain(|id| ids.contains(id));
        self.revisions.retain(|id, _| ids.contains(id));
    }

    fn event(&mut self, event: Event) -> Vec<Command> {
        match &event {
            Event::PermissionAsked(request) => {
                if !self.permissions.iter().any(|p| p.id == request.id) {
                    self.permissions.push(request.clone());
                }
                return Vec::new();
            }
            Event::PermissionReplied { request_id, .. } => {
                self.permissions.retain(|p| &p.id != request_id);
                return Vec::new();
            }
            Event::SessionCreated(session) | Event::SessionUpdated(session) if session.parent_id.is_none() => {
                match self.sessions.iter_mut().find(|s| s.id == session.id) {
                    Some(known) => *known = session.clone(),
                    None => self.sessions.insert(0, session.clone()),
                }
            }
            Event::SessionDeleted(session) => self.sessions.retain(|s| s.id != session.id),
            _ => {}
        }
        let Some(current) = self.session.as_ref().map(|s| s.id.clone()) else { return Vec::new() };
        if event.session_id() != Some(current.as_str()) {
            return Vec::new();
        }
        match &event {
            Event::SessionUpdated(session) => self.session = Some(session.clone()),
            Event::SessionDiff { diff, .. } => self.diff = diff.clone(),
            Event::TodoUpdated { todos, .. } => self.todos = todos.clone(),
            Event::SessionStatus { status, .. } => self.busy = *status != SessionStatus::Idle,
            Event::SessionIdle { .. } => self.busy = false,
            Event::SessionError { error, .. } => {
                let message = error.pointer("/data/message").and_then(|m| m.as_str()).unwrap_or("the turn failed");
                self.notice = Some(message.to_owned());
            }
            _ => {}
        }
        let touched = touched_message(&event);
        if opencode_client::apply(&mut self.messages, &event)
            && let Some(id) = touched
        {
            self.bump(&id);
        }
        // A finished turn: refetch, so the view is exactly what the server stored.
        if event.is_idle(&current) { vec![Command::OpenSession(current)] } else { Vec::new() }
    }

    fn bump(&mut self, message_id: &str) {
        self.revisions.insert(message_id.to_owned(), self.next_revision);
        self.next_revision += 1;
    }

    /// The messages shown: those before a staged revert.
    pub fn visible(&self) -> &[Message] {
        let Some(revert) = self.session.as_ref().and_then(|s| s.revert.as_ref()) else { return &self.messages };
        let end = self.messages.iter().position(|m| m.info.id >= revert.message_id).unwrap_or(self.messages.len());
        &self.messages[..end]
    }

    /// How many user messages a staged revert hides.
    pub fn reverted(&self) -> usize {
        self.messages[self.visible().len()..].iter().filter(|m| m.info.role == Role::User).count()
    }

    /// The permission request the dialog shows: the oldest pending one.
    pub fn permission(&self) -> Option<&PermissionRequest> {
        self.permissions.first()
    }

    pub fn agent_name(&self) -> &str {
        self.agents.get(self.agent).map_or("build", |a| a.name.as_str())
    }

    /// `(provider, model)` of the session: the one chosen, else its last answer's, else the default.
    pub fn model(&self) -> Option<(String, String)> {
        if let Some(chosen) = &self.model_choice {
            return Some((chosen.provider_id.clone(), chosen.model_id.clone()));
        }
        let answered =
            self.messages.iter().rev().find_map(|m| Some((m.info.provider_id.clone()?, m.info.model_id.clone()?)));
        answered.or_else(|| {
            let provider = self.providers.providers.first()?;
            let model = self.providers.default.get(&provider.id)?.as_str()?;
            Some((provider.id.clone(), model.to_owned()))
        })
    }

    /// Context tokens of the last answer and the model's context limit.
    pub fn context(&self) -> (u64, Option<u64>, f64) {
        // Summed from +0.0: an empty sum of floats is -0.0, shown as "$-0.00".
        let cost = self.messages.iter().filter_map(|m| m.info.cost).fold(0.0, |sum, cost| sum + cost);
        let used = self
            .messages
            .iter()
            .rev()
            .find_map(|m| m.info.tokens.as_ref().filter(|t| t.input + t.output > 0))
            .map_or(0, |t| t.input + t.output + t.reasoning + t.cache.read + t.cache.write);
        let limit = self.model().and_then(|(provider, model)| {
            let provider = self.providers.providers.iter().find(|p| p.id == provider)?;
            provider.models.get(&model)?.pointer("/limit/context")?.as_u64()
        });
        (used, limit, cost)
    }

    fn key(&mut self, key: KeyEvent) -> Vec<Command> {
        self.notice = None;
        let after_leader = std::mem::take(&mut self.leader);
        if !after_leader && self.keymap.is_leader(key) {
            self.leader = true;
            return Vec::new();
        }
        let action = self.keymap.action(key, after_leader);
        if let Some(action) = action.filter(|action| after_leader || action.global()) {
            return self.act(action);
        }
        if after_leader {
            return Vec::new();
        }
        match &self.overlay {
            Overlay::Sessions { selected } => return self.sessions_key(key, *selected),
            Overlay::Models { selected } => return self.models_key(key, *selected),
            Overlay::Agents { selected } => return self.agents_key(key, *selected),
            Overlay::Themes { selected } => return self.themes_key(key, *selected),
            Overlay::Palette { query, selected } => {
                let (query, selected) = (query.clone(), *selected);
                return self.palette_key(key, query, selected);
            }
            Overlay::Connect { query, selected } => {
                let (query, selected) = (query.clone(), *selected);
                return self.connect_key(key, query, selected);
            }
            Overlay::ApiKey { provider, name, key: typed } => {
                let (provider, name, typed) = (provider.clone(), name.clone(), typed.clone());
                return self.api_key_key(key, provider, name, typed);
            }
            Overlay::Help => {
                self.overlay = Overlay::None;
                return Vec::new();
            }
            Overlay::None => {}
        }
        if self.permission().is_some() {
            return self.permission_key(key);
        }
        if self.completion.is_some() && self.completion_key(key) {
            return Vec::new();
        }
        if let Some(commands) = self.slash_menu_key(key) {
            return commands;
        }
        if let Some(action) = action {
            return self.act(action);
        }
        match key.code {
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::ALT) => self.input.insert('\n'),
            KeyCode::Enter => return self.submit(),
            // The mouse wheel arrives as Up/Down (the terminal's alternate-scroll mode), so native
            // selection keeps working; a one-line prompt has no use for them.
            KeyCode::Up if !self.input.text().contains('\n') => self.scroll += self.wheel_rows,
            KeyCode::Down if !self.input.text().contains('\n') => {
                self.scroll = self.scroll.saturating_sub(self.wheel_rows)
            }
            _ => {
                self.input.key(key);
                self.slash_selected = 0;
                return self.complete();
            }
        }
        Vec::new()
    }

    /// The word after an `@` that ends the input, if the cursor is there.
    fn at_word(&self) -> Option<String> {
        let text = self.input.text();
        let word = text.rsplit([' ', '\n']).next()?;
        let query = word.strip_prefix('@')?;
        (self.input.at_end()).then(|| query.to_owned())
    }

    /// Asks for files when an `@` word is being typed; closes the popup otherwise.
    fn complete(&mut self) -> Vec<Command> {
        match self.at_word() {
            Some(query) => vec![Command::FindFiles(query)],
            None => {
                self.completion = None;
                Vec::new()
            }
        }
    }

    /// Keys the `@` popup takes: moving, accepting, closing. Others go on to the prompt.
    fn completion_key(&mut self, key: KeyEvent) -> bool {
        let Some(completion) = &mut self.completion else { return false };
        let last = completion.files.len().saturating_sub(1);
        match key.code {
            KeyCode::Up => completion.selected = completion.selected.saturating_sub(1),
            KeyCode::Down => completion.selected = (completion.selected + 1).min(last),
            KeyCode::Tab | KeyCode::Enter => {
                let file = completion.files[completion.selected].clone();
                let typed = completion.query.chars().count() + 1;
                for _ in 0..typed {
                    self.input.key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
                }
                self.input.insert_str(&format!("@{file} "));
                self.mentions.push(file);
                self.completion = None;
            }
            KeyCode::Esc => self.completion = None,
            _ => return false,
        }
        true
    }

    /// The current model's variants, as `/config/providers` lists them.
    pub fn variants(&self) -> Vec<String> {
        let Some((provider, model)) = self.model() else { return Vec::new() };
        let provider = self.providers.providers.iter().find(|p| p.id == provider);
        let variants = provider.and_then(|p| p.models.get(&model)).and_then(|m| m.get("variants"));
        variants.and_then(|v| v.as_object()).map(|v| v.keys().cloned().collect()).unwrap_or_default()
    }

    /// The next variant of the model, after the last back to its default.
    fn cycle_variant(&mut self) {
        let variants = self.variants();
        if variants.is_empty() {
            self.notice = Some("this model has no variants".to_owned());
            return;
        }
        let next = match &self.variant {
            None => variants.first().cloned(),
            Some(current) => variants.iter().skip_while(|v| *v != current).nth(1).cloned(),
        };
        self.notice = Some(format!("variant: {}", next.as_deref().unwrap_or("default")));
        self.variant = next;
    }

    /// Every model of every provider, as `(provider, model)`, in the providers' order.
    pub fn models(&self) -> Vec<(String, String)> {
        let all = self.providers.providers.iter().flat_map(|p| p.models.keys().map(|m| (p.id.clone(), m.clone())));
        // Recently used models first (those the server still offers), then the rest in its order.
        let mut all: Vec<(String, String)> = all.collect();
        let recent = |entry: &(String, String)| {
            self.recent_models.iter().position(|m| m.provider_id == entry.0 && m.model_id == entry.1)
        };
        all.sort_by_key(|entry| recent(entry).unwrap_or(usize::MAX));
        all
    }

    fn models_key(&mut self, key: KeyEvent, selected: usize) -> Vec<Command> {
        let models = self.models();
        match pick(key, selected, models.len()) {
            Pick::Moved(selected) => self.overlay = Overlay::Models { selected },
            Pick::Chosen(at) => {
                self.overlay = Overlay::None;
                let (provider, model) = &models[at];
                let chosen = ModelRef { provider_id: provider.clone(), model_id: model.clone() };
                self.model_choice = Some(chosen.clone());
                // Variants belong to a model.
                self.variant = None;
                return self.remember_model(chosen);
            }
            Pick::Closed => self.overlay = Overlay::None,
            Pick::Other => {}
        }
        Vec::new()
    }

    /// What a bound key does.
    fn act(&mut self, action: Action) -> Vec<Command> {
        match action {
            // With a prompt typed, ctrl+c clears it first (as OpenCode does); empty, it quits.
            Action::AppExit if !self.input.is_empty() => drop(self.input.take()),
            Action::AppExit => self.quit = true,
            Action::AppHelp => self.overlay = Overlay::Help,
            Action::CommandList => self.overlay = Overlay::Palette { query: String::new(), selected: 0 },
            Action::SessionNew => self.new_session(),
            Action::SessionList => self.overlay = Overlay::Sessions { selected: 0 },
            Action::SessionCompact => return self.compact(),
            Action::SessionExport => return self.export(),
            Action::SessionInterrupt => match &self.session {
                Some(session) if self.busy => return vec![Command::Abort(session.id.clone())],
                _ => {}
            },
            Action::SessionChildCycle => {
                if let Some(session) = &self.session {
                    return vec![Command::OpenChild(session.id.clone())];
                }
            }
            Action::SessionParent => match self.session.as_ref().and_then(|s| s.parent_id.clone()) {
                Some(parent) => return vec![Command::OpenSession(parent)],
                None => self.notice = Some("this is not a subagent's session".to_owned()),
            },
            Action::ModelList => self.overlay = Overlay::Models { selected: 0 },
            Action::VariantCycle => self.cycle_variant(),
            Action::ModelCycleRecent => return self.cycle_recent_model(true),
            Action::ModelCycleRecentReverse => return self.cycle_recent_model(false),
            Action::AgentList => self.overlay = Overlay::Agents { selected: self.agent },
            Action::AgentCycle | Action::AgentCycleReverse if !self.agents.is_empty() => {
                let n = self.agents.len();
                let step = if action == Action::AgentCycle { 1 } else { n - 1 };
                self.agent = (self.agent + step) % n;
            }
            Action::AgentCycle | Action::AgentCycleReverse => {}
            Action::ThemeList => self.overlay = Overlay::Themes { selected: 0 },
            Action::SidebarToggle => self.toggle_sidebar(),
            Action::EditorOpen => return vec![Command::Editor(self.input.text().to_owned())],
            Action::MessagesCopy => return self.copy_answer(),
            Action::MessagesUndo => return self.undo(),
            Action::MessagesRedo => return self.redo(),
            Action::MessagesPageUp => self.scroll += 10,
            Action::MessagesPageDown => self.scroll = self.scroll.saturating_sub(10),
        }
        Vec::new()
    }

    /// The palette's entries for `query`: every built-in and configured command whose name or
    /// description contains it (any case), as `(name, description)`.
    pub fn palette(&self, query: &str) -> Vec<(String, String)> {
        let query = query.to_lowercase();
        self.all_commands()
            .filter(|(name, description)| {
                name.to_lowercase().contains(&query) || description.to_lowercase().contains(&query)
            })
            .map(|(name, description)| (name.to_owned(), description.to_owned()))
            .collect()
    }

    fn palette_key(&mut self, key: KeyEvent, mut query: String, selected: usize) -> Vec<Command> {
        let entries = self.palette(&query);
        match search(key, &mut query, selected, entries.len()) {
            Pick::Chosen(at) => {
                self.overlay = Overlay::None;
                match entries.get(at) {
                    Some((name, _)) => self.slash(&name.clone()),
                    None => Vec::new(),
                }
            }
            Pick::Closed => {
                self.overlay = Overlay::None;
                Vec::new()
            }
            Pick::Moved(selected) => {
                self.overlay = Overlay::Palette { query, selected };
                Vec::new()
            }
            Pick::Other => Vec::new(),
        }
    }

    fn themes_key(&mut self, key: KeyEvent, selected: usize) -> Vec<Command> {
        match pick(key, selected, self.theme_names.len()) {
            Pick::Moved(selected) => self.overlay = Overlay::Themes { selected },
            Pick::Chosen(at) => {
                self.overlay = Overlay::None;
                return vec![Command::SetTheme(self.theme_names[at].clone())];
            }
            Pick::Closed => self.overlay = Overlay::None,
            Pick::Other => {}
        }
        Vec::new()
    }

    /// Uses `theme` from the next frame on (every cached line is rendered again in its colours).
    pub fn set_theme(&mut self, theme: Theme) {
        self.theme = theme;
        self.transcript = Transcript::default();
    }

    fn agents_key(&mut self, key: KeyEvent, selected: usize) -> Vec<Command> {
        match pick(key, selected, self.agents.len()) {
            Pick::Moved(selected) => self.overlay = Overlay::Agents { selected },
            Pick::Chosen(at) => {
                self.overlay = Overlay::None;
                self.agent = at;
            }
            Pick::Closed => self.overlay = Overlay::None,
            Pick::Other => {}
        }
        Vec::new()
    }

    /// Whether the sidebar shows at `width` columns.
    pub fn sidebar_shown(&self, width: u16) -> bool {
        self.sidebar.unwrap_or(width >= SIDEBAR_MIN_WIDTH)
    }

    /// Hides the sidebar if it shows at the last frame's width, shows it otherwise.
    fn toggle_sidebar(&mut self) {
        self.sidebar = Some(!self.sidebar_shown(self.last_width));
    }

    fn export(&mut self) -> Vec<Command> {
        match &self.session {
            Some(session) => vec![Command::Export(session.id.clone())],
            None => {
                self.notice = Some("nothing to export yet".to_owned());
                Vec::new()
            }
        }
    }

    /// The last answer's text to the clipboard.
    fn copy_answer(&mut self) -> Vec<Command> {
        let answer = self.visible().iter().rev().find(|m| m.info.role == Role::Assistant).map(|m| {
            m.parts
                .iter()
                .filter_map(|p| match &p.kind {
                    PartKind::Text { text, synthetic } if synthetic != &Some(true) => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n\n")
        });
        match answer.filter(|text| !text.trim().is_empty()) {
            Some(text) => {
                self.notice = Some("answer sent to the terminal's clipboard (OSC 52)".to_owned());
                vec![Command::Copy(text)]
            }
            None => {
                self.notice = Some("no answer to copy yet".to_owned());
                Vec::new()
            }
        }
    }

    fn sessions_key(&mut self, key: KeyEvent, selected: usize) -> Vec<Command> {
        match pick(key, selected, self.sessions.len()) {
            Pick::Moved(selected) => self.overlay = Overlay::Sessions { selected },
            Pick::Chosen(at) => {
                self.overlay = Overlay::None;
                return vec![Command::OpenSession(self.sessions[at].id.clone())];
            }
            Pick::Closed => self.overlay = Overlay::None,
            Pick::Other => {}
        }
        Vec::new()
    }

    fn permission_key(&mut self, key: KeyEvent) -> Vec<Command> {
        let Some(request) = self.permission().map(|p| p.id.clone()) else { return Vec::new() };
        let choice = match key.code {
            KeyCode::Left => {
                self.permission_choice = self.permission_choice.saturating_sub(1);
                return Vec::new();
            }
            KeyCode::Right => {
                self.permission_choice = (self.permission_choice + 1).min(2);
                return Vec::new();
            }
            KeyCode::Enter => self.permission_choice,
            KeyCode::Char('1') if self.input.is_empty() => 0,
            KeyCode::Char('2') if self.input.is_empty() => 1,
            KeyCode::Char('3') if self.input.is_empty() => 2,
            KeyCode::Esc => 2,
            _ => {
                // Typing goes to the rejection message.
                self.input.key(key);
                return Vec::new();
            }
        };
        let reply = [PermissionReply::Once, PermissionReply::Always, PermissionReply::Reject][choice];
        let message = (reply == PermissionReply::Reject && !self.input.is_empty()).then(|| self.input.take());
        self.permissions.retain(|p| p.id != request);
        self.permission_choice = 0;
        vec![Command::Reply { request, reply, message }]
    }

    fn submit(&mut self) -> Vec<Command> {
        let text = self.input.take();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Vec::new();
        }
        self.scroll = 0;
        if let Some(command) = trimmed.strip_prefix('/') {
            return self.slash(command.trim());
        }
        let session = self.session.as_ref().map(|s| s.id.clone());
        let command = match trimmed.strip_prefix('!') {
            Some(shell) => {
                Command::Shell { session, command: shell.trim().to_owned(), agent: self.agent_name().to_owned() }
            }
            None => Command::Prompt {
                session,
                text: text.trim_end().to_owned(),
                agent: Some(self.agent_name().to_owned()),
                model: self.model_choice.clone(),
                variant: self.variant.clone(),
                files: std::mem::take(&mut self.mentions)
                    .into_iter()
                    .filter(|file| text.contains(&format!("@{file}")))
                    .collect(),
            },
        };
        if self.connection != Connection::Connected {
            self.notice = Some("not connected: sending once the server is back".to_owned());
            self.queued.push(command);
            return Vec::new();
        }
        vec![command]
    }

    fn slash(&mut self, command: &str) -> Vec<Command> {
        let (name, arguments) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
        match name {
            "new" | "clear" => self.new_session(),
            "sessions" | "resume" | "continue" => self.overlay = Overlay::Sessions { selected: 0 },
            "models" => self.overlay = Overlay::Models { selected: 0 },
            "agents" => self.overlay = Overlay::Agents { selected: self.agent },
            "sidebar" => self.toggle_sidebar(),
            "themes" => self.overlay = Overlay::Themes { selected: 0 },
            "copy" => return self.copy_answer(),
            "editor" => return vec![Command::Editor(arguments.to_owned())],
            "export" => return self.export(),
            "undo" => return self.undo(),
            "redo" => return self.redo(),
            "compact" | "summarize" => return self.compact(),
            "share" | "unshare" => return self.share(name == "share"),
            "connect" => return vec![Command::LoadConnectable],
            "thinking" => self.options.thinking = !self.options.thinking,
            "help" => self.overlay = Overlay::Help,
            "exit" | "quit" | "q" => self.quit = true,
            _ => {
                if self.commands.iter().any(|c| c.name == name) {
                    return vec![Command::RunCommand {
                        session: self.session.as_ref().map(|s| s.id.clone()),
                        name: name.to_owned(),
                        arguments: arguments.trim().to_owned(),
                        agent: self.agent_name().to_owned(),
                        model: self.model_choice.clone(),
                    }];
                }
                self.notice = Some(format!("unknown command /{name} (/help lists them)"));
            }
        }
        Vec::new()
    }

    /// The built-in commands, then the configured ones, as `(name, description)`.
    fn all_commands(&self) -> impl Iterator<Item = (&str, &str)> {
        let configured = self.commands.iter().map(|c| (c.name.as_str(), c.description.as_deref().unwrap_or("")));
        BUILT_IN_COMMANDS.iter().copied().chain(configured)
    }

    /// The `/` menu while a command name is typed at the start of the prompt: the built-in and the
    /// configured commands whose name starts with what is typed, as `(name, description)`.
    pub fn slash_menu(&self) -> Vec<(String, String)> {
        let text = self.input.text();
        let Some(typed) = text.strip_prefix('/') else { return Vec::new() };
        if typed.contains(char::is_whitespace) || !self.input.at_end() {
            return Vec::new();
        }
        self.all_commands()
            .filter(|(name, _)| name.starts_with(typed))
            .map(|(name, description)| (name.to_owned(), description.to_owned()))
            .collect()
    }

    /// Keys the `/` menu takes: moving, completing (tab), running (enter), closing (esc).
    fn slash_menu_key(&mut self, key: KeyEvent) -> Option<Vec<Command>> {
        let menu = self.slash_menu();
        if menu.is_empty() {
            return None;
        }
        let selected = self.slash_selected.min(menu.len() - 1);
        match key.code {
            KeyCode::Up => self.slash_selected = selected.saturating_sub(1),
            KeyCode::Down => self.slash_selected = (selected + 1).min(menu.len() - 1),
            KeyCode::Tab => self.input.set(&format!("/{} ", menu[selected].0)),
            KeyCode::Enter => {
                self.input.set(&format!("/{}", menu[selected].0));
                return Some(self.submit());
            }
            KeyCode::Esc => self.input.set(""),
            _ => return None,
        }
        Some(Vec::new())
    }

    fn new_session(&mut self) {
        self.session = None;
        self.messages.clear();
        self.scroll = 0;
        self.busy = false;
    }

    /// Stages the removal of the last shown user message and what followed, and puts its text back
    /// into the input (as OpenCode does).
    fn undo(&mut self) -> Vec<Command> {
        let Some(session) = self.session.as_ref().map(|s| s.id.clone()) else { return Vec::new() };
        let Some(last) = self.visible().iter().rev().find(|m| m.info.role == Role::User) else {
            self.notice = Some("nothing to undo".to_owned());
            return Vec::new();
        };
        let text: String = last
            .parts
            .iter()
            .filter_map(|p| match &p.kind {
                PartKind::Text { text, synthetic } if synthetic != &Some(true) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let message = last.info.id.clone();
        self.input.set(&text);
        self.undone = Some(text);
        vec![Command::Revert { session, message }]
    }

    fn redo(&mut self) -> Vec<Command> {
        match &self.session {
            Some(session) if session.revert.is_some() => {
                if self.undone.take().is_some_and(|text| text == self.input.text()) {
                    self.input.take();
                }
                vec![Command::Unrevert(session.id.clone())]
            }
            _ => {
                self.notice = Some("nothing to redo".to_owned());
                Vec::new()
            }
        }
    }

    fn share(&mut self, shared: bool) -> Vec<Command> {
        let Some(session) = &self.session else {
            self.notice = Some("nothing to share yet".to_owned());
            return Vec::new();
        };
        vec![Command::Share { session: session.id.clone(), shared }]
    }

    fn compact(&mut self) -> Vec<Command> {
        let (Some(session), Some((provider, model))) = (self.session.as_ref(), self.model()) else {
            self.notice = Some("nothing to compact yet".to_owned());
            return Vec::new();
        };
        vec![Command::Compact { session: session.id.clone(), provider, model }]
    }
}

/// A session's transcript as markdown: each prompt and answer, tool calls with their input and
/// output (what `/export` writes).
pub fn transcript_markdown(session: &Session, messages: &[Message]) -> String {
    let mut out = format!("# {}\n\n", session.title);
    for message in messages {
        let heading = match message.info.role {
            Role::User => "## User".to_owned(),
            Role::Assistant => {
                let agent = message.info.agent.as_deref().unwrap_or("assistant");
                match &message.info.model_id {
                    Some(model) => format!("## Assistant ({agent} · {model})"),
                    None => format!("## Assistant ({agent})"),
                }
            }
            Role::Other => continue,
        };
        out.push_str(&heading);
        out.push_str("\n\n");
        for part in &message.parts {
            match &part.kind {
                PartKind::Text { text, synthetic } if synthetic != &Some(true) => {
                    out.push_str(text.trim_end());
                    out.push_str("\n\n");
                }
                PartKind::Tool { tool, state, .. } => {
                    let input = serde_json::to_string_pretty(&state.input).unwrap_or_default();
                    out.push_str(&format!("**Tool: {tool}**\n\n```json\n{input}\n```\n\n"));
                    if let Some(output) = state.output.as_deref().filter(|o| !o.is_empty()) {
                        out.push_str(&format!("```\n{}\n```\n\n", output.trim_end()));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// What a key does in a list dialog whose entries are filtered by what is typed: arrows move,
/// typing edits `query` (back to the first entry), Enter chooses, Esc closes.
pub(crate) fn search(key: KeyEvent, query: &mut String, selected: usize, len: usize) -> Pick {
    match key.code {
        KeyCode::Backspace => {
            query.pop();
            Pick::Moved(0)
        }
        KeyCode::Char(c) => {
            query.push(c);
            Pick::Moved(0)
        }
        KeyCode::Enter => Pick::Chosen(selected),
        KeyCode::Esc => Pick::Closed,
        _ => match pick(key, selected, len) {
            Pick::Other => Pick::Moved(selected),
            moved => moved,
        },
    }
}

/// What a key does in a list dialog.
pub(crate) enum Pick {
    /// The highlight moved to this row.
    Moved(usize),
    /// Enter on this row.
    Chosen(usize),
    Closed,
    Other,
}

/// Up/Down move within `len` rows, Enter chooses the highlighted one (when there is one), Esc closes.
fn pick(key: KeyEvent, selected: usize, len: usize) -> Pick {
    match key.code {
        KeyCode::Up => Pick::Moved(selected.saturating_sub(1)),
        KeyCode::Down => Pick::Moved((selected + 1).min(len.saturating_sub(1))),
        KeyCode::Enter if selected < len => Pick::Chosen(selected),
        KeyCode::Enter | KeyCode::Esc => Pick::Closed,
        _ => Pick::Other,
    }
}

/// The session's changed files from its user messages' turn diffs (a later turn's entry for a file
/// replaces an earlier one's).
fn turn_diffs(messages: &[Message]) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    for message in messages.iter().filter(|m| m.info.role == Role::User) {
        let Some(diffs) = message.info.extra.get("summary").and_then(|s| s.get("diffs")) else { continue };
        let diffs: Vec<FileDiff> = serde_json::from_value(diffs.clone()).unwrap_or_default();
        for diff in diffs {
            files.retain(|known| known.file != diff.file);
            files.push(diff);
        }
    }
    files
}

/// The message an event changes.
fn touched_message(event: &Event) -> Option<String> {
    match event {
        Event::MessageUpdated(info) => Some(info.id.clone()),
        Event::PartUpdated(part) => Some(part.message_id.clone()),
        Event::PartDelta { message_id, .. } | Event::PartRemoved { message_id, .. } => Some(message_id.clone()),
        _ => None,
    }
}
