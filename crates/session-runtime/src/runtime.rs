//! [`SessionRuntime`]: the public face. Admission (durable first, then an advisory wake), interrupt,
//! waiting for idle, manual compaction, the event bus, and session creation for callers that do not
//! manage projects themselves.

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::Weak;
use std::time::Duration;

use opencode_catalog::Catalog;
use opencode_catalog::LazyCatalog;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use opencode_config::Config;
use opencode_config::CredentialRefresher;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_llm::LlmClient;
use opencode_llm::RetryPolicy;
use opencode_llm::ToolDefinition;
use opencode_mcp::McpEvent;
use opencode_mcp::McpManager;
use opencode_session_store::Delivery;
use opencode_session_store::GLOBAL_PROJECT;
use opencode_session_store::MessageWithParts;
use opencode_session_store::NewSession;
use opencode_session_store::Session;
use opencode_session_store::SessionInput;
use opencode_session_store::SessionModel;
use opencode_session_store::Store;
use opencode_tool_registry::Agent;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use tokio::sync::broadcast;

use crate::coordinator::Coordinator;
use crate::coordinator::DrainFuture;
use crate::coordinator::DrainOutcome;
use crate::error::Result;
use crate::error::RuntimeError;
use crate::events::EventBus;
use crate::events::RuntimeEvent;
use crate::events::SessionStatus;
use crate::history::PromptFile;
use crate::history::StoredPrompt;
use crate::hooks::Hooks;
use crate::location::LocationFactory;
use crate::location::StandardLocations;
use crate::locations::Reload;
use crate::memory::MemoryOptions;
use crate::memory::MemoryReport;
use crate::projection::HistoryCache;
use crate::store::blocking;
use crate::subtask::SubtaskPrompt;

/// Tuning of the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// Retries of a provider turn whose stream failed, retryably, before any output (the client
    /// has already retried the request phase): the LLM layer's policy, so back-off has the same
    /// jitter and a `retry-after` beyond its bound fails the turn with the provider's message
    /// instead of a silent long wait.
    pub retry: RetryPolicy,
    /// Events buffered per subscriber before it lags.
    pub event_capacity: usize,
    /// Title new sessions with the small model after their first user message (in the background).
    pub titles: bool,
    /// What is kept in memory between turns, and for how long (config `memory` applies over it).
    pub memory: MemoryOptions,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_secs(2),
                max_delay: Duration::from_secs(30),
                ..RetryPolicy::default()
            },
            event_capacity: 4096,
            titles: true,
            memory: MemoryOptions::default(),
        }
    }
}

/// A model choice: `provider/model`, optionally with a variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    pub provider: String,
    pub model: String,
    pub variant: Option<String>,
}

impl ModelChoice {
    /// Parses `provider/model` (the model part may contain further `/`).
    pub fn parse(reference: &str) -> Result<Self> {
        match reference.split_once('/') {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
                Ok(Self { provider: provider.to_owned(), model: model.to_owned(), variant: None })
            }
            _ => Err(RuntimeError::InvalidPrompt(format!("model {reference:?} is not of the form provider/model"))),
        }
    }
}

/// One prompt to admit.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptRequest {
    pub session_id: String,
    /// Reusing an id is an exact retry when session, prompt and delivery match.
    pub prompt_id: Option<String>,
    pub text: String,
    pub files: Vec<PromptFile>,
    pub delivery: Delivery,
    /// Switches the session's agent for the next provider turn.
    pub agent: Option<String>,
    /// Switches the session's model for the next provider turn.
    pub model: Option<ModelChoice>,
    /// Admit without scheduling a drain.
    pub admit_only: bool,
    /// Delegate to an agent before the model answers (see [`SubtaskPrompt`]); the text may be empty.
    pub subtask: Option<SubtaskPrompt>,
}

impl PromptRequest {
    /// A steering text prompt for `session_id`.
    pub fn text(session_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            prompt_id: None,
            text: text.into(),
            files: Vec::new(),
            delivery: Delivery::Steer,
            agent: None,
            model: None,
            admit_only: false,
            subtask: None,
        }
    }

    pub fn queued(mut self) -> Self {
        self.delivery = Delivery::Queue;
        self
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.prompt_id = Some(id.into());
        self
    }
}

/// The durable admission of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    pub input: SessionInput,
    /// This was an exact retry of an earlier admission; nothing new was written or scheduled twice.
    pub retried: bool,
}

