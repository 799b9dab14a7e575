//! Agents: the built-in set (`build`, `plan`, `general`, `explore`, hidden `compaction`/`title`/
//! `summary`), custom agents from configuration and `agent/*.md` files, and each one's permission
//! ruleset, layered as OpenCode does: defaults, then the agent's own, then the user's `permission`,
//! then `agent.<name>.permission`.
//!
//! This is the one agent model: the tool host reads an agent's permission ruleset, and the session
//! runtime reads the same [`Agent`] for its prompt, model, generation controls and step allowance.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;
use opencode_config::AgentConfig;
use opencode_config::AgentMode;
use opencode_config::Config;
use opencode_config::Paths;
use opencode_config::PermissionAction;
use opencode_config::PermissionConfig;
use serde_json::Map;
use serde_json::Value;

use crate::permission::Rule;
use crate::permission::Ruleset;
use crate::permission::permission_of_tool;

/// The agent a session starts with when neither the session nor `default_agent` names one.
pub const DEFAULT_AGENT: &str = "build";

/// A resolved agent. Tool calls keep the `Arc<Agent>` of the provider turn that issued them.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub description: Option<String>,
    pub mode: AgentMode,
    /// Built into OpenCode (not user-defined).
    pub native: bool,
    pub hidden: bool,
    /// `provider/model`: overrides the configured model for this agent's turns.
    pub model: Option<String>,
    /// Catalog variant of `model` (only applied together with `model`).
    pub variant: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// Replaces the default provider prompt as the first system part.
    pub prompt: Option<String>,
    pub color: Option<String>,
    /// Maximum provider turns per promoted input; the last one is text-only.
    pub steps: Option<u32>,
    pub permission: Ruleset,
    /// Provider options (`options` plus unknown keys of the agent's configuration).
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

impl AgentDirs {
    /// The directories of `paths`: managed tool output, plans, and the system temporary directory.
    pub fn standard(paths: &Paths) -> Self {
        Self {
            tool_output: paths.tool_output_dir(),
            tmp: Some(std::env::temp_dir()),
            plans: paths.plans_dir(),
            skills: Vec::new(),
            home: None,
        }
    }
}

/// Every agent available in a Location, in definition order.
#[derive(Debug, Clone)]
pub struct Agents {
    agents: IndexMap<String, Arc<Agent>>,
    /// `default_agent` from configuration, honoured by [`Agents::resolve`] when it is selectable.
    preferred: Option<String>,
}

impl Agents {
    /// Built-in agents plus `configs` (from `opencode.json` `agent` and agent markdown files), with
    /// the user's top-level `permission` layered over every agent.
    pub fn new(dirs: &AgentDirs, user: Option<&PermissionConfig>, configs: &IndexMap<String, AgentConfig>) -> Self {
        Self::layered(dirs, user, configs)
    }

    /// The agents of a whole configuration: built-ins, then the deprecated `mode.<name>` entries and
    /// `agent.<name>` entries in that order (an entry in both is applied twice, `agent` last), the
    /// top-level `permission` over every agent, and `default_agent` for [`Agents::resolve`].
    pub fn from_config(dirs: &AgentDirs, config: &Config) -> Self {
        let mut agents = Self::layered(dirs, config.permission.as_ref(), config.mode.iter().chain(&config.agent));
        agents.preferred.clone_from(&config.default_agent);
        agents
    }

    fn layered<'a>(
        dirs: &AgentDirs,
        user: Option<&PermissionConfig>,
        configs: impl IntoIterator<Item = (&'a String, &'a AgentConfig)>,
    ) -> Self {
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
        Self { agents: agents.into_iter().map(|(name, agent)| (name, Arc::new(agent))).collect(), preferred: None }
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
            .or_else(|| self.agents.get(DEFAULT_AGENT))
            .or_else(|| self.agents.values().find(|agent| agent.mode != AgentMode::Subagent && !agent.hidden))
            .cloned()
    }

    /// The agent named `name`, or the session default when `None` (see [`Agents::default_agent`],
    /// preferring the configuration's `default_agent`). `None` when there is no such agent.
    pub fn resolve(&self, name: Option<&str>) -> Option<Arc<Agent>> {
        match name {
            Some(name) => self.get(name),
            None => self.default_agent(self.preferred.as_deref()),
        }
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
    #![allow(clippy::unwrap_used, reason = "tests fail loudly by design")]

    use super::*;

    fn config(value: Value) -> Config {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn from_config_layers_mode_then_agent_entries_over_builtins() {
        let config = config(serde_json::json!({
            "mode": {"build": {"steps": 2, "prompt": "From mode."}},
            "agent": {"build": {"prompt": "Be terse."}, "reviewer": {"model": "openai/gpt-5", "top_p": 0.5},
                      "plan": {"disable": true}}
        }));
        let agents = Agents::from_config(&AgentDirs::default(), &config);
        let build = agents.resolve(None).unwrap();
        assert_eq!((build.name.as_str(), build.steps, build.prompt.as_deref()), ("build", Some(2), Some("Be terse.")));
        let reviewer = agents.resolve(Some("reviewer")).unwrap();
        assert_eq!(
            (reviewer.model.as_deref(), reviewer.top_p, reviewer.native),
            (Some("openai/gpt-5"), Some(0.5), false)
        );
        assert!(agents.resolve(Some("plan")).is_none());
    }

    #[test]
    fn resolve_prefers_a_selectable_default_agent() {
        let pick = |value: Value| {
            let agents = Agents::from_config(&AgentDirs::default(), &config(value));
            agents.resolve(None).map(|agent| agent.name.clone())
        };
        assert_eq!(pick(serde_json::json!({"default_agent": "plan"})).as_deref(), Some("plan"));
        assert_eq!(pick(serde_json::json!({"default_agent": "explore"})).as_deref(), Some(DEFAULT_AGENT));
        assert_eq!(pick(serde_json::json!({"default_agent": "missing"})).as_deref(), Some(DEFAULT_AGENT));
        let plain = Agents::new(&AgentDirs::default(), None, &IndexMap::new());
        assert_eq!(plain.resolve(None).map(|agent| agent.name.clone()).as_deref(), Some(DEFAULT_AGENT));
    }

    #[test]
    fn standard_dirs_follow_paths() {
        let paths = Paths::under(Path::new("/d"));
        let dirs = AgentDirs::standard(&paths);
        assert_eq!((dirs.tool_output, dirs.plans), (paths.tool_output_dir(), paths.plans_dir()));
    }
}
