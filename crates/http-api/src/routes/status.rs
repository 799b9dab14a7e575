//! What an instance offers besides sessions, as OpenCode's clients ask for it at start-up:
//! `GET /lsp` (running language servers), `GET /formatter` (formatters run after edits), `GET /skill`
//! (the skills found for the directory) and `GET /provider/auth` (how each provider can be connected).
//!
//! - `/lsp` is always `[]`: OpenCode lists the language-server clients it has spawned, and none is
//!   spawned before a file is touched. This server spawns none of its own; the clients the session
//!   runtime's `lsp` tool may start (only with config `lsp` servers) are not visible here.
//! - `/formatter` is always `[]`: edits are not formatted here. OpenCode lists its built-in formatters
//!   with the ones it would run enabled; listing them would promise formatting this server never does.
//! - `/skill` runs the tool registry's discovery: `{skill,skills}/**/SKILL.md` in the config
//!   directories (the global one or `OPENCODE_CONFIG_DIR`, every `.opencode/` from the worktree down,
//!   `~/.opencode`), then `.claude/skills` and `.agents/skills` from the directory up to the worktree
//!   (left out with `OPENCODE_DISABLE_EXTERNAL_SKILLS`; `.claude` also with
//!   `OPENCODE_DISABLE_CLAUDE_CODE[_SKILLS]`). Config `skills.paths`/`skills.urls` are not read.
//! - `/provider/auth` offers `{type: "api", label: "API key"}` for every enabled provider that some
//!   model of it can be reached with a key (the catalog plans a route). OAuth sign-in flows are not
//!   offered: `/provider/{id}/oauth/*` does not exist here. Amazon Bedrock (AWS credentials) and
//!   GitHub Copilot (sign-in only) are left out.

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use opencode_catalog::Catalog;
use opencode_catalog::Provider;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_tool_registry::tools::skill;
use schemars::JsonSchema;
use serde::Serialize;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::instance::Instance;
use crate::state::AppState;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/lsp", "lsp.status", "Running language servers (none)", lsp_route).returns::<Vec<LspStatus>>(),
        Op::get("/formatter", "formatter.status", "Formatters run after edits (none)", formatter_route)
            .returns::<Vec<FormatterStatus>>(),
        Op::get("/skill", "app.skills", "Skills found for the instance directory", skills_route)
            .returns::<Vec<SkillInfo>>(),
        Op::get("/provider/auth", "provider.auth", "Auth methods per provider", provider_auth_route)
            .returns::<BTreeMap<String, Vec<AuthMethod>>>(),
    ]
}

/// `LSPStatus`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct LspStatus {
    id: String,
    name: String,
    root: String,
    /// `connected` or `error`.
    status: String,
}

/// `FormatterStatus`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct FormatterStatus {
    name: String,
    extensions: Vec<String>,
    enabled: bool,
}

/// One skill of `GET /skill`.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct SkillInfo {
    name: String,
    description: String,
    /// The `SKILL.md` file.
    location: String,
    /// The instructions (the file without its front matter).
    content: String,
}

/// `ProviderAuthMethod` (only `api` here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct AuthMethod {
    /// `api` (a key) or `oauth`.
    #[serde(rename = "type")]
    kind: &'static str,
    label: &'static str,
}

async fn lsp_route() -> Json<Vec<LspStatus>> {
    Json(Vec::new())
}

async fn formatter_route() -> Json<Vec<FormatterStatus>> {
    Json(Vec::new())
}

async fn skills_route(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<Vec<SkillInfo>>, ApiError> {
    let (paths, env) = (s.inner.paths.clone(), i.env().clone());
    blocking(move || Ok(Json(skills(&i, &paths, &env)))).await
}

async fn provider_auth_route(Dir(i): Dir) -> Result<Json<BTreeMap<String, Vec<AuthMethod>>>, ApiError> {
    blocking(move || {
        let (catalog, config) = (i.catalog()?, i.config());
        Ok(Json(auth_methods(&catalog, |id| config.config.provider_enabled(id))))
    })
    .await
}

fn skills(instance: &Instance, paths: &Paths, env: &Env) -> Vec<SkillInfo> {
    let (directory, worktree) = (&instance.directory, &instance.worktree);
    let stop = if directory.starts_with(worktree) { worktree.as_path() } else { directory.as_path() };
    let dirs = config_dirs(directory, stop, paths, env);
    let no_external = env.flag("OPENCODE_DISABLE_EXTERNAL_SKILLS");
    let no_claude =
        no_external || env.flag("OPENCODE_DISABLE_CLAUDE_CODE") || env.flag("OPENCODE_DISABLE_CLAUDE_CODE_SKILLS");
    let external = |path: &Path, folder: &str| {
        path.ancestors().any(|dir| dir.ends_with(folder)) && !dirs.iter().any(|config| path.starts_with(config))
    };
    skill::discover(&dirs, directory, Some(stop))
        .into_iter()
        .filter(|found| !(no_claude && external(&found.path, ".claude/skills")))
        .filter(|found| !(no_external && external(&found.path, ".agents/skills")))
        .map(|found| SkillInfo {
            name: found.name,
            description: found.description,
            location: found.path.to_string_lossy().into_owned(),
            content: found.content,
        })
        .collect()
}

/// The configuration directories, as the configuration loader walks them: the global one (or
/// `OPENCODE_CONFIG_DIR`, last), every `.opencode/` from `stop` down to `directory` (unless project
/// configuration is disabled), then `~/.opencode`.
fn config_dirs(directory: &Path, stop: &Path, paths: &Paths, env: &Env) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if !env.flag("OPENCODE_DISABLE_PROJECT_CONFIG") {
        let mut walked: Vec<PathBuf> =
            directory.ancestors().take_while(|dir| dir.starts_with(stop)).map(|dir| dir.join(".opencode")).collect();
        walked.reverse();
        dirs.extend(walked.into_iter().filter(|dir| dir.is_dir()));
    }
    if let Some(home) = env.get("OPENCODE_TEST_HOME").or_else(|| env.get("HOME")) {
        let dir = Path::new(home).join(".opencode");
        if dir.is_dir() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    match env.get("OPENCODE_CONFIG_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            dirs.retain(|known| *known != dir);
            dirs.push(dir);
        }
        None => dirs.insert(0, paths.config.clone()),
    }
    dirs
}

/// Providers not connected with a key even when the catalog can route them.
const NOT_BY_KEY: &[&str] = &["amazon-bedrock", "github-copilot"];

fn auth_methods(catalog: &Catalog, enabled: impl Fn(&str) -> bool) -> BTreeMap<String, Vec<AuthMethod>> {
    catalog
        .providers()
        .filter(|provider| enabled(&provider.id) && by_key(catalog, provider))
        .map(|provider| (provider.id.clone(), vec![AuthMethod { kind: "api", label: "API key" }]))
        .collect()
}

fn by_key(catalog: &Catalog, provider: &Provider) -> bool {
    provider
        .models
        .keys()
        .any(|model| catalog.plan(&provider.id, model).is_ok_and(|plan| !NOT_BY_KEY.contains(&plan.adapter)))
        && !NOT_BY_KEY.contains(&provider.id.as_str())
}
