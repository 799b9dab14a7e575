//! `core/instructions`: the instruction service and its one ordered aggregate Context Source.
//!
//! Discovery, in order (duplicates keep their first place):
//! 1. Global: `<config dir>/AGENTS.md`, else `~/.claude/CLAUDE.md` unless Claude Code compatibility is
//!    disabled.
//! 2. Project (skipped when project config is disabled or the Location is outside the project):
//!    every `AGENTS.md` from the Location directory up to the project root, nearest first; when
//!    there is none, every `CLAUDE.md` the same way (unless disabled). The first name with a match wins.
//! 3. Config `instructions`: `http(s)://` URLs through an [`InstructionFetcher`] (skipped without one,
//!    or when the fetch fails); `~/` expanded; absolute paths and globs matched as given; relative ones
//!    matched in every directory from the Location up to the project root (project config only).
//!
//! A file found but then unreadable makes the whole source Unavailable (the previous set stays in
//! force) rather than silently shrinking it. When nothing is found the producer yields no source at
//! all, so a previously admitted set is withdrawn with its removal text.

use std::collections::HashSet;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde::Serialize;

use super::INSTRUCTIONS;
use crate::key::SourceKey;
use crate::registry::Producer;
use crate::source::ContextSource;
use crate::source::Loaded;
use crate::source::SystemContext;

/// Where to look, as plain inputs (the runtime wires configuration and flags into it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstructionSettings {
    /// OpenCode's global config directory (holds the global `AGENTS.md`).
    pub global_config_dir: PathBuf,
    /// The user's home directory, for `~/` and `~/.claude/CLAUDE.md`.
    pub home_dir: Option<PathBuf>,
    /// The Location directory.
    pub directory: PathBuf,
    /// The project (worktree) root: the upward walk stops there.
    pub project_root: PathBuf,
    /// The config `instructions` list: paths, globs or `http(s)` URLs.
    pub instructions: Vec<String>,
    /// `OPENCODE_DISABLE_PROJECT_CONFIG`: no project files, no relative config entries.
    pub disable_project_config: bool,
    /// `OPENCODE_DISABLE_CLAUDE_CODE` (or `_PROMPT`): no `CLAUDE.md` files.
    pub disable_claude_code: bool,
}

/// Fetches instruction text from a URL; `None` when it cannot (the entry is then skipped).
pub trait InstructionFetcher: Send + Sync + 'static {
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Option<String>>;
}

/// One loaded instruction file (or URL) and its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionFile {
    pub path: String,
    pub content: String,
}

/// The instruction service: observes the current instruction set and contributes it as a producer.
#[derive(Clone)]
pub struct Instructions {
    settings: Arc<InstructionSettings>,
    fetcher: Option<Arc<dyn InstructionFetcher>>,
}

impl Instructions {
    pub fn new(settings: InstructionSettings) -> Self {
        Self { settings: Arc::new(settings), fetcher: None }
    }

    /// Enables URL entries of the config `instructions` list.
    pub fn with_fetcher(mut self, fetcher: impl InstructionFetcher) -> Self {
        self.fetcher = Some(Arc::new(fetcher));
        self
    }

    /// Discovers and reads the current ordered instruction set.
    pub async fn observe(&self) -> Loaded<Vec<InstructionFile>> {
        let settings = Arc::clone(&self.settings);
        // Directory walks and reads are blocking file system work: off the async threads when a
        // tokio runtime is there to take them, inline otherwise.
        let candidates = if tokio::runtime::Handle::try_current().is_ok() {
            match tokio::task::spawn_blocking(move || read_files(&settings)).await {
                Ok(candidates) => candidates,
                Err(_) => return Loaded::Unavailable,
            }
        } else {
            read_files(&settings)
        };
        let Loaded::Value(candidates) = candidates else {
            return Loaded::Unavailable;
        };
        let mut files = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            match candidate {
                Candidate::File(file) => files.push(file),
                Candidate::Url(url) => files.extend(self.fetch(url).await),
            }
        }
        Loaded::Value(files)
    }

    /// The current context: the aggregate source, or nothing when no instructions exist.
    pub async fn context(&self) -> SystemContext {
        match self.observe().await {
            Loaded::Value(files) if files.is_empty() => SystemContext::empty(),
            observed => SystemContext::make(InstructionsSource { key: SourceKey::builtin(INSTRUCTIONS), observed }),
        }
    }

    async fn fetch(&self, url: String) -> Option<InstructionFile> {
        let Some(fetcher) = &self.fetcher else {
            tracing::warn!(%url, "instruction URL skipped: no fetcher is configured");
            return None;
        };
        let content = fetcher.fetch(&url).await;
        if content.is_none() {
            tracing::warn!(%url, "instruction URL skipped: fetch failed");
        }
        content.map(|content| InstructionFile { path: url, content })
    }
}

impl Producer for Instructions {
    fn produce(&self) -> BoxFuture<'_, SystemContext> {
        Box::pin(self.context())
    }
}

/// The aggregate source over one observation.
struct InstructionsSource {
    key: SourceKey,
    observed: Loaded<Vec<InstructionFile>>,
}

impl ContextSource for InstructionsSource {
    type Value = Vec<InstructionFile>;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<Vec<InstructionFile>> {
        self.observed.clone()
    }

    fn baseline(&self, current: &Vec<InstructionFile>) -> String {
        render(current)
    }

    fn update(&self, _previous: &Vec<InstructionFile>, current: &Vec<InstructionFile>) -> String {
        format!("These instructions replace all previously loaded ambient instructions.\n\n{}", render(current))
    }

