//! The tool trait, what a call gets to work with ([`ToolContext`]), and what it returns.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_llm::MediaData;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Map;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::error::ToolError;
use crate::location::Location;
use crate::output::OutputStore;
use crate::pending::PermissionAsk;
use crate::pending::Permissions;
use crate::pending::ToolRef;

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls (`^[A-Za-z][A-Za-z0-9_-]{0,63}$`).
    fn name(&self) -> &str;
    fn description(&self) -> String;
    /// JSON Schema of the input object.
    fn parameters(&self) -> Value;
    /// Runs the call. Model-correctable failures are [`ToolError::Model`]/[`ToolError::Permission`].
    fn execute<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// A tool with typed input: the schema comes from `schemars`, the input is validated by `serde`.
pub trait TypedTool: Send + Sync + 'static {
    type Input: DeserializeOwned + JsonSchema + Send;
    const NAME: &'static str;
    fn description(&self) -> String;
    fn run<'a>(&'a self, input: Self::Input, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// Adapts a [`TypedTool`] into a [`Tool`].
pub fn typed<T: TypedTool>(tool: T) -> Arc<dyn Tool> {
    Arc::new(Typed(tool))
}

struct Typed<T>(T);

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> String {
        self.0.description()
    }

    fn parameters(&self) -> Value {
        schema_for::<T::Input>()
    }

    fn execute<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match serde_json::from_value::<T::Input>(input) {
            Ok(input) => self.0.run(input, ctx),
            Err(err) => Box::pin(async move {
                Err(ToolError::model(format!(
                    "The {} tool was called with invalid arguments: {err}. Rewrite the input so it satisfies the expected schema.",
                    T::NAME
                )))
            }),
        }
    }
}

/// The JSON Schema of a type, as a plain object without the `$schema` marker.
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut value = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Value::Object(object) = &mut value {
        object.remove("$schema");
        object.remove("title");
    }
    value
}

/// What a tool call produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    pub title: Option<String>,
    /// Model-visible text (bounded by the registry).
    pub text: String,
    /// Images and other media, passed to the model as attachments.
    pub media: Vec<Media>,
    /// A validated structured result for session consumers; shown to the model when there is no text.
    pub structured: Option<Value>,
    pub metadata: Map<String, Value>,
    /// Set when the tool already bounded its own text (its Managed Tool Output File survives).
    pub managed_path: Option<std::path::PathBuf>,
    pub truncated: bool,
    pub diagnostic: Option<String>,
}

/// A media attachment.
#[derive(Debug, Clone, PartialEq)]
pub struct Media {
    pub media_type: String,
    pub data: MediaData,
    pub filename: Option<String>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), ..Self::default() }
    }

    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    pub fn with_metadata(mut self, key: &str, value: impl Serialize) -> Self {
        self.metadata.insert(key.to_owned(), serde_json::to_value(value).unwrap_or(Value::Null));
        self
    }

    /// Text a tool bounded itself with [`OutputStore::writer`]; its managed path is kept.
    pub fn bounded(bounded: crate::output::Bounded) -> Self {
        Self {
            text: bounded.text,
            managed_path: bounded.managed_path,
            truncated: bounded.truncated,
            diagnostic: bounded.diagnostic,
            ..Self::default()
        }
    }

    /// A structured-only result.
    pub fn structured(value: Value) -> Self {
        Self { structured: Some(value), ..Self::default() }
    }
}

/// Receives progress metadata while a call runs (titles, partial output for the UI).
pub trait ProgressSink: Send + Sync {
    fn progress(&self, call_id: &str, title: Option<&str>, metadata: &Map<String, Value>);
}

/// Discards progress.
#[derive(Debug, Default)]
pub struct NoProgress;

impl ProgressSink for NoProgress {
    fn progress(&self, _call_id: &str, _title: Option<&str>, _metadata: &Map<String, Value>) {}
}

/// Everything a tool call works with. The agent is the effective agent of the provider turn that
/// issued the call; it is fixed for the call's lifetime.
#[derive(Clone)]
pub struct ToolContext {
    pub session_id: String,
    pub message_id: String,
    pub call_id: String,
    pub agent: Arc<Agent>,
    pub location: Arc<Location>,
    pub cancel: CancellationToken,
    pub permissions: Arc<Permissions>,
    pub progress: Arc<dyn ProgressSink>,
    pub output: OutputStore,
    /// The front end's open files, when it keeps them: text is read from and written to it.
    pub editor: Option<Arc<dyn crate::EditorFiles>>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id)
            .field("call_id", &self.call_id)
            .field("agent", &self.agent.name)
            .field("location", &self.location.root())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// Asks permission under this call's agent; waits for the user if the rules say ask.
    pub async fn ask(&self, ask: PermissionAsk) -> Result<(), ToolError> {
        let tool = ToolRef { message_id: self.message_id.clone(), call_id: self.call_id.clone() };
        self.permissions.ask(&self.session_id, &self.agent, Some(tool), ask, &self.cancel).await
    }

    /// Asks a simple permission: one pattern, approved `always` as the same pattern.
    pub async fn ask_simple(&self, permission: &str, pattern: &str) -> Result<(), ToolError> {
        self.ask(PermissionAsk {
            permission: permission.to_owned(),
            patterns: vec![pattern.to_owned()],
            always: vec![pattern.to_owned()],
            metadata: Map::new(),
        })
        .await
    }

    /// Asks a permission for one pattern, approved `always` for every pattern (`*`).
    pub async fn ask_any(&self, permission: &str, pattern: &str) -> Result<(), ToolError> {
        self.ask(PermissionAsk {
            permission: permission.to_owned(),
            patterns: vec![pattern.to_owned()],
            always: vec!["*".to_owned()],
            metadata: Map::new(),
        })
        .await
    }

    /// Reports progress metadata.
    pub fn progress(&self, title: Option<&str>, metadata: &Map<String, Value>) {
        self.progress.progress(&self.call_id, title, metadata);
    }

    /// Fails with [`ToolError::Interrupted`] once the call is cancelled.
    pub fn check_cancelled(&self) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() { Err(ToolError::Interrupted) } else { Ok(()) }
    }
}
