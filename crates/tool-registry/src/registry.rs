//! The Location-scoped tool registry: registration, the definitions an agent's model sees, and
//! settlement of a call into one bounded Model Tool Output.
//!
//! Settlement is the interruption-safe completion region: once a tool has succeeded, its output is
//! bounded before anything is returned, so raw oversized success never leaves the registry.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::RwLock;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use opencode_llm::ToolDefinition;
use serde_json::Map;
use serde_json::Value;

use crate::agent::Agent;
use crate::editor::EditorFiles;
use crate::error::RegistryError;
use crate::error::ToolError;
use crate::location::Location;
use crate::output::Bounded;
use crate::output::OutputStore;
use crate::tool::Media;
use crate::tool::Tool;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;

/// How many identical consecutive calls trigger a `doom_loop` permission ask.
pub const DOOM_LOOP_THRESHOLD: usize = 3;

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub call_id: String,
    pub name: String,
    pub input: Value,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettlementStatus {
    Completed,
    /// A model-correctable failure: the text says what went wrong.
    Error,
    /// The user declined the call's permission ask or question without feedback: the call failed
    /// and the turn halts after it.
    Declined,
    Interrupted,
}

/// The one settled result of a call: what session history stores and the model sees.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    pub call_id: String,
    pub tool: String,
    pub status: SettlementStatus,
    pub title: Option<String>,
    /// The bounded Model Tool Output.
    pub text: String,
    pub media: Vec<Media>,
    /// The tool's structured result, unchanged by bounding.
    pub structured: Option<Value>,
    pub metadata: Map<String, Value>,
    /// The Managed Tool Output File holding the complete text, when it was cut.
    pub managed_path: Option<PathBuf>,
    pub truncated: bool,
    /// Why a truncated output has no file (the preview is lossy).
    pub diagnostic: Option<String>,
}

/// Identifies one registration, to remove it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegistrationId(u64);

/// The tools of one Location.
pub struct ToolRegistry {
    location: Arc<Location>,
    output: OutputStore,
    tools: RwLock<Vec<(RegistrationId, Arc<dyn Tool>)>>,
    next_id: AtomicU64,
    recent: Mutex<HashMap<String, VecDeque<(String, String)>>>,
    /// Why a known tool is not offered (e.g. `websearch` without a backend).
    unavailable: RwLock<HashMap<String, String>>,
    /// The front end's open files, when it keeps them (see [`EditorFiles`]).
    editor: std::sync::OnceLock<Arc<dyn EditorFiles>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("location", &self.location)
            .field("tools", &self.names())
            .finish_non_exhaustive()
    }
}

impl ToolRegistry {
    /// An empty registry for `location`; the tool-output directory is created.
    pub fn new(location: Location, output: OutputStore) -> Result<Self, RegistryError> {
        std::fs::create_dir_all(output.dir())
            .map_err(|err| RegistryError::OutputDir { path: output.dir().to_owned(), reason: err.to_string() })?;
        Ok(Self {
            location: Arc::new(location),
            output,
            tools: RwLock::new(Vec::new()),
            next_id: AtomicU64::new(1),
            recent: Mutex::new(HashMap::new()),
            unavailable: RwLock::new(HashMap::new()),
            editor: std::sync::OnceLock::new(),
        })
    }

    /// Reads and writes text files through `editor` from now on (the first one attached stays).
    pub fn attach_editor(&self, editor: Arc<dyn EditorFiles>) {
        let _already = self.editor.set(editor);
    }

    /// The attached editor, for the [`ToolContext`](crate::ToolContext) of a call.
    pub fn editor(&self) -> Option<Arc<dyn EditorFiles>> {
        self.editor.get().cloned()
    }

    pub fn location(&self) -> &Arc<Location> {
        &self.location
    }

    pub fn output(&self) -> &OutputStore {
        &self.output
    }