/// What [`SessionRuntime::run`] ends with.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub receipt: Receipt,
    pub outcome: DrainOutcome,
    /// The session after the run (cost and token totals included).
    pub session: Session,
}

/// Builds a [`SessionRuntime`].
pub struct RuntimeBuilder {
    store: Arc<Store>,
    llm: LlmClient,
    catalog: LazyCatalog,
    config: Arc<Config>,
    paths: Paths,
    env: Env,
    locations: Option<Arc<dyn LocationFactory>>,
    hooks: Option<Arc<dyn Hooks>>,
    refresher: Option<Arc<dyn CredentialRefresher>>,
    options: RuntimeOptions,
}

impl RuntimeBuilder {
    /// Refreshes stored sign-ins before each turn with this (default: the built-in provider auth
    /// plugins, `opencode_plugin_host::auth::AuthRefresher`).
    pub fn credentials(mut self, refresher: Arc<dyn CredentialRefresher>) -> Self {
        self.refresher = Some(refresher);
        self
    }

    /// Opens Locations with this factory (default: [`StandardLocations`] without tools).
    pub fn locations(mut self, locations: impl LocationFactory + 'static) -> Self {
        self.locations = Some(Arc::new(locations));
        self
    }

    /// Calls these hooks (default: none, at no cost).
    pub fn hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    pub fn options(mut self, options: RuntimeOptions) -> Self {
        self.options = options;
        self
    }

    /// The process environment the runtime reads credentials and flags from (default: empty).
    pub fn env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }

    /// Builds the runtime and routes the store's committed events onto its bus (through an event hook
    /// of the store's).
    pub fn build(mut self) -> SessionRuntime {
        self.options.memory = self.options.memory.with_config(self.config.memory.as_ref());
        let locations = self
            .locations
            .unwrap_or_else(|| Arc::new(StandardLocations::new(&self.config, self.paths.clone(), self.env.clone())));
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            agents: Arc::new(Agents::from_config(&AgentDirs::standard(&self.paths), &self.config)),
            auth: AuthStore::new(self.paths.auth_file(), &self.env),
            refresher: self
                .refresher
                .unwrap_or_else(|| Arc::new(opencode_plugin_host::auth::AuthRefresher::builtin(&self.env))),
            store: self.store,
            llm: self.llm,
            catalog: self.catalog,
            config: self.config,
            env: self.env,
            location_factory: locations,
            locations: Mutex::new(HashMap::new()),
            mcp_events: broadcast::channel(MCP_EVENT_CAPACITY).0,
            hooks: self.hooks,
            bus: EventBus::new(self.options.event_capacity),
            coordinator: Coordinator::default(),
            history: HistoryCache::new(self.options.memory.history_budget),
            snapshot_root: self.paths.data.join("snapshot"),
            options: self.options,
        });
        let weak = Arc::downgrade(&inner);
        inner.store.add_event_hook(Arc::new(move |events| {
            if let Some(inner) = weak.upgrade() {
                inner.history.apply(events);
                for event in events {
                    inner.publish(RuntimeEvent::Durable(event.clone()));
                }
            }
        }));
        crate::memory::start_sweep(&inner);
        if let Some(hooks) = &inner.hooks {
            hooks.attach_side_model(Arc::new(crate::side::RuntimeSideModel(Arc::downgrade(&inner))));
        }
        SessionRuntime { inner }
    }
}

/// The session runtime. Cheap to clone; one per process.
#[derive(Clone)]
pub struct SessionRuntime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SessionRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRuntime").field("active", &self.active()).finish_non_exhaustive()
    }
}

