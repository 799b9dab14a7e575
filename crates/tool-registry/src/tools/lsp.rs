//! `lsp` (OpenCode's experimental language-server tool) and the diagnostics `edit` and `write`
//! append, as OpenCode does, when a language server handles the file.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use serde_json::json;

use crate::error::RegistryError;
use crate::error::ToolError;
use crate::lsp::Diagnostic;
use crate::lsp::Lsp;
use crate::lsp::path_to_uri;
use crate::registry::ToolRegistry;
use crate::tool::Tool;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;
use crate::tool::typed;

/// At most this many errors of a file are shown after an edit (OpenCode's limit).
pub const MAX_DIAGNOSTICS_PER_FILE: usize = 20;

/// Why `lsp` is not offered when no server is configured.
pub const NOT_CONFIGURED: &str = "no language server is configured under `lsp`";

/// Registers `lsp` and wraps `edit` and `write` so they report the file's errors, when `lsp` has
/// servers; otherwise records why `lsp` is unavailable. Call after the filesystem tools.
pub fn register(registry: &ToolRegistry, lsp: Arc<Lsp>) -> Result<(), RegistryError> {
    if lsp.servers().is_empty() {
        registry.mark_unavailable(LspTool::NAME, NOT_CONFIGURED);
        return Ok(());
    }
    registry.register(typed(LspTool { lsp: Arc::clone(&lsp) }))?;
    registry.register(Arc::new(WithDiagnostics { inner: typed(super::edit::Edit), lsp: Arc::clone(&lsp) }))?;
    registry.register(Arc::new(WithDiagnostics { inner: typed(super::write::Write), lsp }))?;
    Ok(())
}

/// The `lsp` tool.
#[derive(Debug)]
pub struct LspTool {
    lsp: Arc<Lsp>,
}

/// What to ask the language server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Operation {
    Diagnostics,
    GoToDefinition,
    FindReferences,
    Hover,
    DocumentSymbol,
    WorkspaceSymbol,
    GoToImplementation,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LspInput {
    /// The operation to perform.
    pub operation: Operation,
    /// The file to ask about.
    pub file_path: String,
    /// The line (1-based), for position operations.
    #[serde(default)]
    pub line: Option<u32>,
    /// The character offset in the line (1-based), for position operations.
    #[serde(default)]
    pub character: Option<u32>,
    /// The symbol to search for (workspaceSymbol).
    #[serde(default)]
    pub query: Option<String>,
}

impl TypedTool for LspTool {
    type Input = LspInput;
    const NAME: &'static str = "lsp";

    fn description(&self) -> String {
        "Asks the project's language server about a file: diagnostics, goToDefinition, findReferences, hover, \
         documentSymbol, workspaceSymbol (with query) or goToImplementation. Lines and characters are 1-based."
            .into()
    }

