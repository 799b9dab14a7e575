//! Agents: the built-in set (`build`, `plan`, `general`, `explore`, hidden `compaction`/`title`/
//! `summary`), custom agents from configuration and `agent/*.md` files, and each one's permission
//! ruleset, layered as OpenCode does: defaults, then the agent's own, then the user's `permission`,
//! then `agent.<name>.permission`.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;
use opencode_config::AgentConfig;
use opencode_config::AgentMode;
use opencode_config::PermissionAction;
use opencode_config::PermissionConfig;
use serde_json::Map;
use serde_json::Value;

use crate::permission::Rule;
use crate::permission::Ruleset;
use crate::permission::permission_of_tool;

/// A resolved agent. Tool calls keep the `Arc<Agent>` of the provider turn that issued them.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub description: Option<String>,
    pub mode: AgentMode,
    /// Built into OpenCode (not user-defined).
    pub native: bool,
    pub hidden: bool,
    pub model: Option<String>,
    pub variant: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub prompt: Option<String>,
    pub color: Option<String>,
    pub steps: Option<u32>,
    pub permission: Ruleset,
    pub options: Map<String, Value>,
}

/// Directories that the default rules mention.
#[derive(Debug, Clone, Default)]
pub struct AgentDirs {
    /// Managed tool-output storage (always readable).
    pub tool_output: PathBuf,
    /// OpenCode's temporary directory.
    pub tmp: Option<PathBuf>,
    /// `<data>/plans`, where the `plan` agent may write.
    pub plans: PathBuf,
    /// Skill directories (readable from anywhere).
    pub skills: Vec<PathBuf>,
    /// The home directory for `~/` in patterns.
    pub home: Option<String>,
}

/// Every agent available in a Location, in definition order.
#[derive(Debug, Clone)]
pub struct Agents {
    agents: IndexMap<String, Arc<Agent>>,
}

/// A malformed agent definition file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid agent file {}: {reason}", path.display())]
pub struct AgentFileError {
    pub path: PathBuf,
    pub reason: String,
}

impl AgentFileError {
    pub fn hint(&self) -> &'static str {
        "fix the YAML front matter between the leading `---` lines"
    }
}

impl Agents {
    /// Built-in agents plus `configs` (from `opencode.json` `agent` and agent markdown files), with
    /// the user's top-level `permission` layered over every agent.
    pub fn new(dirs: &AgentDirs, user: Option<&PermissionConfig>, configs: &IndexMap<String, AgentConfig>) -> Self {
        let defaults = default_rules(dirs);
        let user = user.map(|config| Ruleset::from_config(config, dirs.home.as_deref())).unwrap_or_default();
        let mut agents = IndexMap::new();
        for (name, mode, hidden, own) in builtin_rules(dirs) {
            let mut agent = Agent::named(name, mode);
            agent.native = true;
            agent.hidden = hidden;
            agent.description = builtin_description(name).map(str::to_owned);
            agent.permission = defaults.clone().merged(&own).merged(&user);
            if name == "title" {
                agent.temperature = Some(0.5);
            }
            agents.insert(name.to_owned(), agent);
        }
        for (name, config) in configs {
            if config.disable == Some(true) {
                agents.shift_remove(name);
                continue;
            }
            let agent = agents.entry(name.clone()).or_insert_with(|| {
                let mut agent = Agent::named(name, AgentMode::All);
                agent.permission = defaults.clone().merged(&user);
                agent
            });
            agent.apply(config, dirs.home.as_deref());
        }
        Self { agents: agents.into_iter().map(|(name, agent)| (name, Arc::new(agent))).collect() }
    }