    fn removed(&self, _previous: &Vec<InstructionFile>) -> Option<String> {
        Some("Previously loaded instructions no longer apply.".to_owned())
    }
}

fn render(files: &[InstructionFile]) -> String {
    let parts: Vec<String> =
        files.iter().map(|file| format!("Instructions from: {}\n{}", file.path, file.content)).collect();
    parts.join("\n\n")
}

enum Candidate {
    File(InstructionFile),
    Url(String),
}

/// Discovers candidates in order and reads the files; Unavailable when a found file cannot be read.
fn read_files(settings: &InstructionSettings) -> Loaded<Vec<Candidate>> {
    let mut out = Vec::new();
    for found in discover(settings) {
        match found {
            Found::Path(path) => match std::fs::read(&path) {
                Ok(bytes) => out.push(Candidate::File(InstructionFile {
                    path: path.display().to_string(),
                    content: String::from_utf8_lossy(&bytes).into_owned(),
                })),
                Err(err) => {
                    tracing::warn!(path = %path.display(), %err, "instruction file unreadable; instructions unavailable");
                    return Loaded::Unavailable;
                }
            },
            Found::Url(url) => out.push(Candidate::Url(url)),
        }
    }
    Loaded::Value(out)
}

enum Found {
    Path(PathBuf),
    Url(String),
}

/// Every instruction location, in order, without duplicates.
fn discover(settings: &InstructionSettings) -> Vec<Found> {
    let directory = resolve(&settings.directory);
    let root = resolve(&settings.project_root);
    let project = !settings.disable_project_config && directory.starts_with(&root);

    let mut paths = Vec::new();
    paths.extend(global_file(settings));
    if project {
        let names: &[&str] = if settings.disable_claude_code { &["AGENTS.md"] } else { &["AGENTS.md", "CLAUDE.md"] };
        if let Some(found) = names.iter().map(|name| find_up(name, &directory, &root)).find(|found| !found.is_empty()) {
            paths.extend(found);
        }
    }

    let mut found: Vec<Found> = Vec::new();
    let mut seen = HashSet::new();
    let mut push_path = |path: PathBuf, found: &mut Vec<Found>| {
        if seen.insert(resolve(&path)) {
            found.push(Found::Path(path));
        }
    };
    for path in paths {
        push_path(path, &mut found);
    }
    for entry in &settings.instructions {
        if entry.starts_with("https://") || entry.starts_with("http://") {
            found.push(Found::Url(entry.clone()));
            continue;
        }
        let expanded = expand_home(entry, settings.home_dir.as_deref());
        let matches = if Path::new(&expanded).is_absolute() {
            glob_files(&expanded)
        } else if project {
            ancestors(&directory, &root).flat_map(|dir| glob_in(dir, &expanded)).collect()
        } else {
            Vec::new()
        };
        for path in matches {
            push_path(path, &mut found);
        }
    }
    found
}

fn global_file(settings: &InstructionSettings) -> Option<PathBuf> {
    let agents = settings.global_config_dir.join("AGENTS.md");
    if agents.is_file() {
        return Some(agents);
    }
    let claude = settings.home_dir.as_ref().filter(|_| !settings.disable_claude_code)?.join(".claude/CLAUDE.md");
    claude.is_file().then_some(claude)
}

/// Every `name` from `start` up to `stop` (inclusive), nearest first.
fn find_up(name: &str, start: &Path, stop: &Path) -> Vec<PathBuf> {
    ancestors(start, stop).map(|dir| dir.join(name)).filter(|path| path.is_file()).collect()
}

/// `start` and its parents up to and including `stop`.
fn ancestors<'a>(start: &'a Path, stop: &'a Path) -> impl Iterator<Item = &'a Path> {
    let mut done = false;
    start.ancestors().take_while(move |dir| {
        let keep = !done;
        done = done || *dir == stop;
        keep
    })
}

fn glob_in(dir: &Path, pattern: &str) -> Vec<PathBuf> {
    let Some(dir) = dir.to_str() else {
        return Vec::new();
    };
    glob_files(&format!("{}/{pattern}", glob::Pattern::escape(dir)))
}

/// Files matching `pattern`, in the glob crate's stable (sorted) order.
fn glob_files(pattern: &str) -> Vec<PathBuf> {
    match glob::glob(pattern) {
        Ok(paths) => paths.flatten().filter(|path| path.is_file()).collect(),
        Err(err) => {
            tracing::warn!(%pattern, %err, "invalid instructions pattern skipped");
            Vec::new()
        }
    }
}

fn expand_home(entry: &str, home: Option<&Path>) -> String {
    match (entry.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest).display().to_string(),
        _ => entry.to_owned(),
    }
}

/// The canonical path when it exists, so symlinked and relative spellings compare equal.
fn resolve(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_stop_at_the_root_inclusive() {
        let dirs: Vec<_> = ancestors(Path::new("/p/a/b"), Path::new("/p")).collect();
        assert_eq!(dirs, [Path::new("/p/a/b"), Path::new("/p/a"), Path::new("/p")]);
        let unrelated: Vec<_> = ancestors(Path::new("/q/a"), Path::new("/p")).collect();
        assert_eq!(unrelated, [Path::new("/q/a"), Path::new("/q"), Path::new("/")]);
    }

    #[test]
    fn home_is_expanded_only_with_a_home() {
        assert_eq!(expand_home("~/x.md", Some(Path::new("/h"))), "/h/x.md");
        assert_eq!(expand_home("~/x.md", None), "~/x.md");
        assert_eq!(expand_home("docs/*.md", Some(Path::new("/h"))), "docs/*.md");
    }
}