    /// Registers a tool; a later registration of the same name wins until it is removed.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<RegistrationId, RegistryError> {
        validate_name(tool.name())?;
        let id = RegistrationId(self.next_id.fetch_add(1, Ordering::Relaxed));
        write(&self.unavailable).remove(tool.name());
        write(&self.tools).push((id, tool));
        Ok(id)
    }

    /// Removes a registration, revealing the previous one of the same name, if any.
    pub fn unregister(&self, id: RegistrationId) -> bool {
        let mut tools = write(&self.tools);
        let before = tools.len();
        tools.retain(|(existing, _)| *existing != id);
        tools.len() != before
    }

    /// Records why a tool is not offered; a call to it settles with this reason. Registering a tool
    /// of that name clears it.
    pub fn mark_unavailable(&self, name: &str, reason: impl Into<String>) {
        write(&self.unavailable).insert(name.to_owned(), reason.into());
    }

    /// Why `name` is not offered, when it is absent for a recorded reason.
    pub fn unavailable_reason(&self, name: &str) -> Option<String> {
        if self.get(name).is_some() {
            return None;
        }
        read(&self.unavailable).get(name).cloned()
    }

    /// The active tool of that name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        read(&self.tools).iter().rev().find(|(_, tool)| tool.name() == name).map(|(_, tool)| Arc::clone(tool))
    }

    /// Active tool names, in first-registration order.
    pub fn names(&self) -> Vec<String> {
        let tools = read(&self.tools);
        let mut names: Vec<String> = Vec::new();
        for (_, tool) in tools.iter() {
            if !names.iter().any(|name| name == tool.name()) {
                names.push(tool.name().to_owned());
            }
        }
        names
    }

    /// The definitions the model sees under `agent`: tools its permissions deny by `*` are hidden.
    pub fn definitions(&self, agent: &Agent) -> Vec<ToolDefinition> {
        self.names()
            .into_iter()
            .filter(|name| !agent.permission.hides_tool(name))
            .filter_map(|name| self.get(&name))
            .map(|tool| ToolDefinition::new(tool.name(), tool.description(), tool.parameters()))
            .collect()
    }

    /// Runs one call and settles it. Only host faults are `Err`; everything the model can act on
    /// (unknown tool, bad input, denied permission, interruption) is a settlement.
    pub async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<Settlement, ToolError> {
        let tool = self.get(&call.name).filter(|_| !ctx.agent.permission.hides_tool(&call.name));
        let Some(tool) = tool else {
            let available = self.definitions(&ctx.agent).into_iter().map(|d| d.name).collect::<Vec<_>>().join(", ");
            let why = self.unavailable_reason(&call.name).map(|reason| format!(" ({reason})")).unwrap_or_default();
            let message =
                format!("Model tried to call unavailable tool '{}'{why}. Available tools: {available}.", call.name);
            return Ok(self.failed(call, &ToolError::model(message)));
        };
        if let Err(err) = self.doom_loop_check(call, ctx).await {
            return self.settle_error(call, err);
        }
        let result = tokio::select! {
            result = tool.execute(call.input.clone(), ctx) => result,
            () = ctx.cancel.cancelled() => Err(ToolError::Interrupted),
        };
        match result {
            Ok(output) => Ok(self.settle(call, output).await),
            Err(err) => self.settle_error(call, err),
        }
    }

    /// Bounds a successful output; never fails (a storage failure makes the preview lossy).
    pub async fn settle(&self, call: &ToolCall, output: ToolOutput) -> Settlement {
        let ToolOutput { title, text, media, structured, metadata, managed_path, truncated, diagnostic } = output;
        let text = if text.is_empty()
            && let Some(value) = &structured
        {
            serde_json::to_string_pretty(value).unwrap_or_default()
        } else {
            text
        };
        let bounded = self.bound(text).await;
        Settlement {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            status: SettlementStatus::Completed,
            title,
            text: bounded.text,
            media,
            structured,
            metadata,
            managed_path: bounded.managed_path.or(managed_path),
            truncated: bounded.truncated || truncated,
            diagnostic: bounded.diagnostic.or(diagnostic),
        }
    }

    async fn bound(&self, text: String) -> Bounded {
        let limits = self.output.limits();
        if text.len() <= limits.max_bytes && text.lines().count() <= limits.max_lines {
            return self.output.bound(&text);
        }
        let store = self.output.clone();
        let fallback = store.clone();
        let text = Arc::new(text);
        let shared = Arc::clone(&text);
        match tokio::task::spawn_blocking(move || store.bound(&shared)).await {
            Ok(bounded) => bounded,
            // The blocking pool is gone (runtime shutting down): bound on this thread instead.
            Err(_) => fallback.bound(&text),
        }
    }

    fn settle_error(&self, call: &ToolCall, err: ToolError) -> Result<Settlement, ToolError> {
        match err {
            ToolError::Fatal(_) => Err(err),
            other => Ok(self.failed(call, &other)),
        }
    }

    fn failed(&self, call: &ToolCall, err: &ToolError) -> Settlement {
        let status = match err {
            ToolError::Interrupted => SettlementStatus::Interrupted,
            err if err.halts_turn() => SettlementStatus::Declined,
            _ => SettlementStatus::Error,
        };
        let bounded = self.output.bound(&err.to_string());
        Settlement {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            status,
            title: None,
            text: bounded.text,
            media: Vec::new(),
            structured: None,
            metadata: Map::new(),
            managed_path: bounded.managed_path,
            truncated: bounded.truncated,
            diagnostic: bounded.diagnostic,
        }
    }

    /// Three identical consecutive calls in a session ask `doom_loop` permission.
    async fn doom_loop_check(&self, call: &ToolCall, ctx: &ToolContext) -> Result<(), ToolError> {
        let key = (call.name.clone(), call.input.to_string());
        let repeated = {
            let mut recent = self.recent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let history = recent.entry(ctx.session_id.clone()).or_default();
            history.push_back(key);
            if history.len() > DOOM_LOOP_THRESHOLD {
                history.pop_front();
            }
            history.len() == DOOM_LOOP_THRESHOLD && history.iter().all(|entry| *entry == history[0])
        };
        if repeated {
            let mut ask = crate::pending::PermissionAsk {
                permission: "doom_loop".into(),
                patterns: vec![call.name.clone()],
                always: vec![call.name.clone()],
                metadata: Map::new(),
            };
            ask.metadata.insert("tool".into(), call.name.clone().into());
            ask.metadata.insert("input".into(), call.input.clone());
            ctx.ask(ask).await?;
        }
        Ok(())
    }
}

/// `^[A-Za-z][A-Za-z0-9_-]{0,63}$`.
pub fn validate_name(name: &str) -> Result<(), RegistryError> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid { Ok(()) } else { Err(RegistryError::InvalidName(name.to_owned())) }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert!(validate_name("read").is_ok());
        assert!(validate_name("mcp_tool-1").is_ok());
        assert!(validate_name("1read").is_err());
        assert!(validate_name("").is_err());
        assert!(validate_name("has space").is_err());
        assert!(validate_name(&"a".repeat(65)).is_err());
    }
}
