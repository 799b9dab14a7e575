//! The direct runtime registry: plugins register at start, [`PluginHost::ready`] awaits them, and
//! every hook is dispatched through the ready plugins in registration order.
//!
//! Dispatch cost: a per-host bitmask says which hooks any ready plugin implements, so a hook nobody
//! implements costs one atomic load; otherwise one read lock, one `Arc` clone and one boxed future
//! per implementing plugin.

use crate::commands::CommandInput;
use crate::commands::CommandOutcome;
use crate::commands::PluginCommand;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::OnceLock;
use std::sync::PoisonError;
use std::sync::RwLock;
use std::sync::Weak;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use opencode_config::Config;
use opencode_system_context::Contribution;
use opencode_system_context::Producer;
use opencode_system_context::SourceKey;
use opencode_system_context::SystemContext;
use opencode_system_context::SystemContextRegistry;
use opencode_tool_registry::RegistrationId;
use opencode_tool_registry::ToolRegistry;
use tokio::sync::OnceCell;

use crate::auth::AuthProvider;
use crate::error::PluginError;
use crate::hooks::Hook;
use crate::hooks::HookName;
use crate::hooks::PluginEvent;
use crate::plugin::Plugin;
use crate::plugin::StartContext;
use crate::plugin::valid_namespace;
use crate::side::SideModel;

/// Default limit for one plugin's `start`.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether sessions may run without a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Its failure fails [`PluginHost::ready`].
    Required,
    /// Its failure is reported and the others continue.
    Optional,
}

/// A plugin entry that was not loaded at all (unsupported, skipped by `--pure`, deprecated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginNotice {
    /// The `plugin[]` entry or file.
    pub source: String,
    pub reason: String,
}

/// One plugin's outcome after start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginState {
    Ready,
    Failed(String),
    NotLoaded(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginStatus {
    /// The namespace (or, when it never started, the name it was registered under).
    pub name: String,
    pub requirement: Requirement,
    pub state: PluginState,
}

/// What [`PluginHost::ready`] found, in registration order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyReport {
    pub plugins: Vec<PluginStatus>,
    pub elapsed: Duration,
}

impl ReadyReport {
    /// The plugins that are ready, in dispatch order.
    pub fn ready(&self) -> impl Iterator<Item = &str> {
        self.plugins.iter().filter(|status| status.state == PluginState::Ready).map(|status| status.name.as_str())
    }

    /// Plugins that failed to start or were not loaded, with why.
    pub fn problems(&self) -> impl Iterator<Item = &PluginStatus> {
        self.plugins.iter().filter(|status| status.state != PluginState::Ready)
    }

    fn required_failure(&self) -> Option<PluginError> {
        self.plugins.iter().find_map(|status| match (&status.state, status.requirement) {
            (PluginState::Failed(reason), Requirement::Required) => {
                Some(PluginError::RequiredFailed { plugin: status.name.clone(), reason: reason.clone() })
            }
            _ => None,
        })
    }
}

/// A hook call that failed or timed out; the hook was skipped for that plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    pub plugin: String,
    /// The hook's OpenCode name (`context` for a rejected Context Source).
    pub hook: &'static str,
    pub error: String,
}

/// Collects plugins before start-up.
pub struct PluginHostBuilder {
    entries: Vec<(Arc<dyn Plugin>, Requirement)>,
    notices: Vec<PluginNotice>,
    start: StartContext,
    start_timeout: Duration,
    config: Option<Arc<Config>>,
}

impl PluginHostBuilder {
    /// Registers a plugin; registration order is dispatch order.
    #[must_use]
    pub fn plugin(mut self, plugin: Arc<dyn Plugin>, requirement: Requirement) -> Self {
        self.entries.push((plugin, requirement));
        self
    }

    /// Records an entry that was not loaded, so the ready report shows it.
    #[must_use]
    pub fn notice(mut self, notice: PluginNotice) -> Self {
        self.notices.push(notice);
        self
    }

    #[must_use]
    pub fn start_context(mut self, start: StartContext) -> Self {
        self.start = start;
        self
    }

