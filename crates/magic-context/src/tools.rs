//! The agent's tools: `ctx_reduce` (queue drops of tagged content), `ctx_expand` (read raw history
//! the compartments summarise), `ctx_note` (session notes), `ctx_memory` (project memories) and
//! `ctx_search` (memories and raw history). Each runs its database work on a blocking thread.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_tool_registry::Tool;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::ToolOutput;
use opencode_tool_registry::TypedTool;
use opencode_tool_registry::typed;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::engine::Engine;
use crate::error::Error;
use crate::plugin::Shared;

/// `ctx_expand` answers at most this many characters.
const EXPAND_CHARS: usize = 60_000;

/// The tools, `ctx_reduce` only when the agent sees tags.
pub(crate) fn all(shared: &Arc<Shared>, ctx_reduce: bool) -> Vec<Arc<dyn Tool>> {
    let mut tools = vec![
        typed(Expand(Arc::clone(shared))),
        typed(Note(Arc::clone(shared))),
        typed(MemoryTool(Arc::clone(shared))),
        typed(Search(Arc::clone(shared))),
    ];
    if ctx_reduce {
        tools.insert(0, typed(Reduce(Arc::clone(shared))));
    }
    tools
}

/// Runs `work` on the engine off the async threads.
fn with_engine<'a, F>(shared: &Arc<Shared>, work: F) -> BoxFuture<'a, Result<ToolOutput, ToolError>>
where
    F: FnOnce(&mut Engine, &Shared) -> Result<String, Error> + Send + 'static,
{
    let shared = Arc::clone(shared);
    Box::pin(async move {
        let outcome = tokio::task::spawn_blocking(move || {
            let mut engine = shared.engine()?;
            work(&mut engine, &shared)
        })
        .await
        .map_err(|err| ToolError::Fatal(format!("magic context tool did not finish: {err}")))?;
        match outcome {
            Ok(text) => Ok(ToolOutput::text(text)),
            Err(Error::Invalid(message)) => Err(ToolError::Model(message)),
            Err(other) => Err(ToolError::Fatal(other.to_string())),
        }
    })
}

struct Reduce(Arc<Shared>);

#[derive(Debug, Deserialize, JsonSchema)]
struct ReduceInput {
    /// Tags to drop, as ranges: "3-5,12". Each tag is the §N§ number shown before content.
    drop: String,
}

impl TypedTool for Reduce {
    type Input = ReduceInput;
    const NAME: &'static str = "ctx_reduce";

    fn description(&self) -> String {
        "Drop tagged content you no longer need from the context (tool outputs you have acted on, \
         superseded reads). Tags are the §N§ numbers before each part. Drops apply at the next \
         cache-friendly moment; the newest tags are protected and wait. The full text stays \
         reachable with ctx_search and ctx_expand. Drop deliberately, not in bulk."
            .into()
    }

    fn run<'a>(&'a self, input: ReduceInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let session = ctx.session_id.clone();
        with_engine(&self.0, move |engine, shared| engine.reduce(&session, &input.drop, (shared.clock)()))
    }
}

struct Expand(Arc<Shared>);

#[derive(Debug, Deserialize, JsonSchema)]
struct ExpandInput {
    /// First message number (as shown in the session history headings).
    start: usize,
    /// Last message number, inclusive.
    end: usize,
}

impl TypedTool for Expand {
    type Input = ExpandInput;
    const NAME: &'static str = "ctx_expand";

    fn description(&self) -> String {
        "Read the raw messages a <session-history> section summarises, by message numbers \
         (the `## start-end` headings)."
            .into()
    }

    fn run<'a>(&'a self, input: ExpandInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let session = ctx.session_id.clone();
        with_engine(&self.0, move |engine, _| engine.expand(&session, input.start, input.end, EXPAND_CHARS))
    }
}

struct Note(Arc<Shared>);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum NoteAction {
    Write,
    Read,
    Dismiss,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct NoteInput {
    action: NoteAction,
    /// The note (write).
    #[serde(default)]
    content: Option<String>,
    /// The note to dismiss.
    #[serde(default)]
    note_id: Option<i64>,
}

impl TypedTool for Note {
    type Input = NoteInput;
    const NAME: &'static str = "ctx_note";

    fn description(&self) -> String {
        "Session notes that survive context management: write one, read them, or dismiss one by id.".into()
    }

