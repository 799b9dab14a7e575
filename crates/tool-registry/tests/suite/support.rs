//! A project directory, a data directory and a context to call tools with.

use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;
use opencode_config::ToolOutputConfig;
use opencode_tool_registry::Agent;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use opencode_tool_registry::Location;
use opencode_tool_registry::NoProgress;
use opencode_tool_registry::OutputStore;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolRegistry;
use tokio_util::sync::CancellationToken;

pub struct Env {
    pub _temp: tempfile::TempDir,
    pub project: PathBuf,
    pub data: PathBuf,
    pub outside: PathBuf,
    pub registry: ToolRegistry,
    pub permissions: Arc<Permissions>,
    pub agents: Agents,
}

impl Env {
    pub fn new() -> Self {
        Self::with_limits(ToolOutputConfig::default())
    }

    pub fn with_limits(limits: ToolOutputConfig) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let project = root.join("project");
        let data = root.join("data");
        let outside = root.join("outside");
        for dir in [&project, &data, &outside] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let output = OutputStore::new(data.join("tool-output"), limits);
        let location = Location::new(&project, output.dir()).unwrap();
        let registry = ToolRegistry::new(location, output).unwrap();
        let dirs =
            AgentDirs { tool_output: data.join("tool-output"), plans: data.join("plans"), ..AgentDirs::default() };
        let agents = Agents::new(&dirs, None, &IndexMap::new());
        Self { _temp: temp, project, data, outside, registry, permissions: Arc::new(Permissions::in_memory()), agents }
    }

    pub fn agent(&self, name: &str) -> Arc<Agent> {
        self.agents.get(name).unwrap()
    }

    pub fn ctx(&self, agent: &str) -> ToolContext {
        self.ctx_with(self.agent(agent))
    }

    pub fn ctx_with(&self, agent: Arc<Agent>) -> ToolContext {
        ToolContext {
            session_id: "ses_1".into(),
            message_id: "msg_1".into(),
            call_id: format!("call_{}", fastrand::u32(..)),
            agent,
            location: Arc::clone(self.registry.location()),
            cancel: CancellationToken::new(),
            permissions: Arc::clone(&self.permissions),
            progress: Arc::new(NoProgress),
            output: self.registry.output().clone(),
            editor: self.registry.editor(),
        }
    }

    pub fn write(&self, relative: &str, contents: &str) {
        let path = self.project.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}