    /// The loaded configuration: once the plugins are ready, each that implements `config` sees it
    /// (and may amend it) before any session runs; [`PluginHost::config`] returns the result.
    #[must_use]
    pub fn config(mut self, config: Arc<Config>) -> Self {
        self.config = Some(config);
        self
    }

    /// The limit for each plugin's `start` (default [`START_TIMEOUT`]).
    #[must_use]
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    pub fn build(self) -> PluginHost {
        PluginHost {
            inner: Arc::new(Inner {
                entries: self.entries,
                notices: self.notices,
                start: self.start,
                start_timeout: self.start_timeout,
                config: self.config,
                amended: OnceLock::new(),
                mask: AtomicU32::new(0),
                active: RwLock::new(Arc::new(Active::default())),
                ready: OnceCell::new(),
                attached: Mutex::new(Attached::default()),
                side: OnceLock::new(),
            }),
        }
    }
}

/// The plugins of one process. Clones share state.
#[derive(Clone)]
pub struct PluginHost {
    inner: Arc<Inner>,
}

struct Inner {
    entries: Vec<(Arc<dyn Plugin>, Requirement)>,
    notices: Vec<PluginNotice>,
    start: StartContext,
    start_timeout: Duration,
    config: Option<Arc<Config>>,
    /// The configuration after the `config` hook ran at start-up.
    amended: OnceLock<Arc<Config>>,
    /// Bit `h` is set when some ready plugin implements hook `h`.
    mask: AtomicU32,
    active: RwLock<Arc<Active>>,
    ready: OnceCell<Arc<ReadyReport>>,
    attached: Mutex<Attached>,
    /// The host's side model, once provided; handed to every plugin that becomes ready.
    side: OnceLock<Arc<dyn SideModel>>,
}

/// The ready plugins, in registration order, and per hook the ones implementing it.
#[derive(Default)]
struct Active {
    plugins: Vec<Arc<dyn Plugin>>,
    by_hook: [Vec<Arc<dyn Plugin>>; HookName::ALL.len()],
}

/// Registries plugins contribute to, and what each namespace contributed.
#[derive(Default)]
struct Attached {
    tools: Vec<Weak<ToolRegistry>>,
    contexts: Vec<SystemContextRegistry>,
    tool_ids: HashMap<String, Vec<(Weak<ToolRegistry>, RegistrationId)>>,
    contributions: HashMap<String, Vec<Contribution>>,
}

impl Default for PluginHost {
    fn default() -> Self {
        Self::builder().build()
    }
}

impl PluginHost {
    pub fn builder() -> PluginHostBuilder {
        PluginHostBuilder {
            entries: Vec::new(),
            notices: Vec::new(),
            start: StartContext::default(),
            start_timeout: START_TIMEOUT,
            config: None,
        }
    }

    /// Starts every registered plugin concurrently (once; later calls return the same report) and
    /// activates those that became ready. Fails when a required plugin did not; the report of the
    /// others stays available through [`PluginHost::report`].
    pub async fn ready(&self) -> Result<Arc<ReadyReport>, PluginError> {
        let report = self.inner.ready.get_or_init(|| self.start_all()).await;
        match report.required_failure() {
            Some(err) => Err(err),
            None => Ok(Arc::clone(report)),
        }
    }

    /// The start-up report, once [`PluginHost::ready`] finished.
    pub fn report(&self) -> Option<Arc<ReadyReport>> {
        self.inner.ready.get().cloned()
    }

    /// The configuration given to [`PluginHostBuilder::config`] as the plugins' `config` hooks left
    /// it, once [`PluginHost::ready`] finished (the same `Arc` when no plugin implements `config`).
    pub fn config(&self) -> Option<Arc<Config>> {
        self.inner.amended.get().cloned()
    }

    /// The namespaces of the ready plugins, in dispatch order.
    pub fn namespaces(&self) -> Vec<String> {
        self.active().plugins.iter().map(|plugin| plugin.namespace().to_owned()).collect()
    }

    /// Whether any ready plugin implements `hook`.
    pub fn implements(&self, hook: HookName) -> bool {
        self.inner.mask.load(Ordering::Acquire) & hook.bit() != 0
    }

