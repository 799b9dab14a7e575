//! Built-in tools. Each module is one tool; [`builtin`] registers the standard set.

pub mod apply_patch;
pub mod arity;
pub mod bash;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod list;
pub mod lsp;
pub mod plan;
pub mod question;
pub mod read;
pub mod shell;
pub mod skill;
pub mod task;
pub mod todo;
pub mod webfetch;
pub mod websearch;
pub mod write;

pub use bash::EnvOverlay;
pub use bash::NoEnv;

use std::sync::Arc;

use crate::error::RegistryError;
use crate::registry::ToolRegistry;
use crate::tool::typed;

/// Registers the filesystem and shell tools (`read`, `write`, `edit`, `apply_patch`, `glob`,
/// `grep`, `list`, `bash`). Auxiliary tools need services and are registered by the caller.
pub fn register_filesystem_and_shell(
    registry: &ToolRegistry,
    env: Arc<dyn bash::EnvOverlay>,
) -> Result<(), RegistryError> {
    registry.register(typed(bash::Bash::new(env)))?;
    registry.register(typed(read::Read))?;
    registry.register(typed(glob::Glob))?;
    registry.register(typed(grep::Grep))?;
    registry.register(typed(list::List))?;
    registry.register(typed(edit::Edit))?;
    registry.register(typed(write::Write))?;
    registry.register(typed(apply_patch::ApplyPatch))?;
    Ok(())
}

/// Registers the plan-mode tools (`plan_enter`, `plan_exit`); the agents' rules decide who sees them.
pub fn register_plan_mode(registry: &ToolRegistry, files: plan::PlanFiles) -> Result<(), RegistryError> {
    registry.register(typed(plan::PlanEnter(files.clone())))?;
    registry.register(typed(plan::PlanExit(files)))?;
    Ok(())
}

/// Registers `webfetch`, and `websearch` when a search backend is configured (else the registry
/// records why it is absent).
pub fn register_web(
    registry: &ToolRegistry,
    search: Option<Arc<dyn websearch::SearchBackend>>,
) -> Result<(), RegistryError> {
    registry.register(typed(webfetch::WebFetch::new()?))?;
    websearch::register(registry, search)?;
    Ok(())
}

/// Reads an authorized file as UTF-8 text (model-correctable failures): the editor's buffer when
/// the front end keeps the file open, else the disk.
pub(crate) async fn read_text(
    ctx: &crate::tool::ToolContext,
    resolved: &crate::location::ResolvedPath,
) -> Result<String, crate::error::ToolError> {
    use std::io::Read as _;
    if let Some(text) = editor_text(ctx, resolved).await? {
        return Ok(text);
    }
    let mut file = ctx.location.open_read(resolved)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|err| crate::error::io_model_error("read", &resolved.path, &err))?;
    String::from_utf8(bytes).map_err(|_| {
        crate::error::ToolError::model(format!("{} is not UTF-8 text", ctx.location.display(&resolved.path)))
    })
}

/// The editor's text of an authorized file, when the front end keeps it; `None`: use the disk.
pub(crate) async fn editor_text(
    ctx: &crate::tool::ToolContext,
    resolved: &crate::location::ResolvedPath,
) -> Result<Option<String>, crate::error::ToolError> {
    let Some(editor) = &ctx.editor else { return Ok(None) };
    match editor.read(&ctx.session_id, &resolved.path).await {
        None => Ok(None),
        Some(Ok(text)) => Ok(Some(text)),
        Some(Err(err)) => Err(crate::error::ToolError::model(format!(
            "Cannot read {} from the editor: {err}",
            ctx.location.display(&resolved.path)
        ))),
    }
}

/// Writes an approved change to an authorized file: through the editor when the front end keeps
/// it (its buffer shows the change, the disk is left to it), else atomically to the disk.
pub(crate) async fn write_text(
    ctx: &crate::tool::ToolContext,
    resolved: &crate::location::ResolvedPath,
    content: &str,
) -> Result<(), crate::error::ToolError> {
    if let Some(editor) = &ctx.editor
        && let Some(written) = editor.write(&ctx.session_id, &resolved.path, content).await
    {
        return written.map_err(|err| {
            crate::error::ToolError::model(format!(
                "Cannot write {} through the editor: {err}",
                ctx.location.display(&resolved.path)
            ))
        });
    }
    ctx.location.write_atomic(resolved, content.as_bytes())
}

/// Asks `edit` permission for paths (shown relative to the Location).
pub(crate) async fn ask_edit(
    ctx: &crate::tool::ToolContext,
    paths: &[String],
    diff: Option<String>,
) -> Result<(), crate::error::ToolError> {
    let mut metadata = serde_json::Map::new();
    if let Some(diff) = diff {
        metadata.insert("diff".into(), diff.into());
    }
    ctx.ask(crate::pending::PermissionAsk {
        permission: "edit".into(),
        patterns: paths.to_vec(),
        always: vec!["*".into()],
        metadata,
    })
    .await
}
