//! Discovery and merge of every configuration source, in OpenCode's order (later wins):
//!
//! 1. the global config dir: `config.json`, `opencode.json`, `opencode.jsonc`;
//! 2. the file named by `OPENCODE_CONFIG`;
//! 3. project files: every `opencode.jsonc`, then every `opencode.json`, found from the working
//!    directory up to the worktree root, applied root-first (skipped with
//!    `OPENCODE_DISABLE_PROJECT_CONFIG`);
//! 4. config directories: every `.opencode/` up the tree (root-first, also skipped with
//!    `OPENCODE_DISABLE_PROJECT_CONFIG`), `~/.opencode`, then `OPENCODE_CONFIG_DIR`: each
//!    contributes `opencode.json(c)`, agent markdown files (`agent/*.md`, `agents/*.md`) and command
//!    markdown files (`command/**/*.md`, `commands/**/*.md`, merged into `command`);
//! 5. `OPENCODE_CONFIG_CONTENT` (inline JSONC);
//! 6. `OPENCODE_PERMISSION` (JSON) merged into `permission`.
//!
//! Objects merge key by key; `plugin` and `instructions` concatenate (without duplicates); other
//! values are replaced. A source that cannot be read or parsed is reported and skipped; the rest
//! still loads. The source of each top-level key is recorded for `opencode debug config`.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::config::KNOWN_KEYS;
use crate::{Config, ConfigError, ConfigWarning, Env, Paths, PermissionConfig, jsonc, markdown, substitute};

/// Everything the loader reads besides files: the environment, the directories, where we are.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub env: Env,
    pub paths: Paths,
    /// The working directory project files are searched from.
    pub cwd: PathBuf,
    /// Where the upward search stops; `None` means the enclosing git worktree, or `cwd` outside git.
    pub worktree: Option<PathBuf>,
}

impl LoadOptions {
    /// Options for `cwd` under `env`, with the directories `env` implies.
    pub fn new(env: Env, cwd: impl Into<PathBuf>) -> Self {
        let paths = env.paths();
        Self { env, paths, cwd: cwd.into(), worktree: None }
    }
}

/// Where a piece of configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// A file in the global config dir.
    Global(PathBuf),
    /// The file named by `OPENCODE_CONFIG`.
    EnvFile(PathBuf),
    /// An `opencode.json(c)` found walking up from the working directory.
    Project(PathBuf),
    /// An `opencode.json(c)` inside a `.opencode/` (or `OPENCODE_CONFIG_DIR`) directory.
    Directory(PathBuf),
    /// An agent markdown file.
    AgentFile(PathBuf),
    /// A command markdown file.
    CommandFile(PathBuf),
    /// `OPENCODE_CONFIG_CONTENT`.
    EnvContent,
    /// `OPENCODE_PERMISSION`.
    EnvPermission,
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Global(path)
            | Self::EnvFile(path)
            | Self::Project(path)
            | Self::Directory(path)
            | Self::AgentFile(path)
            | Self::CommandFile(path) => write!(f, "{}", path.display()),
            Self::EnvContent => f.write_str("OPENCODE_CONFIG_CONTENT"),
            Self::EnvPermission => f.write_str("OPENCODE_PERMISSION"),
        }
    }
}

impl ConfigSource {
    /// A short label for the kind of source.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Global(_) => "global",
            Self::EnvFile(_) => "OPENCODE_CONFIG",
            Self::Project(_) => "project",
            Self::Directory(_) => "directory",
            Self::AgentFile(_) => "agent file",
            Self::CommandFile(_) => "command file",
            Self::EnvContent => "env",
            Self::EnvPermission => "env",
        }
    }
}

/// The merged configuration with its provenance and what went wrong along the way.
#[derive(Debug, Default)]
pub struct LoadedConfig {
    pub config: Config,
    /// Per top-level key, every source that set it, in merge order (the last one wins).
    pub sources: IndexMap<String, Vec<ConfigSource>>,
    /// Every source that was applied, in order.
    pub applied: Vec<ConfigSource>,
    /// Sources that were skipped because they could not be read or parsed.
    pub errors: Vec<ConfigError>,
    pub warnings: Vec<ConfigWarning>,
}

/// Loads and merges every configuration source.
pub fn load(options: &LoadOptions) -> LoadedConfig {
    let mut loader = Loader { options, merged: Map::new(), out: LoadedConfig::default() };
    loader.run();
    loader.finish()
}

/// The enclosing git worktree of `cwd` (the nearest ancestor holding `.git`), if any.
pub fn find_worktree(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).map(Path::to_path_buf)
}

/// The git project `directory` belongs to, as OpenCode names it: the first root commit of its
/// worktree; `None` outside a repository with commits, or without git. Blocking (runs git).
pub fn project_id(directory: &Path) -> Option<String> {
    let worktree = find_worktree(directory)?;
    let output = std::process::Command::new("git")
        .args(["rev-list", "--max-parents=0", "--all"])
        .current_dir(&worktree)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    text.lines().map(str::trim).filter(|line| !line.is_empty()).min().map(str::to_owned)
}