    /// Runs hook `H` through every ready plugin implementing it, in registration order; each sees
    /// the output the previous one left. A failing plugin is skipped (its output changes are kept
    /// only if it wrote them before failing; external plugins never write on failure).
    pub async fn trigger<H: Hook>(&self, input: &H::Input, output: &mut H::Output) -> Vec<HookFailure> {
        if !self.implements(H::NAME) {
            return Vec::new();
        }
        let active = self.active();
        let mut failures = Vec::new();
        for plugin in &active.by_hook[H::NAME.index()] {
            if let Err(err) = H::call(plugin.as_ref(), input, output).await {
                failures.push(failure(plugin.namespace(), H::NAME.as_str(), err.0));
            }
        }
        failures
    }

    /// Gives the host's side model to every ready plugin, and to plugins that become ready later
    /// (the first one provided stays). A plugin may be handed it more than once.
    pub fn provide_side_model(&self, model: Arc<dyn SideModel>) {
        let _first = self.inner.side.set(model);
        for plugin in &self.active().plugins {
            self.attach_side(plugin.as_ref());
        }
    }

    fn attach_side(&self, plugin: &dyn Plugin) {
        if let Some(side) = self.inner.side.get() {
            plugin.attach_side_model(Arc::clone(side));
        }
    }

    /// The commands of every ready plugin, in dispatch order (a name another plugin took first is
    /// skipped).
    pub fn commands(&self) -> Vec<PluginCommand> {
        let mut seen = std::collections::HashSet::new();
        let plugins = self.active().plugins.clone();
        plugins
            .iter()
            .flat_map(|plugin| plugin.commands())
            .filter(|command| seen.insert(command.name.clone()))
            .collect()
    }

    /// Runs the ready plugin command named `name`; `None` when no ready plugin offers one.
    pub async fn run_command(&self, name: &str, input: &CommandInput) -> Option<Result<CommandOutcome, String>> {
        let plugins = self.active().plugins.clone();
        let plugin = plugins.iter().find(|plugin| plugin.commands().iter().any(|command| command.name == name))?;
        Some(plugin.run_command(name, input).await)
    }

    /// Whether a ready plugin keeps requests inside the context window itself
    /// ([`Plugin::manages_context`]).
    pub fn manages_context(&self) -> bool {
        self.implements(HookName::ChatMessagesTransform) && self.active().plugins.iter().any(|p| p.manages_context())
    }

    /// The `event` hook: delivers a bus event to every ready plugin that listens.
    pub fn event(&self, event: &PluginEvent) {
        if !self.implements(HookName::Event) {
            return;
        }
        for plugin in &self.active().by_hook[HookName::Event.index()] {
            plugin.event(event);
        }
    }

    /// The `auth` hook: every ready plugin's credential flows, in dispatch order.
    pub fn auth_providers(&self) -> Vec<Arc<dyn AuthProvider>> {
        let active = self.active();
        active.by_hook[HookName::Auth.index()].iter().filter_map(|plugin| plugin.auth()).collect()
    }

    /// Registers every ready plugin's tools into `registry`, now and for plugins added later; they
    /// are removed again when their plugin unloads.
    pub fn attach_tools(&self, registry: &Arc<ToolRegistry>) -> Vec<HookFailure> {
        let plugins = self.active().plugins.clone();
        let mut attached = lock(&self.inner.attached);
        attached.tools.push(Arc::downgrade(registry));
        plugins.iter().flat_map(|plugin| register_tools(&mut attached, plugin.as_ref(), registry)).collect()
    }

    /// Registers every ready plugin's Context Sources into `registry` (as `plugin.<namespace>/<name>`),
    /// now and for plugins added later; unloading a plugin removes them at the next boundary.
    pub fn attach_context(&self, registry: &SystemContextRegistry) -> Vec<HookFailure> {
        let plugins = self.active().plugins.clone();
        let mut attached = lock(&self.inner.attached);
        attached.contexts.push(registry.clone());
        plugins.iter().flat_map(|plugin| register_sources(&mut attached, plugin.as_ref(), registry)).collect()
    }