    fn run<'a>(&'a self, input: LspInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            ctx.ask_any("lsp", "*").await?;
            let resolved = ctx.location.authorize(ctx, &input.file_path, false).await?;
            let shown = ctx.location.display(&resolved.path);
            if !resolved.path.is_file() {
                return Err(ToolError::model(format!("File not found: {shown}")));
            }
            if !self.lsp.handles(&resolved.path) {
                return Err(ToolError::model("No LSP server available for this file type."));
            }
            let (line, character) = (input.line.unwrap_or(1).max(1), input.character.unwrap_or(1).max(1));
            let title = format!("{} {shown}:{line}:{character}", operation_name(input.operation));
            let diagnostics = self.lsp.touch(&resolved.path, true).await.map_err(lsp_failure)?;
            let document = json!({"uri": path_to_uri(&resolved.path)});
            let position = json!({"line": line - 1, "character": character - 1});
            let at = json!({"textDocument": document, "position": position});
            let results = match input.operation {
                Operation::Diagnostics => {
                    let text = if diagnostics.is_empty() {
                        "No diagnostics.".to_owned()
                    } else {
                        diagnostics.iter().map(Diagnostic::pretty).collect::<Vec<_>>().join("\n")
                    };
                    return Ok(ToolOutput::text(text).with_title(title).with_metadata("diagnostics", &diagnostics));
                }
                Operation::GoToDefinition => self.lsp.request(&resolved.path, "textDocument/definition", at).await,
                Operation::GoToImplementation => {
                    self.lsp.request(&resolved.path, "textDocument/implementation", at).await
                }
                Operation::Hover => self.lsp.request(&resolved.path, "textDocument/hover", at).await,
                Operation::FindReferences => {
                    let mut params = at;
                    params["context"] = json!({"includeDeclaration": true});
                    self.lsp.request(&resolved.path, "textDocument/references", params).await
                }
                Operation::DocumentSymbol => {
                    self.lsp
                        .request(&resolved.path, "textDocument/documentSymbol", json!({"textDocument": document}))
                        .await
                }
                Operation::WorkspaceSymbol => {
                    let query = input.query.unwrap_or_default();
                    self.lsp.request_all("workspace/symbol", json!({"query": query})).await
                }
            }
            .map_err(lsp_failure)?;
            let flat: Vec<Value> = results
                .into_iter()
                .flat_map(|result| match result {
                    Value::Array(items) => items,
                    other => vec![other],
                })
                .collect();
            let text = if flat.is_empty() {
                format!("No results found for {}", operation_name(input.operation))
            } else {
                serde_json::to_string_pretty(&flat).unwrap_or_default()
            };
            Ok(ToolOutput::text(text).with_title(title).with_metadata("result", &flat))
        })
    }
}

/// Runs `edit` or `write`, then appends the file's errors from its language servers.
struct WithDiagnostics {
    inner: Arc<dyn Tool>,
    lsp: Arc<Lsp>,
}

impl Tool for WithDiagnostics {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> String {
        self.inner.description()
    }

    fn parameters(&self) -> Value {
        self.inner.parameters()
    }

    fn execute<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let file = input.get("filePath").and_then(Value::as_str).map(str::to_owned);
            let mut output = self.inner.execute(input, ctx).await?;
            let Some(file) = file else { return Ok(output) };
            let Ok(resolved) = ctx.location.resolve(&file) else { return Ok(output) };
            if !self.lsp.handles(&resolved.path) {
                return Ok(output);
            }
            match self.lsp.touch(&resolved.path, true).await {
                Ok(diagnostics) => {
                    let path = resolved.path.display().to_string();
                    output.text.push_str(&report_errors(&path, &diagnostics));
                    output.metadata.insert("diagnostics".into(), json!({ path: diagnostics }));
                }
                // The edit succeeded; a broken server must not turn it into a failure.
                Err(err) => tracing::warn!(%err, hint = err.hint(), "no diagnostics after an edit"),
            }
            Ok(output)
        })
    }
}

/// OpenCode's block listing a file's errors (empty when there are none).
pub fn report_errors(path: &str, diagnostics: &[Diagnostic]) -> String {
    let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|diagnostic| diagnostic.is_error()).collect();
    if errors.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = errors.iter().take(MAX_DIAGNOSTICS_PER_FILE).map(|error| error.pretty()).collect();
    let more = if errors.len() > MAX_DIAGNOSTICS_PER_FILE {
        format!("\n... and {} more", errors.len() - MAX_DIAGNOSTICS_PER_FILE)
    } else {
        String::new()
    };
    format!(
        "\n\nLSP errors detected in this file, please fix:\n<diagnostics file=\"{path}\">\n{}{more}\n</diagnostics>",
        shown.join("\n")
    )
}

fn operation_name(operation: Operation) -> &'static str {
    match operation {
        Operation::Diagnostics => "diagnostics",
        Operation::GoToDefinition => "goToDefinition",
        Operation::FindReferences => "findReferences",
        Operation::Hover => "hover",
        Operation::DocumentSymbol => "documentSymbol",
        Operation::WorkspaceSymbol => "workspaceSymbol",
        Operation::GoToImplementation => "goToImplementation",
    }
}

fn lsp_failure(err: crate::lsp::LspError) -> ToolError {
    ToolError::model(format!("{err} ({})", err.hint()))
}