    pub fn get(&self, name: &str) -> Option<Arc<Agent>> {
        self.agents.get(name).cloned()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Agent>> {
        self.agents.values()
    }

    /// The agent a session starts with: `preferred` when it is a visible primary agent, else `build`.
    pub fn default_agent(&self, preferred: Option<&str>) -> Option<Arc<Agent>> {
        preferred
            .and_then(|name| self.agents.get(name))
            .filter(|agent| agent.mode != AgentMode::Subagent && !agent.hidden)
            .or_else(|| self.agents.get("build"))
            .or_else(|| self.agents.values().find(|agent| agent.mode != AgentMode::Subagent && !agent.hidden))
            .cloned()
    }

    /// Agents the `task` tool may delegate to: not primary-only, not hidden.
    pub fn subagents(&self) -> impl Iterator<Item = &Arc<Agent>> {
        self.agents.values().filter(|agent| agent.mode != AgentMode::Primary && !agent.hidden)
    }
}

impl Agent {
    fn named(name: &str, mode: AgentMode) -> Self {
        Self {
            name: name.to_owned(),
            description: None,
            mode,
            native: false,
            hidden: false,
            model: None,
            variant: None,
            temperature: None,
            top_p: None,
            prompt: None,
            color: None,
            steps: None,
            permission: Ruleset::default(),
            options: Map::new(),
        }
    }

    fn apply(&mut self, config: &AgentConfig, home: Option<&str>) {
        let set = |field: &mut Option<String>, value: &Option<String>| {
            if value.is_some() {
                field.clone_from(value);
            }
        };
        set(&mut self.model, &config.model);
        set(&mut self.variant, &config.variant);
        set(&mut self.prompt, &config.prompt);
        set(&mut self.description, &config.description);
        set(&mut self.color, &config.color);
        self.temperature = config.temperature.or(self.temperature);
        self.top_p = config.top_p.or(self.top_p);
        self.steps = config.steps.or(self.steps);
        self.mode = config.mode.unwrap_or(self.mode);
        self.hidden = config.hidden.unwrap_or(self.hidden);
        self.options.extend(config.provider_options());
        for (tool, enabled) in config.tools.iter().flatten() {
            let action = if *enabled { PermissionAction::Allow } else { PermissionAction::Deny };
            self.permission.push(Rule::new(permission_of_tool(tool), "*", action));
        }
        if let Some(permission) = &config.permission {
            self.permission = std::mem::take(&mut self.permission).merged(&Ruleset::from_config(permission, home));
        }
    }
}

/// Reads agent definitions from `{agent,agents}/**/*.md` and `{mode,modes}/*.md` under `dir` (a config
/// directory or a project's `.opencode`). The name is the path below that folder without `.md`.
pub fn load_agent_files(dir: &Path) -> Result<IndexMap<String, AgentConfig>, AgentFileError> {
    let mut found = IndexMap::new();
    for folder in ["agent", "agents", "mode", "modes"] {
        let root = dir.join(folder);
        if !root.is_dir() {
            continue;
        }
        let recursive = folder.starts_with("agent");
        let walker =
            ignore::WalkBuilder::new(&root).standard_filters(false).max_depth((!recursive).then_some(1)).build();
        let mut files: Vec<PathBuf> = walker
            .filter_map(Result::ok)
            .map(ignore::DirEntry::into_path)
            .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path)
                .map_err(|err| AgentFileError { path: path.clone(), reason: err.to_string() })?;
            let mut config =
                parse_agent_markdown(&text).map_err(|reason| AgentFileError { path: path.clone(), reason })?;
            if folder.starts_with("mode") {
                config.mode.get_or_insert(AgentMode::Primary);
            }
            let relative = path.strip_prefix(&root).unwrap_or(&path).with_extension("");
            found.insert(relative.to_string_lossy().replace('\\', "/"), config);
        }
    }
    Ok(found)
}

/// An agent markdown file: YAML front matter (agent configuration fields) and the prompt as body.
pub fn parse_agent_markdown(text: &str) -> Result<AgentConfig, String> {
    let (front, body) = split_front_matter(text);
    let mut config: AgentConfig = match front {
        Some(front) if !front.trim().is_empty() => serde_yaml_ng::from_str(front).map_err(|err| err.to_string())?,
        _ => AgentConfig::default(),
    };
    let body = body.trim();
    if !body.is_empty() {
        config.prompt = Some(body.to_owned());
    }
    Ok(config)
}

/// Splits `---\n<yaml>\n---\n<body>`; text without front matter is all body.
pub fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..offset]), &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (None, text)
}

fn rules(entries: &[(&str, &str, PermissionAction)]) -> Ruleset {
    Ruleset(entries.iter().map(|(permission, pattern, action)| Rule::new(*permission, *pattern, *action)).collect())
}