impl SessionRuntime {
    pub(crate) fn from_inner(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// Starts building a runtime over a store, an LLM client, the catalog (ready, or a
    /// [`LazyCatalog`] loaded by the first turn that needs it) and configuration.
    pub fn builder(
        store: Arc<Store>,
        llm: LlmClient,
        catalog: impl Into<LazyCatalog>,
        config: Arc<Config>,
        paths: Paths,
    ) -> RuntimeBuilder {
        RuntimeBuilder {
            store,
            llm,
            catalog: catalog.into(),
            config,
            paths,
            env: Env::default(),
            locations: None,
            hooks: None,
            refresher: None,
            options: RuntimeOptions::default(),
        }
    }

    /// The store the runtime writes to (for reads: history, events after N, sessions).
    pub fn store(&self) -> &Arc<Store> {
        &self.inner.store
    }

    /// The projected history the runtime holds in memory for `session_id` and the request messages it
    /// projects to, checked against the store as before a provider turn; `None` when it was not
    /// current and had to be reloaded. Diagnostics: it must equal a fresh
    /// [`Reader::full_history`](opencode_session_store::Reader::full_history) and its projection.
    pub async fn cached_history(
        &self,
        session_id: &str,
    ) -> Result<Option<(Vec<MessageWithParts>, Vec<opencode_llm::Message>)>> {
        let inner = Arc::clone(&self.inner);
        let session = session_id.to_owned();
        blocking(move || inner.history.held(&inner.store, &session)).await
    }

    /// What the runtime holds in memory now: cached projected histories, open Locations, active drains.
    pub fn memory(&self) -> MemoryReport {
        self.inner.memory_report()
    }

    /// Drops the cached projected history of every session without a drain in progress now (their
    /// next turns reload it from the store, sending the same requests); how many were dropped.
    pub fn evict_histories(&self) -> usize {
        self.inner.history.evict_idle(None, &self.inner.coordinator.active())
    }

    /// Subscribes to the event bus: durable events after their commit, plus live deltas and status.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<RuntimeEvent>> {
        self.inner.bus.subscribe()
    }

    /// Creates a session in `directory` under the global project (created if missing). Passing the
    /// id of an existing session adopts it.
    pub async fn create_session(&self, directory: &Path, new: NewSession) -> Result<Session> {
        let store = Arc::clone(&self.inner.store);
        let directory = directory.display().to_string();
        blocking(move || {
            store.write(|tx| {
                let project =
                    if new.project_id.is_empty() { GLOBAL_PROJECT.to_owned() } else { new.project_id.clone() };
                if project == GLOBAL_PROJECT {
                    tx.ensure_global_project()?;
                }
                tx.create_session(NewSession { project_id: project, directory, ..new })
            })
        })
        .await
    }

    /// Holds `session_id` for a change that must not race a turn (editing or removing its history,
    /// running a shell command in it): no drain starts until the hold is dropped (a prompt admitted
    /// meanwhile runs then). [`RuntimeError::Busy`] while a turn runs or another change holds it.
    pub fn hold(&self, session_id: &str) -> Result<SessionHold> {
        Coordinator::hold(&self.inner, session_id)
            .map(SessionHold)
            .ok_or_else(|| RuntimeError::Busy { session: session_id.to_owned() })
    }

    /// Records a command a front end answered without a model call (a plugin command's reply):
    /// `asked` as a user message and `answer` as a finished assistant message, written while the
    /// session is held ([`RuntimeError::Busy`] during a turn). Returns the answer's message.
    pub async fn reply(&self, session_id: &str, asked: String, answer: String) -> Result<MessageWithParts> {
        let _hold = self.hold(session_id)?;
        let session = self.session(session_id).await?;
        crate::replies::record(&self.inner, session, asked, answer).await
    }

    /// Stages a revert of the session from `message_id` (or `part_id`) on (OpenCode's undo): in a git
    /// work tree with snapshots on, the files the reverted steps changed are put back first, the tree
    /// before is kept for [`SessionRuntime::unrevert`], and `session.diff` says what was undone.
    /// [`RuntimeError::Busy`] while a turn runs.
    pub async fn revert(&self, session_id: &str, message_id: String, part_id: Option<String>) -> Result<Session> {
        let _hold = self.hold(session_id)?;
        let session = self.session(session_id).await?;
        crate::snapshots::revert(&self.inner, session, message_id, part_id).await
    }

    /// Undoes a staged revert (redo): the files an undo put back return to the saved tree.
    /// [`RuntimeError::Busy`] while a turn runs.
    pub async fn unrevert(&self, session_id: &str) -> Result<Session> {
        let _hold = self.hold(session_id)?;
        let session = self.session(session_id).await?;
        crate::snapshots::unrevert(&self.inner, session).await
    }