    /// Starts and activates one more plugin after start-up (a reload adds it again after
    /// [`PluginHost::unload`]). Its tools and sources join the attached registries.
    pub async fn load(&self, plugin: Arc<dyn Plugin>) -> Result<Vec<HookFailure>, PluginError> {
        start_one(plugin.as_ref(), &self.inner.start, self.inner.start_timeout)
            .await
            .map_err(|reason| PluginError::RequiredFailed { plugin: plugin.namespace().to_owned(), reason })?;
        let taken = self.namespaces();
        if let Err(err) = check_namespace(plugin.namespace(), &taken) {
            plugin.stop().await;
            return Err(err);
        }
        let failures = self.contribute(plugin.as_ref());
        let mut plugins = self.active().plugins.clone();
        plugins.push(Arc::clone(&plugin));
        self.set_active(plugins);
        self.attach_side(plugin.as_ref());
        Ok(failures)
    }

    /// Deactivates the plugin with `namespace`: it gets no more hooks, its tools leave the tool
    /// registries, its Context Sources leave the System Context Registries (so they disappear at
    /// the next Safe Provider-Turn Boundary), and it is stopped. Returns whether it was loaded.
    pub async fn unload(&self, namespace: &str) -> bool {
        let mut plugins = self.active().plugins.clone();
        let Some(position) = plugins.iter().position(|plugin| plugin.namespace() == namespace) else {
            return false;
        };
        let plugin = plugins.remove(position);
        self.set_active(plugins);
        let (tool_ids, contributions) = {
            let mut attached = lock(&self.inner.attached);
            (attached.tool_ids.remove(namespace), attached.contributions.remove(namespace))
        };
        for (registry, id) in tool_ids.into_iter().flatten() {
            if let Some(registry) = registry.upgrade() {
                registry.unregister(id);
            }
        }
        drop(contributions);
        plugin.stop().await;
        true
    }

    /// Stops every plugin (at shutdown).
    pub async fn shutdown(&self) {
        for namespace in self.namespaces() {
            self.unload(&namespace).await;
        }
    }

    fn active(&self) -> Arc<Active> {
        Arc::clone(&self.inner.active.read().unwrap_or_else(PoisonError::into_inner))
    }

    fn set_active(&self, plugins: Vec<Arc<dyn Plugin>>) {
        let mut active = Active::default();
        let mut mask = 0;
        for plugin in &plugins {
            let hooks = plugin.hooks();
            mask |= hooks.bits();
            for hook in hooks.iter() {
                active.by_hook[hook.index()].push(Arc::clone(plugin));
            }
        }
        active.plugins = plugins;
        *self.inner.active.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(active);
        self.inner.mask.store(mask, Ordering::Release);
    }

    /// Registers one plugin's tools and sources into every attached registry.
    fn contribute(&self, plugin: &dyn Plugin) -> Vec<HookFailure> {
        let mut attached = lock(&self.inner.attached);
        let tools: Vec<Arc<ToolRegistry>> = attached.tools.iter().filter_map(Weak::upgrade).collect();
        let contexts = attached.contexts.clone();
        let mut failures = Vec::new();
        for registry in &tools {
            failures.extend(register_tools(&mut attached, plugin, registry));
        }
        for registry in &contexts {
            failures.extend(register_sources(&mut attached, plugin, registry));
        }
        failures
    }

    async fn start_all(&self) -> Arc<ReadyReport> {
        let begun = Instant::now();
        let inner = &self.inner;
        let outcomes = futures_util::future::join_all(
            inner.entries.iter().map(|(plugin, _)| start_one(plugin.as_ref(), &inner.start, inner.start_timeout)),
        )
        .await;
        let mut statuses = Vec::new();
        let mut ready: Vec<Arc<dyn Plugin>> = Vec::new();
        let mut taken: Vec<String> = Vec::new();
        for ((plugin, requirement), outcome) in inner.entries.iter().zip(outcomes) {
            let name = plugin.namespace().to_owned();
            let outcome = outcome.and_then(|()| check_namespace(&name, &taken).map_err(|err| err.to_string()));
            let state = match outcome {
                Ok(()) => {
                    taken.push(name.clone());
                    ready.push(Arc::clone(plugin));
                    PluginState::Ready
                }
                Err(reason) => {
                    tracing::warn!(plugin = %name, %reason, "plugin failed to start");
                    plugin.stop().await;
                    PluginState::Failed(reason)
                }
            };
            statuses.push(PluginStatus { name, requirement: *requirement, state });
        }
        for notice in &inner.notices {
            statuses.push(PluginStatus {
                name: notice.source.clone(),
                requirement: Requirement::Optional,
                state: PluginState::NotLoaded(notice.reason.clone()),
            });
        }
        for plugin in &ready {
            for failure in self.contribute(plugin.as_ref()) {
                tracing::warn!(plugin = %failure.plugin, error = %failure.error, "plugin contribution rejected");
            }
        }
        self.set_active(ready);
        // After activation: a side model provided meanwhile reaches them one way or the other
        // (attaching twice is harmless).
        for plugin in &self.active().plugins {
            self.attach_side(plugin.as_ref());
        }
        self.observe_config().await;
        Arc::new(ReadyReport { plugins: statuses, elapsed: begun.elapsed() })
    }

