//! Magic Context as a plugin: the messages transform runs the pass, the historian runs after it
//! out of band, and the agent tools join the session's tool registry.
//!
//! Fail closed: when `context.db` cannot be opened the plugin does not start, so its transform
//! never runs and the host's built-in compaction alone protects the window. A pass that fails
//! leaves the messages untouched (the host skips the failed hook) and is logged.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::OnceLock;
use std::sync::PoisonError;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::future::BoxFuture;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::CommandInput;
use opencode_plugin_host::CommandOutcome;
use opencode_plugin_host::HookError;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::MessagesOutput;
use opencode_plugin_host::ModelLimit;
use opencode_plugin_host::ModelRef;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginCommand;
use opencode_plugin_host::PluginHostBuilder;
use opencode_plugin_host::PluginNotice;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::SideModel;
use opencode_plugin_host::SideRequest;
use opencode_plugin_host::StartContext;
use opencode_plugin_host::TextCompleteInput;
use opencode_plugin_host::TextCompleteOutput;
use opencode_plugin_host::ToolAfterInput;
use opencode_plugin_host::ToolAfterOutput;
use opencode_plugin_host::commands::CommandFuture;
use opencode_tool_registry::Tool;

use crate::config::MagicContextConfig;
use crate::engine::Engine;
use crate::engine::PassInput;
use crate::engine::Status;
use crate::error::Error;
use crate::historian;
use crate::store::SideCall;
use crate::store::Store;
use crate::tools;

/// Milliseconds now: the wall clock, or a simulated one in tests and benchmarks.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The database file inside the data directory.
pub const DATABASE_FILE: &str = "context.db";

/// The plugin. Build it with [`MagicContext::from_config`], which returns `None` when the
/// configuration leaves Magic Context off (then register nothing: nothing of it runs).
pub struct MagicContext {
    config: MagicContextConfig,
    database: PathBuf,
    clock: Clock,
    shared: Arc<Shared>,
}

/// What the plugin and its tools share once started.
pub(crate) struct Shared {
    pub(crate) engine: OnceLock<Mutex<Engine>>,
    pub(crate) project: OnceLock<String>,
    pub(crate) clock: Clock,
    /// A historian run is under way (one at a time; a due run while one is going is skipped,
    /// the next pass asks again).
    pub(crate) historian_running: AtomicBool,
    /// The host's side model, when it has one: the historian then asks the small model.
    pub(crate) side: OnceLock<Arc<dyn SideModel>>,
}

impl Shared {
    fn new(clock: Clock) -> Self {
        Self {
            engine: OnceLock::new(),
            project: OnceLock::new(),
            clock,
            historian_running: AtomicBool::new(false),
            side: OnceLock::new(),
        }
    }

    /// The engine, once the plugin started.
    pub(crate) fn engine(&self) -> Result<MutexGuard<'_, Engine>, Error> {
        let engine = self.engine.get().ok_or_else(|| Error::Invalid("magic context is not started".into()))?;
        Ok(engine.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn project(&self) -> String {
        self.project.get().cloned().unwrap_or_default()
    }
}

impl MagicContext {
    /// The plugin for the `magic_context` section of `config`, its database under `data_dir`
    /// (`<data_dir>/magic-context/context.db` unless the section names a directory); `None` when
    /// the section is absent or turns it off.
    pub fn from_config(config: &opencode_config::Config, data_dir: &std::path::Path) -> Result<Option<Self>, Error> {
        let Some(settings) = MagicContextConfig::from_config(config)? else { return Ok(None) };
        Ok(Some(Self::new(settings, data_dir)))
    }

    pub fn new(config: MagicContextConfig, data_dir: &std::path::Path) -> Self {
        let directory = config.data_dir.clone().unwrap_or_else(|| data_dir.join("magic-context"));
        let clock: Clock = Arc::new(wall_clock);
        let shared = Arc::new(Shared::new(Arc::clone(&clock)));
        Self { config, database: directory.join(DATABASE_FILE), clock, shared }
    }