    /// Admits one prompt durably, then schedules an advisory wake unless `admit_only`.
    pub async fn prompt(&self, request: PromptRequest) -> Result<Receipt> {
        if request.text.trim().is_empty() && request.files.is_empty() && request.subtask.is_none() {
            return Err(RuntimeError::InvalidPrompt("the prompt has neither text nor files".to_owned()));
        }
        if request.agent.is_some() || request.model.is_some() || request.subtask.is_some() {
            // Checked against the session's directory: its configuration names the agents and models.
            let session = self.session(&request.session_id).await?;
            let settings = self.inner.settings(&session.directory)?;
            if let Some(agent) = &request.agent {
                settings.agent(Some(agent))?;
            }
            if let Some(model) = &request.model {
                settings.catalog.model(&model.provider, &model.model)?;
            }
            if let Some(subtask) = &request.subtask {
                crate::subtask::check(&settings, subtask)?;
            }
        }
        let prompt = serde_json::to_value(StoredPrompt {
            read: crate::history::read_local_files(&request.files).await,
            text: request.text,
            files: request.files,
            subtask: request.subtask,
        })
        .map_err(RuntimeError::internal)?;
        let store = Arc::clone(&self.inner.store);
        let (session, id, delivery) = (request.session_id.clone(), request.prompt_id, request.delivery);
        let (agent, model) = (request.agent, request.model);
        let admission = blocking(move || {
            store.write(|tx| {
                let admission = tx.admit_input(&session, id, prompt, delivery)?;
                if !admission.retried && (agent.is_some() || model.is_some()) {
                    tx.update_session(&session, |s| {
                        if agent.is_some() {
                            s.agent = agent;
                        }
                        if let Some(model) = model {
                            s.model = Some(SessionModel {
                                id: model.model,
                                provider_id: model.provider,
                                variant: model.variant,
                            });
                        }
                    })?;
                }
                Ok(admission)
            })
        })
        .await?;
        if !request.admit_only {
            self.wake(&request.session_id);
        }
        Ok(Receipt { input: admission.input, retried: admission.retried })
    }

    /// Admits a prompt, waits until the session is idle, and reports how the run ended. This is what
    /// `opencode run` calls.
    pub async fn run(&self, request: PromptRequest) -> Result<RunResult> {
        let session_id = request.session_id.clone();
        let receipt = self.prompt(PromptRequest { admit_only: false, ..request }).await?;
        let outcome = self.wait_idle(&session_id).await.unwrap_or(DrainOutcome::Idle);
        let session = self.session(&session_id).await?;
        Ok(RunResult { receipt, outcome, session })
    }

    /// The stored session (`NotFound` when unknown).
    pub async fn session(&self, session_id: &str) -> Result<Session> {
        let store = Arc::clone(&self.inner.store);
        let session_id = session_id.to_owned();
        blocking(move || {
            store.read(|r| {
                r.session(&session_id)?.ok_or_else(|| opencode_session_store::StoreError::NotFound {
                    kind: "session",
                    id: session_id.clone(),
                })
            })
        })
        .await
    }

    /// The agents that apply in `directory` (as sessions spell it): its own configuration's, else the
    /// runtime's. Front ends offer the primary ones as modes.
    pub fn agents(&self, directory: &Path) -> Result<Arc<Agents>> {
        Ok(self.inner.settings(&directory.to_string_lossy())?.agents)
    }

    /// The configuration that applies in `directory` (as sessions spell it): its own, else the
    /// runtime's (commands, agents, models a front end offers).
    pub fn config(&self, directory: &Path) -> Result<Arc<Config>> {
        Ok(self.inner.settings(&directory.to_string_lossy())?.config)
    }

    /// The model catalog that applies in `directory` (as sessions spell it), with its configuration
    /// applied: the models and variants a front end offers.
    pub fn catalog(&self, directory: &Path) -> Result<Arc<Catalog>> {
        Ok(self.inner.settings(&directory.to_string_lossy())?.catalog)
    }

    /// Every model a turn in `directory` can call (see [`callable_providers`](crate::callable_providers)),
    /// most preferred provider first, each provider's models in catalog order: a model picker's list.
    pub fn models(&self, directory: &Path) -> Result<Vec<ModelChoice>> {
        let settings = self.inner.settings(&directory.to_string_lossy())?;
        let providers =
            crate::defaults::callable_providers(&settings.catalog, &settings.config, &self.inner.auth, &self.inner.env);
        Ok(providers
            .iter()
            .flat_map(|provider| {
                provider.models.keys().map(|model| ModelChoice {
                    provider: provider.id.clone(),
                    model: model.clone(),
                    variant: None,
                })
            })
            .collect())
    }

    /// The model the session's next turn would use, chosen as the runner chooses it (the session's,
    /// else its agent's, else config `model`, else the default); `None` when nothing names one and no
    /// provider has credentials.
    pub fn next_model(&self, session: &Session) -> Result<Option<ModelChoice>> {
        let settings = self.inner.settings(&session.directory)?;
        let agent = settings.agent(session.agent.as_deref())?;
        settings.model_for(&self.inner, session, &agent)
    }