fn dir_pattern(dir: &Path) -> String {
    format!("{}/*", dir.display().to_string().trim_end_matches('/'))
}

/// Applied to every agent first.
fn default_rules(dirs: &AgentDirs) -> Ruleset {
    use PermissionAction::*;
    let mut ruleset = rules(&[("*", "*", Allow), ("doom_loop", "*", Ask), ("external_directory", "*", Ask)]);
    let readable = std::iter::once(&dirs.tool_output).chain(dirs.tmp.iter()).chain(dirs.skills.iter());
    for dir in readable {
        ruleset.push(Rule::new("external_directory", dir_pattern(dir), Allow));
    }
    ruleset.merged(&rules(&[
        ("question", "*", Deny),
        ("plan_enter", "*", Deny),
        ("plan_exit", "*", Deny),
        ("read", "*", Allow),
        ("read", "*.env", Ask),
        ("read", "*.env.*", Ask),
        ("read", "*.env.example", Allow),
    ]))
}

/// `(name, mode, hidden, agent-specific rules)` for each built-in agent.
fn builtin_rules(dirs: &AgentDirs) -> Vec<(&'static str, AgentMode, bool, Ruleset)> {
    use PermissionAction::*;
    let plans = dir_pattern(&dirs.plans);
    let plan_files = format!("{}/*.md", dirs.plans.display().to_string().trim_end_matches('/'));
    let plan = Ruleset(vec![
        Rule::new("question", "*", Allow),
        Rule::new("plan_exit", "*", Allow),
        Rule::new("task", "general", Deny),
        Rule::new("edit", "*", Deny),
        Rule::new("edit", ".opencode/plans/*.md", Allow),
        Rule::new("edit", plan_files, Allow),
        Rule::new("external_directory", plans, Allow),
    ]);
    let mut explore = rules(&[("*", "*", Deny)]);
    for tool in ["grep", "glob", "list", "bash", "webfetch", "websearch", "read"] {
        explore.push(Rule::new(tool, "*", Allow));
    }
    for dir in std::iter::once(&dirs.tool_output).chain(dirs.skills.iter()) {
        explore.push(Rule::new("external_directory", dir_pattern(dir), Allow));
    }
    vec![
        ("build", AgentMode::Primary, false, rules(&[("question", "*", Allow), ("plan_enter", "*", Allow)])),
        ("plan", AgentMode::Primary, false, plan),
        ("general", AgentMode::Subagent, false, rules(&[("todowrite", "*", Deny)])),
        ("explore", AgentMode::Subagent, false, explore),
        ("compaction", AgentMode::Primary, true, rules(&[("*", "*", Deny)])),
        ("title", AgentMode::Primary, true, rules(&[("*", "*", Deny)])),
        ("summary", AgentMode::Primary, true, rules(&[("*", "*", Deny)])),
    ]
}

fn builtin_description(name: &str) -> Option<&'static str> {
    match name {
        "build" => Some("The default agent. Executes tools based on configured permissions."),
        "plan" => Some("Plan mode. Disallows all edit tools."),
        "general" => Some(
            "General-purpose agent for researching complex questions and executing multi-step tasks. \
             Use this agent to execute multiple units of work in parallel.",
        ),
        "explore" => Some(
            "Fast agent specialized for exploring codebases. Use this when you need to quickly find files by \
             patterns, search code for keywords, or answer questions about the codebase.",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_prompt() {
        let config = parse_agent_markdown(
            "---\ndescription: Reviews code\nmode: subagent\ntools:\n  write: false\npermission:\n  bash:\n    \"*\": ask\n    \"git diff *\": allow\n---\nYou review code.\n",
        )
        .unwrap();
        assert_eq!(config.description.as_deref(), Some("Reviews code"));
        assert_eq!(config.mode, Some(AgentMode::Subagent));
        assert_eq!(config.prompt.as_deref(), Some("You review code."));
        assert_eq!(config.permission.unwrap().rules().len(), 2);
    }

    #[test]
    fn text_without_front_matter_is_prompt() {
        assert_eq!(split_front_matter("hello"), (None, "hello"));
        assert_eq!(split_front_matter("---\na: 1\n---\nbody"), (Some("a: 1\n"), "body"));
    }
}