    /// Replaces the clock (simulated time).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.shared = Arc::new(Shared::new(Arc::clone(&clock)));
        self.clock = clock;
        self
    }

    pub fn database(&self) -> &std::path::Path {
        &self.database
    }

    /// `/ctx-status` for a session (`None` before its first pass).
    pub fn status(&self, session_id: &str) -> Result<Option<Status>, Error> {
        self.shared.engine()?.status(session_id)
    }

    /// `/ctx-flush`: the session's next pass executes pending work.
    pub fn flush(&self, session_id: &str) -> Result<bool, Error> {
        self.shared.engine()?.flush(session_id)
    }

    fn open(&self, ctx: &StartContext) -> Result<(), Error> {
        let store = Store::open(&self.database)?;
        let engine = Engine::new(self.config.clone(), store);
        let _first = self.shared.engine.set(Mutex::new(engine));
        let _first = self.shared.project.set(ctx.directory.display().to_string());
        Ok(())
    }

    async fn transform(&self, input: &ChatInput, output: &mut MessagesOutput) -> Result<(), HookError> {
        let pass = PassInput {
            session_id: input.session_id.clone(),
            project: self.shared.project(),
            model_key: format!("{}/{}", input.model.provider_id, input.model.model_id),
            now_ms: (self.clock)(),
            window: input.limit.and_then(usable_window),
        };
        let messages = std::mem::take(&mut output.messages);
        let shared = Arc::clone(&self.shared);
        let model = input.model.clone();
        let (messages, outcome) = tokio::task::spawn_blocking(move || run_pass(&shared, &pass, model, messages))
            .await
            .map_err(|err| HookError::new(format!("magic context pass did not finish: {err}")))?;
        output.messages = messages;
        outcome.map_err(|err| HookError::new(err.to_string()))
    }
}