    /// Sets the agent and/or the model of the session's next turns without admitting a prompt (a
    /// front end's mode or model picker). Both are checked against the session directory's
    /// configuration and catalog first; nothing is written when either is unknown.
    pub async fn configure(
        &self,
        session_id: &str,
        agent: Option<String>,
        model: Option<ModelChoice>,
    ) -> Result<Session> {
        let session = self.session(session_id).await?;
        let settings = self.inner.settings(&session.directory)?;
        if let Some(agent) = &agent {
            settings.agent(Some(agent))?;
        }
        if let Some(model) = &model {
            settings.catalog.model(&model.provider, &model.model)?;
        }
        let store = Arc::clone(&self.inner.store);
        let session_id = session_id.to_owned();
        blocking(move || {
            store.write(|tx| {
                tx.update_session(&session_id, |s| {
                    if agent.is_some() {
                        s.agent = agent;
                    }
                    if let Some(model) = model {
                        s.model =
                            Some(SessionModel { id: model.model, provider_id: model.provider, variant: model.variant });
                    }
                })
            })
        })
        .await
    }

    /// Schedules a drain of the session (coalesced with a running one). A drain with nothing admitted
    /// returns at once.
    pub fn wake(&self, session_id: &str) {
        Coordinator::wake(&self.inner, session_id, false);
    }

    /// Interrupts the session's active drain. Returns `false`, doing nothing, when it is idle or unknown.
    pub fn interrupt(&self, session_id: &str) -> bool {
        self.inner.coordinator.interrupt(session_id)
    }

    /// Waits until the session has no active drain; the outcome of the drain that was running, or `None`.
    pub async fn wait_idle(&self, session_id: &str) -> Option<DrainOutcome> {
        self.inner.coordinator.wait_idle(session_id).await
    }

    /// Compacts the session now (serialised with its drains) and waits for it.
    pub async fn compact(&self, session_id: &str) -> Option<DrainOutcome> {
        Coordinator::wake(&self.inner, session_id, true);
        self.wait_idle(session_id).await
    }

    /// Sessions with an active drain.
    pub fn active(&self) -> Vec<String> {
        self.inner.coordinator.active()
    }

    /// Disposes the Location of `directory` (as sessions spell it) so that its next use loads the
    /// directory's configuration again: its configuration, agents and catalog, and its tools (MCP
    /// servers stop, plugin tools are attached anew). A drain running in the directory keeps the
    /// Location it started with, tools and settings alike, so no turn sees half of each: disposal
    /// then waits until no drain holds it ([`Reload::Deferred`]), and new drains meanwhile share it.
    pub fn reload_location(&self, directory: &Path) -> Reload {
        self.inner.reload(directory)
    }

    /// [`SessionRuntime::reload_location`] for every open Location (after the global configuration
    /// changed); returns each directory with what happened to it.
    pub fn reload_all(&self) -> Vec<(PathBuf, Reload)> {
        self.inner.reload_where(|_| true)
    }

    /// The MCP servers of `directory`'s Location (as sessions spell the directory), opening the
    /// Location if needed; `None` when its tools have no MCP support. Servers added or
    /// disconnected through it change the tools of that Location's next turns (not any config
    /// file), until the Location is reloaded.
    pub fn mcp(&self, directory: &Path) -> Result<Option<McpManager>> {
        let location = self.inner.location(&directory.to_string_lossy())?;
        Ok(location.tools.mcp())
    }

    /// The tools of `directory`'s Location (as sessions spell the directory), opening it if needed:
    /// what `agent` (the default one when `None`) is offered on its next turn, and the name of every
    /// tool whatever the agent.
    pub fn tools(&self, directory: &Path, agent: Option<&str>) -> Result<LocationTools> {
        let directory = directory.to_string_lossy();
        let agent = self.inner.settings(&directory)?.agent(agent)?;
        let tools = &self.inner.location(&directory)?.tools;
        Ok(LocationTools { offered: tools.definitions(&agent), names: tools.names() })
    }

    /// The MCP events (tool-list changes, sign-ins waiting for a browser) of every Location opened
    /// from now on, each with its directory (as sessions spell it).
    pub fn mcp_events(&self) -> broadcast::Receiver<(PathBuf, McpEvent)> {
        self.inner.mcp_events.subscribe()
    }