/// Merges `over` into `base`: objects key by key, `plugin`/`instructions` arrays concatenated
/// without duplicates, anything else replaced.
pub fn merge_values(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(Value::Array(existing)), Value::Array(more)) if key == "plugin" || key == "instructions" => {
                for item in more {
                    if !existing.contains(&item) {
                        existing.push(item);
                    }
                }
            }
            (Some(existing), value) => deep_merge(existing, value),
            (None, value) => {
                base.insert(key, value);
            }
        }
    }
}

struct Loader<'a> {
    options: &'a LoadOptions,
    merged: Map<String, Value>,
    out: LoadedConfig,
}

impl Loader<'_> {
    fn run(&mut self) {
        let env = &self.options.env;
        let global = &self.options.paths.config;
        for name in ["config.json", "opencode.json", "opencode.jsonc"] {
            self.file(ConfigSource::Global(global.join(name)));
        }
        if let Some(path) = env.get("OPENCODE_CONFIG") {
            self.file(ConfigSource::EnvFile(self.options.cwd.join(path)));
        }
        let project = !env.flag("OPENCODE_DISABLE_PROJECT_CONFIG");
        let dirs = self.walk_up();
        if project {
            for name in ["opencode.jsonc", "opencode.json"] {
                for dir in &dirs {
                    self.file(ConfigSource::Project(dir.join(name)));
                }
            }
        }
        for dir in self.config_dirs(&dirs, project) {
            for name in ["opencode.jsonc", "opencode.json"] {
                self.file(ConfigSource::Directory(dir.join(name)));
            }
            self.agent_files(&dir);
            self.command_files(&dir);
        }
        if let Some(content) = env.get("OPENCODE_CONFIG_CONTENT") {
            self.text(ConfigSource::EnvContent, content, &self.options.cwd.clone());
        }
        if let Some(permission) = env.get("OPENCODE_PERMISSION") {
            self.permission(permission);
        }
    }

    /// Directories from the worktree root down to the working directory.
    fn walk_up(&self) -> Vec<PathBuf> {
        let cwd = &self.options.cwd;
        let stop = self.options.worktree.clone().or_else(|| find_worktree(cwd)).unwrap_or_else(|| cwd.clone());
        let mut dirs: Vec<PathBuf> = Vec::new();
        for dir in cwd.ancestors() {
            dirs.push(dir.to_path_buf());
            if dir == stop {
                break;
            }
        }
        if dirs.last().is_none_or(|last| *last != stop) {
            // `cwd` is outside the worktree: only `cwd` itself counts.
            dirs.truncate(1);
        }
        dirs.reverse();
        dirs
    }

    fn config_dirs(&self, project_dirs: &[PathBuf], project: bool) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if project {
            dirs.extend(project_dirs.iter().map(|dir| dir.join(".opencode")).filter(|dir| dir.is_dir()));
        }
        if let Some(home) = self.options.env.get("OPENCODE_TEST_HOME").or_else(|| self.options.env.get("HOME")) {
            let dir = Path::new(home).join(".opencode");
            if dir.is_dir() && !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        if let Some(dir) = self.options.env.get("OPENCODE_CONFIG_DIR").map(PathBuf::from) {
            // Its opencode.json(c) was already read as the global config; agent files are read here.
            dirs.retain(|known| *known != dir);
            dirs.push(dir);
        } else {
            dirs.insert(0, self.options.paths.config.clone());
        }
        dirs
    }

    fn file(&mut self, source: ConfigSource) {
        let path = match &source {
            ConfigSource::Global(path)
            | ConfigSource::EnvFile(path)
            | ConfigSource::Project(path)
            | ConfigSource::Directory(path)
            | ConfigSource::AgentFile(path)
            | ConfigSource::CommandFile(path) => path.clone(),
            ConfigSource::EnvContent | ConfigSource::EnvPermission => return,
        };
        if self.out.applied.contains(&source) || self.already_read(&path) {
            return;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                if matches!(source, ConfigSource::EnvFile(_)) {
                    self.out
                        .errors
                        .push(ConfigError::Read { path, reason: "not found (named by OPENCODE_CONFIG)".into() });
                }
                return;
            }
            Err(err) => {
                self.out.errors.push(ConfigError::Read { path, reason: err.to_string() });
                return;
            }
        };
        let dir = path.parent().map_or_else(|| self.options.cwd.clone(), Path::to_path_buf);
        self.text(source, &text, &dir);
    }

    /// The same file reached twice (the global dir is also a config dir) is applied once.
    fn already_read(&self, path: &Path) -> bool {
        self.out.applied.iter().any(|source| match source {
            ConfigSource::Global(p)
            | ConfigSource::EnvFile(p)
            | ConfigSource::Project(p)
            | ConfigSource::Directory(p) => p == path,
            _ => false,
        })
    }

    fn text(&mut self, source: ConfigSource, text: &str, dir: &Path) {
        let label = source.to_string();
        let text = match substitute::substitute(text, dir, &self.options.env) {
            Ok(text) => text,
            Err(missing) => {
                self.out.errors.push(ConfigError::FileReference {
                    origin: label,
                    reference: missing.reference,
                    path: missing.resolved,
                    reason: missing.reason,
                });
                return;
            }
        };
        let parse_error = |err: jsonc::JsoncError| ConfigError::Parse {
            origin: label.clone(),
            line: err.line,
            column: err.column,
            message: err.message,
        };
        let value = match jsonc::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                self.out.errors.push(ConfigError::Invalid { origin: label, message: "expected a JSON object".into() });
                return;
            }
            Err(err) => {
                self.out.errors.push(parse_error(err));
                return;
            }
        };
        // Type-check this source alone so a wrong value is reported at its position in this file.
        if let Err(err) = jsonc::from_str::<Config>(&text) {
            self.out.errors.push(parse_error(err));
            return;
        }
        self.apply(source, value);
    }

    fn apply(&mut self, source: ConfigSource, value: Map<String, Value>) {
        for key in value.keys() {
            if !KNOWN_KEYS.contains(&key.as_str()) {
                self.out.warnings.push(ConfigWarning {
                    origin: source.to_string(),
                    message: format!("unknown key `{key}` (kept, but this version does not use it)"),
                });
            }
            self.out.sources.entry(key.clone()).or_default().push(source.clone());
        }
        merge_values(&mut self.merged, value);
        self.out.applied.push(source);
    }

    fn agent_files(&mut self, dir: &Path) {
        for file in markdown::agent_files(dir) {
            self.agent_file(file);
        }
    }

    fn agent_file(&mut self, file: markdown::AgentFile) {
        let primary = file.primary;
        let source = ConfigSource::AgentFile(file.path.clone());
        self.markdown_entry(source, "agent", file.name, &file.path, |text| {
            let mut agent = markdown::agent_from_markdown(text)?;
            if let Some(map) = agent.as_object_mut().filter(|_| primary) {
                map.entry("mode").or_insert_with(|| Value::String("primary".into()));
            }
            Ok(agent)
        });
    }

    fn command_files(&mut self, dir: &Path) {
        for file in crate::commands::command_files(dir) {
            let source = ConfigSource::CommandFile(file.path.clone());
            self.markdown_entry(source, "command", file.name, &file.path, crate::commands::command_from_markdown);
        }
    }

    /// Reads a markdown definition file and applies it as `{ <key>: { <name>: <parsed> } }`; an
    /// unreadable or malformed file is reported and skipped.
    fn markdown_entry(
        &mut self,
        source: ConfigSource,
        key: &str,
        name: String,
        path: &Path,
        parse: impl FnOnce(&str) -> Result<Value, jsonc::JsoncError>,
    ) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) => {
                self.out.errors.push(ConfigError::Read { path: path.to_path_buf(), reason: err.to_string() });
                return;
            }
        };
        match parse(&text) {
            Ok(value) => {
                let mut entry = Map::new();
                entry.insert(name, value);
                let mut layer = Map::new();
                layer.insert(key.into(), Value::Object(entry));
                self.apply(source, layer);
            }
            Err(err) => self.out.errors.push(ConfigError::Parse {
                origin: source.to_string(),
                line: err.line,
                column: err.column,
                message: err.message,
            }),
        }
    }

    fn permission(&mut self, text: &str) {
        let source = ConfigSource::EnvPermission;
        let over = match jsonc::from_str::<PermissionConfig>(text) {
            Ok(over) => over,
            Err(err) => {
                self.out.errors.push(ConfigError::Parse {
                    origin: source.to_string(),
                    line: err.line,
                    column: err.column,
                    message: err.message,
                });
                return;
            }
        };
        let base = self.merged.get("permission").and_then(|value| serde_json::from_value(value.clone()).ok());
        let merged = match base {
            Some(base) => PermissionConfig::merged_with(base, over),
            None => over,
        };
        match serde_json::to_value(merged) {
            Ok(value) => {
                self.merged.insert("permission".into(), value);
                self.out.sources.entry("permission".into()).or_default().push(source.clone());
                self.out.applied.push(source);
            }
            Err(err) => {
                self.out.errors.push(ConfigError::Invalid { origin: source.to_string(), message: err.to_string() })
            }
        }
    }

    fn finish(mut self) -> LoadedConfig {
        let merged = std::mem::take(&mut self.merged);
        let mut config = match serde_json::from_value::<Config>(Value::Object(merged.clone())) {
            Ok(config) => config,
            Err(err) => {
                self.out
                    .errors
                    .push(ConfigError::Invalid { origin: "merged configuration".into(), message: err.to_string() });
                Config::default()
            }
        };
        config.extra = merged.into_iter().filter(|(key, _)| !KNOWN_KEYS.contains(&key.as_str())).collect();
        // `mode.<name>` is the deprecated spelling of a primary agent.
        for (name, mut agent) in std::mem::take(&mut config.mode) {
            agent.mode.get_or_insert(crate::AgentMode::Primary);
            config.agent.entry(name).or_insert(agent);
        }
        self.out.config = config;
        self.out
    }
}

fn deep_merge(into: &mut Value, over: Value) {
    match (into, over) {
        (Value::Object(into), Value::Object(over)) => {
            for (key, value) in over {
                match into.get_mut(&key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, over) => *into = over,
    }
}