/// One pass, and the historian after it: awaited when usage is past the block line (the pass is
/// then run again so this very request benefits; the digest, not a model call), otherwise in the
/// background, one run at a time.
fn run_pass(
    shared: &Arc<Shared>,
    pass: &PassInput,
    model: ModelRef,
    messages: Vec<opencode_llm::Message>,
) -> (Vec<opencode_llm::Message>, Result<(), Error>) {
    let original = messages.clone();
    let mut transformed = messages;
    let outcome = (|| -> Result<(), Error> {
        let mut engine = shared.engine()?;
        let report = engine.transform(pass, &mut transformed)?;
        if report.block {
            engine.run_historian(&pass.session_id, pass.now_ms)?;
            engine.flush(&pass.session_id)?;
            transformed = original.clone();
            engine.transform(pass, &mut transformed)?;
        } else if report.historian_due && !shared.historian_running.swap(true, Ordering::AcqRel) {
            spawn_historian(shared, pass.session_id.clone(), model, pass.now_ms);
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => (transformed, Ok(())),
        Err(err) => (original, Err(err)),
    }
}

/// How long the small model may take over one historian run.
const HISTORIAN_TIMEOUT: Duration = Duration::from_secs(300);

/// Starts a historian run: on the small model when the host offers one (and an async runtime is
/// there to await it), else the digest on a thread of its own.
fn spawn_historian(shared: &Arc<Shared>, session: String, model: ModelRef, now_ms: u64) {
    let shared = Arc::clone(shared);
    match (shared.side.get().cloned(), tokio::runtime::Handle::try_current()) {
        (Some(side), Ok(handle)) => {
            handle.spawn(async move {
                if let Err(err) = model_historian(&shared, side, &session, model, now_ms).await {
                    tracing::warn!(session, error = %err, "magic context historian failed");
                }
                shared.historian_running.store(false, Ordering::Release);
            });
        }
        _ => {
            std::thread::spawn(move || {
                let published = shared.engine().and_then(|mut engine| engine.run_historian(&session, now_ms));
                if let Err(err) = published {
                    tracing::warn!(session, error = %err, "magic context historian failed");
                }
                shared.historian_running.store(false, Ordering::Release);
            });
        }
    }
}

/// The historian on the small model: the job is read and the result published on blocking
/// threads, the model awaited in between without holding the engine. An answer that fails or
/// breaks the rules gives way to the digest, so history is summarised either way. Every call is
/// recorded with its usage and cost (the host has added the cost to the session's).
async fn model_historian(
    shared: &Arc<Shared>,
    side: Arc<dyn SideModel>,
    session: &str,
    model: ModelRef,
    now_ms: u64,
) -> Result<usize, Error> {
    let (reader, id) = (Arc::clone(shared), session.to_owned());
    let job = blocking(move || reader.engine()?.historian_job(&id)).await?;
    let Some(job) = job else { return Ok(0) };
    let request = SideRequest {
        session_id: session.to_owned(),
        model,
        purpose: "historian".into(),
        system: historian::SYSTEM.into(),
        prompt: historian::prompt(&job.rows, &job.memories),
        max_output_tokens: 8_000,
    };
    let (parsed, call) = match tokio::time::timeout(HISTORIAN_TIMEOUT, side.complete(request)).await {
        Ok(Ok(answer)) => {
            let parsed = historian::parse(&answer.text, &job.rows, job.next_sequence);
            let call = SideCall {
                purpose: "historian".into(),
                model: answer.model,
                input_tokens: answer.usage.input_tokens,
                output_tokens: answer.usage.output_tokens,
                cost: answer.cost,
                outcome: parsed.as_ref().err().cloned().unwrap_or_else(|| "used".into()),
            };
            (parsed, Some(call))
        }
        Ok(Err(err)) => (Err(err), None),
        Err(_) => (Err(format!("no answer within {} s", HISTORIAN_TIMEOUT.as_secs())), None),
    };
    let answer = parsed.unwrap_or_else(|why| {
        tracing::warn!(session, reason = %why, "magic context historian: the small model's answer is not used, digesting instead");
        historian::Answer { compartments: historian::digest(&job.rows, job.next_sequence), facts: Vec::new() }
    });
    let writer = Arc::clone(shared);
    blocking(move || {
        let mut engine = writer.engine()?;
        if let Some(call) = &call {
            engine.record_side_call(&job.session_id, call, now_ms)?;
        }
        engine.publish_historian(&job, &answer, now_ms)
    })
    .await
}

/// Runs database work off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(|err| Error::Background(err.to_string()))?
}

/// Adds Magic Context to a plugin host being built when `config` turns it on, as an optional
/// plugin (if its state cannot open it does not start, and the host runs without it). With the
/// section absent or off the builder is returned untouched; a malformed section becomes a notice
/// in the host's ready report.
pub fn register(
    builder: PluginHostBuilder,
    config: &opencode_config::Config,
    data_dir: &std::path::Path,
) -> PluginHostBuilder {
    match MagicContext::from_config(config, data_dir) {
        Ok(Some(plugin)) => builder.plugin(Arc::new(plugin), Requirement::Optional),
        Ok(None) => builder,
        Err(err) => builder.notice(PluginNotice { source: "magic_context".into(), reason: err.to_string() }),
    }
}

/// The window a request may fill: the context minus the output reserve (the output limit, at
/// most a quarter of the context); `None` when the host does not know the model's limits.
fn usable_window(limit: ModelLimit) -> Option<u64> {
    (limit.context > 0).then(|| limit.context - limit.output.min(limit.context / 4))
}

fn wall_clock() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |elapsed| elapsed.as_millis() as u64)
}

impl Plugin for MagicContext {
    fn namespace(&self) -> &str {
        "magic-context"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([
            HookName::ChatMessagesTransform,
            HookName::Tool,
            HookName::ToolExecuteAfter,
            HookName::TextComplete,
        ])
    }