    /// The directories whose Location is open, each with whether a reload of it is waiting for its
    /// drains to end.
    pub fn open_locations(&self) -> Vec<(PathBuf, bool)> {
        let mut open: Vec<(PathBuf, bool)> =
            self.inner.open_locations().iter().map(|(directory, opened)| (directory.clone(), opened.stale)).collect();
        open.sort();
        open
    }
}

/// A session held by [`SessionRuntime::hold`]; released on drop.
#[must_use = "the session is released when the hold is dropped"]
pub struct SessionHold(#[expect(dead_code, reason = "held for its Drop")] crate::coordinator::Hold<Inner>);

impl std::fmt::Debug for SessionHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHold").finish_non_exhaustive()
    }
}

/// MCP events a slow receiver of [`SessionRuntime::mcp_events`] may fall behind by.
const MCP_EVENT_CAPACITY: usize = 256;

/// Everything a drain needs, shared.
pub(crate) struct Inner {
    /// This runtime, for services it hands to its Locations (the `task` tool's subagent runner).
    pub(crate) me: Weak<Inner>,
    pub(crate) store: Arc<Store>,
    pub(crate) llm: LlmClient,
    /// The start directory's catalog, loaded on first use.
    pub(crate) catalog: LazyCatalog,
    pub(crate) config: Arc<Config>,
    pub(crate) env: Env,
    pub(crate) auth: AuthStore,
    pub(crate) refresher: Arc<dyn CredentialRefresher>,
    /// The one agent model: the runner reads prompts, models and step allowances from it, the tool
    /// host the same agent's permissions.
    pub(crate) agents: Arc<Agents>,
    pub(crate) location_factory: Arc<dyn LocationFactory>,
    /// The open Locations, by directory.
    pub(crate) locations: Mutex<HashMap<PathBuf, crate::locations::Opened>>,
    /// The MCP events of every open Location, with its directory.
    pub(crate) mcp_events: broadcast::Sender<(PathBuf, McpEvent)>,
    pub(crate) hooks: Option<Arc<dyn Hooks>>,
    pub(crate) bus: EventBus,
    pub(crate) coordinator: Coordinator,
    pub(crate) options: RuntimeOptions,
    /// Projected history per session, maintained from committed events.
    pub(crate) history: HistoryCache,
    /// Where the work-tree snapshots live, one repository per project (`<data>/snapshot`).
    pub(crate) snapshot_root: PathBuf,
}

impl Inner {
    /// The session's agent, from the configuration of the session's directory.
    pub(crate) fn session_agent(&self, session: &Session) -> Result<Arc<Agent>> {
        self.settings(&session.directory)?.agent(session.agent.as_deref())
    }

    /// `provider`'s stored credentials for a turn, its sign-in refreshed (and saved) first when it
    /// expires within the margin.
    pub(crate) async fn credentials(&self, provider: &str) -> Result<Option<AuthInfo>> {
        let fresh = self.refresher.fresh(provider, &self.auth).await;
        fresh.map_err(|err| RuntimeError::Catalog(err.into()))
    }
}

/// A Location's tools as [`SessionRuntime::tools`] reports them.
#[derive(Debug, Clone)]
pub struct LocationTools {
    /// What one agent is offered, as its next turn would send them.
    pub offered: Vec<ToolDefinition>,
    /// Every tool's name, whatever the agent.
    pub names: Vec<String>,
}

impl crate::coordinator::Drains for Inner {
    fn coordinator(&self) -> &Coordinator {
        &self.coordinator
    }

    fn drain(self: Arc<Self>, session: String, cancel: tokio_util::sync::CancellationToken) -> DrainFuture {
        Box::pin(crate::runner::drain(self, session, cancel))
    }

    fn status(&self, session: &str, status: SessionStatus) {
        self.publish(RuntimeEvent::Status { session_id: session.to_owned(), status });
    }
}

impl Inner {
    /// Sends an event to the bus and the hooks.
    pub(crate) fn publish(&self, event: RuntimeEvent) {
        // A drain that ended released its Location: a deferred reload can happen now.
        let drained = matches!(event, RuntimeEvent::Status { status: SessionStatus::Idle, .. });
        if let Some(hooks) = &self.hooks {
            hooks.event(&event);
        }
        self.bus.send(event);
        if drained {
            self.retire_stale();
        }
    }

    pub(crate) fn memory_report(&self) -> MemoryReport {
        MemoryReport {
            history: self.history.report(),
            locations: self.open_locations().len(),
            active_sessions: self.coordinator.active().len(),
        }
    }
}
