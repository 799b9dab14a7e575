//! `websearch`: searches the web through a pluggable [`SearchBackend`]. The tool exists only when a
//! backend is configured: [`register`] registers it with one, and without one records in the
//! registry why it is missing, so the model never sees a tool that cannot work and a call to it
//! names the reason.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::RegistryError;
use crate::error::ToolError;
use crate::registry::RegistrationId;
use crate::registry::ToolRegistry;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;
use crate::tool::typed;

/// Results asked for when the call gives no number.
pub const DEFAULT_RESULTS: usize = 8;
/// More results than this are never asked for.
pub const MAX_RESULTS: usize = 20;
/// Why the tool is missing when no backend is configured.
pub const NOT_CONFIGURED: &str = "no web search backend configured: websearch is offered only when the host \
                                  provides a search backend; use webfetch on a known URL instead";

/// What the backend is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    pub query: String,
    /// At most this many results (1 to [`MAX_RESULTS`]).
    pub num_results: usize,
}

/// One hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResult {
    pub title: String,
    pub url: String,
    /// A short excerpt of the page.
    pub snippet: String,
}

/// A web search service. A failure is a one-line message the model reads.
pub trait SearchBackend: Send + Sync {
    /// Shown in results and errors (`exa`, `parallel`, ...).
    fn name(&self) -> &str;
    fn search<'a>(
        &'a self,
        query: SearchQuery,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<SearchResult>, String>>;
}

/// Registers `websearch` when a backend is configured; otherwise records [`NOT_CONFIGURED`] as the
/// reason the tool is absent (see [`ToolRegistry::unavailable_reason`]) and returns `None`.
pub fn register(
    registry: &ToolRegistry,
    backend: Option<Arc<dyn SearchBackend>>,
) -> Result<Option<RegistrationId>, RegistryError> {
    match backend {
        Some(backend) => registry.register(typed(WebSearch::new(backend))).map(Some),
        None => {
            registry.mark_unavailable(WebSearch::NAME, NOT_CONFIGURED);
            Ok(None)
        }
    }
}

/// The `websearch` tool.
pub struct WebSearch {
    backend: Arc<dyn SearchBackend>,
}

impl std::fmt::Debug for WebSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearch").field("backend", &self.backend.name()).finish()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchInput {
    /// The search query.
    pub query: String,
    /// How many results to return (default 8, at most 20).
    #[serde(default)]
    pub num_results: Option<usize>,
}

impl WebSearch {
    pub fn new(backend: Arc<dyn SearchBackend>) -> Self {
        Self { backend }
    }
}

impl TypedTool for WebSearch {
    type Input = WebSearchInput;
    const NAME: &'static str = "websearch";

    fn description(&self) -> String {
        "Searches the web and returns result titles, URLs and snippets. Use it for information beyond \
         the project and your knowledge (current documentation, recent releases); then read a result \
         with webfetch. numResults defaults to 8, at most 20."
            .into()
    }

    fn run<'a>(&'a self, input: WebSearchInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let query = input.query.trim().to_owned();
            if query.is_empty() {
                return Err(ToolError::model("The search query is empty; say what to search for"));
            }
            let num_results = input.num_results.unwrap_or(DEFAULT_RESULTS).clamp(1, MAX_RESULTS);
            ctx.ask_any("websearch", &query).await?;
            let backend = self.backend.name();
            let results = self
                .backend
                .search(SearchQuery { query: query.clone(), num_results }, &ctx.cancel)
                .await
                .map_err(|err| ToolError::model(format!("Web search failed ({backend}): {err}")))?;
            let results: Vec<SearchResult> = results.into_iter().take(num_results).collect();
            let text = format_results(&query, backend, &results);
            let mut output = ToolOutput::text(text)
                .with_title(format!("Web search: {query}"))
                .with_metadata("backend", backend)
                .with_metadata("count", results.len());
            output.structured = Some(serde_json::json!({ "results": results }));
            Ok(output)
        })
    }
}

fn format_results(query: &str, backend: &str, results: &[SearchResult]) -> String {
    if results.is_empty() {
        return format!("No search results found for \"{query}\". Try a different query.");
    }
    let mut text = format!("Search results for \"{query}\" ({} from {backend}):\n", results.len());
    for (index, result) in results.iter().enumerate() {
        let snippet = result.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        text.push_str(&format!("\n{}. {}\n   {}\n", index + 1, result.title.trim(), result.url.trim()));
        if !snippet.is_empty() {
            text.push_str(&format!("   {snippet}\n"));
        }
    }
    text
}