    /// It keeps the window itself; the runtime's proactive compaction stands down while it runs.
    fn manages_context(&self) -> bool {
        true
    }

    fn commands(&self) -> Vec<PluginCommand> {
        vec![
            PluginCommand {
                name: "ctx-status".into(),
                description: "Magic Context: usage, history and cache state".into(),
                hint: None,
            },
            PluginCommand {
                name: "ctx-flush".into(),
                description: "Magic Context: apply pending work at the next turn".into(),
                hint: None,
            },
        ]
    }

    fn run_command<'a>(&'a self, name: &'a str, input: &'a CommandInput) -> CommandFuture<'a> {
        Box::pin(async move {
            // The engine's database work runs off the async threads, as the pass does.
            let (shared, session) = (Arc::clone(&self.shared), input.session_id.clone());
            let answer = match name {
                "ctx-status" => match blocking(move || shared.engine()?.status(&session)).await {
                    Ok(Some(status)) => format!("Magic Context: {}", status.report((self.clock)())),
                    Ok(None) => {
                        "Magic Context has not shaped this session yet: it does from its first turn.".to_owned()
                    }
                    Err(err) => return Err(err.to_string()),
                },
                "ctx-flush" => {
                    blocking(move || shared.engine()?.flush(&session)).await.map_err(|err| err.to_string())?;
                    "Magic Context runs its pending drops and folds at this session's next turn.".to_owned()
                }
                other => return Err(format!("Magic Context has no command {other:?}")),
            };
            Ok(CommandOutcome::Reply(answer))
        })
    }

    fn start<'a>(&'a self, ctx: &'a StartContext) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { self.open(ctx).map_err(|err| err.to_string()) })
    }

    fn attach_side_model(&self, model: Arc<dyn SideModel>) {
        let _first = self.shared.side.set(model);
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        tools::all(&self.shared, self.config.ctx_reduce_enabled)
    }

    fn chat_messages_transform<'a>(&'a self, input: &'a ChatInput, output: &'a mut MessagesOutput) -> HookFuture<'a> {
        Box::pin(self.transform(input, output))
    }

    /// The model sees `§N§` before earlier parts and sometimes copies the habit: its finished text
    /// is stored without them, so tags never pile up on tags.
    fn text_complete<'a>(
        &'a self,
        _input: &'a TextCompleteInput,
        output: &'a mut TextCompleteOutput,
    ) -> HookFuture<'a> {
        if output.text.contains('§') {
            output.text = crate::engine::strip_tags(&output.text);
        }
        Box::pin(async { Ok(()) })
    }

    /// Appends the `ctx_reduce` nudge to a tool's output when one is due; the host stores the
    /// output with it, so later requests replay it byte for byte.
    fn tool_execute_after<'a>(&'a self, input: &'a ToolAfterInput, output: &'a mut ToolAfterOutput) -> HookFuture<'a> {
        Box::pin(async move {
            let shared = Arc::clone(&self.shared);
            let session = input.session_id.clone();
            let nudge = tokio::task::spawn_blocking(move || shared.engine()?.nudge(&session))
                .await
                .map_err(|err| HookError::new(format!("magic context nudge did not finish: {err}")))?
                .map_err(|err| HookError::new(err.to_string()))?;
            if let Some(nudge) = nudge {
                output.output.push_str("\n\n");
                output.output.push_str(&nudge);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usable_window_reserves_output_up_to_a_quarter_of_the_context() {
        assert_eq!(usable_window(ModelLimit { context: 200_000, output: 64_000 }), Some(150_000));
        assert_eq!(usable_window(ModelLimit { context: 200_000, output: 8_000 }), Some(192_000));
        assert_eq!(usable_window(ModelLimit { context: 0, output: 8_000 }), None);
    }
}