    fn run<'a>(&'a self, input: NoteInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let session = ctx.session_id.clone();
        with_engine(&self.0, move |engine, shared| match input.action {
            NoteAction::Write => {
                let content = required(input.content, "content")?;
                let id = engine.add_note(&session, &content, (shared.clock)())?;
                Ok(format!("note {id} saved"))
            }
            NoteAction::Read => {
                let notes = engine.notes(&session)?;
                Ok(if notes.is_empty() {
                    "no notes".into()
                } else {
                    notes.iter().map(|(id, note)| format!("[{id}] {note}")).collect::<Vec<_>>().join("\n")
                })
            }
            NoteAction::Dismiss => {
                let id = required(input.note_id, "note_id")?;
                if engine.dismiss_note(&session, id)? {
                    Ok(format!("note {id} dismissed"))
                } else {
                    Err(Error::Invalid(format!("no active note {id} in this session")))
                }
            }
        })
    }
}

struct MemoryTool(Arc<Shared>);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum MemoryAction {
    Write,
    Archive,
    List,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct MemoryInput {
    action: MemoryAction,
    /// The memory (write).
    #[serde(default)]
    content: Option<String>,
    /// PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, CONFIG_VALUES or NAMING (write).
    #[serde(default)]
    category: Option<String>,
    /// The memory to archive.
    #[serde(default)]
    id: Option<i64>,
}

const CATEGORIES: [&str; 5] = ["PROJECT_RULES", "ARCHITECTURE", "CONSTRAINTS", "CONFIG_VALUES", "NAMING"];

impl TypedTool for MemoryTool {
    type Input = MemoryInput;
    const NAME: &'static str = "ctx_memory";

    fn description(&self) -> String {
        "Project memories shown to every session of this project: write a durable fact \
         (category PROJECT_RULES, ARCHITECTURE, CONSTRAINTS, CONFIG_VALUES or NAMING), archive an \
         outdated one by id, or list them."
            .into()
    }

    fn run<'a>(&'a self, input: MemoryInput, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        with_engine(&self.0, move |engine, shared| {
            let project = shared.project();
            match input.action {
                MemoryAction::Write => {
                    let content = required(input.content, "content")?;
                    let category = required(input.category, "category")?.to_ascii_uppercase();
                    if !CATEGORIES.contains(&category.as_str()) {
                        return Err(Error::Invalid(format!(
                            "unknown category {category}: use one of {}",
                            CATEGORIES.join(", ")
                        )));
                    }
                    let (id, new) = engine.write_memory(&project, &category, &content, (shared.clock)())?;
                    Ok(if new { format!("memory {id} saved") } else { format!("memory {id} already exists") })
                }
                MemoryAction::Archive => {
                    let id = required(input.id, "id")?;
                    if engine.archive_memory(&project, id)? {
                        Ok(format!("memory {id} archived"))
                    } else {
                        Err(Error::Invalid(format!("no active memory {id} in this project")))
                    }
                }
                MemoryAction::List => {
                    let memories = engine.memories(&project)?;
                    let lines: Vec<String> =
                        memories.iter().map(|m| format!("[{}] {}: {}", m.id, m.category, m.content)).collect();
                    Ok(if lines.is_empty() { "no memories".into() } else { lines.join("\n") })
                }
            }
        })
    }
}

struct Search(Arc<Shared>);

#[derive(Debug, Deserialize, JsonSchema)]
struct SearchInput {
    /// Words to look for.
    query: String,
    /// How many hits (default 10).
    #[serde(default)]
    limit: Option<usize>,
}

impl TypedTool for Search {
    type Input = SearchInput;
    const NAME: &'static str = "ctx_search";

    fn description(&self) -> String {
        "Search project memories and this session's full raw history (including content dropped \
         or summarised out of the context). Hits show message numbers for ctx_expand."
            .into()
    }

    fn run<'a>(&'a self, input: SearchInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let session = ctx.session_id.clone();
        with_engine(&self.0, move |engine, shared| {
            let limit = input.limit.unwrap_or(10).clamp(1, 50);
            let hits = engine.search(&session, &shared.project(), &input.query, limit)?;
            if hits.is_empty() {
                return Ok(format!("nothing found for `{}`", input.query));
            }
            let lines: Vec<String> =
                hits.iter().map(|hit| format!("[{} {}] {}", hit.source, hit.reference, hit.text)).collect();
            Ok(lines.join("\n"))
        })
    }
}

fn required<T>(value: Option<T>, field: &str) -> Result<T, Error> {
    value.ok_or_else(|| Error::Invalid(format!("`{field}` is required for this action")))
}