    /// Runs the `config` hook once over the configuration the host was built with.
    async fn observe_config(&self) {
        let Some(config) = &self.inner.config else { return };
        let amended = if self.implements(HookName::Config) {
            let mut amended = Config::clone(config);
            self.apply_config(&mut amended).await;
            Arc::new(amended)
        } else {
            Arc::clone(config)
        };
        let _first = self.inner.amended.set(amended);
    }
}

impl std::fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHost").field("ready", &self.namespaces()).finish_non_exhaustive()
    }
}

async fn start_one(plugin: &dyn Plugin, ctx: &StartContext, limit: Duration) -> Result<(), String> {
    match tokio::time::timeout(limit, plugin.start(ctx)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("not ready within {} ms", limit.as_millis())),
    }
}

fn check_namespace(namespace: &str, taken: &[String]) -> Result<(), PluginError> {
    if !valid_namespace(namespace) {
        return Err(PluginError::InvalidNamespace { namespace: namespace.to_owned() });
    }
    if taken.iter().any(|existing| existing == namespace) {
        return Err(PluginError::DuplicateNamespace { namespace: namespace.to_owned() });
    }
    Ok(())
}

fn register_tools(attached: &mut Attached, plugin: &dyn Plugin, registry: &Arc<ToolRegistry>) -> Vec<HookFailure> {
    if !plugin.hooks().contains(HookName::Tool) {
        return Vec::new();
    }
    let namespace = plugin.namespace().to_owned();
    let mut failures = Vec::new();
    for tool in plugin.tools() {
        let name = tool.name().to_owned();
        match registry.register(tool) {
            Ok(id) => attached.tool_ids.entry(namespace.clone()).or_default().push((Arc::downgrade(registry), id)),
            Err(err) => failures.push(failure(&namespace, "tool", format!("tool `{name}`: {err}"))),
        }
    }
    failures
}

fn register_sources(
    attached: &mut Attached,
    plugin: &dyn Plugin,
    registry: &SystemContextRegistry,
) -> Vec<HookFailure> {
    let namespace = plugin.namespace().to_owned();
    let mut failures = Vec::new();
    for source in plugin.context_sources() {
        let key = format!("plugin.{namespace}/{}", source.name);
        let registered = SourceKey::new(&key).and_then(|key| registry.register(key, Shared(source.producer)));
        match registered {
            Ok(contribution) => attached.contributions.entry(namespace.clone()).or_default().push(contribution),
            Err(err) => failures.push(failure(&namespace, "context", format!("context source `{key}`: {err}"))),
        }
    }
    failures
}

fn failure(plugin: &str, hook: &'static str, error: String) -> HookFailure {
    tracing::warn!(plugin, hook, %error, "plugin hook skipped");
    HookFailure { plugin: plugin.to_owned(), hook, error }
}

/// A shared producer registered by value.
struct Shared(Arc<dyn Producer>);

impl Producer for Shared {
    fn produce(&self) -> futures_util::future::BoxFuture<'_, SystemContext> {
        self.0.produce()
    }
}

fn lock(attached: &Mutex<Attached>) -> MutexGuard<'_, Attached> {
    attached.lock().unwrap_or_else(PoisonError::into_inner)
}
