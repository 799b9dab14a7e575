//! Test plugins, a tool registry in a temporary project, and the path of the Python test plugin.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use indexmap::IndexMap;
use opencode_config::ToolOutputConfig;
use opencode_plugin_host::ChatHeadersOutput;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::StartContext;
use opencode_plugin_host::external::ExternalSpec;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use opencode_tool_registry::Location;
use opencode_tool_registry::NoProgress;
use opencode_tool_registry::OutputStore;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolRegistry;
use tokio_util::sync::CancellationToken;

/// A Rust plugin that appends its namespace to the `x-order` header, after an optional start delay
/// or with a start failure.
pub struct Recorder {
    pub namespace: &'static str,
    pub delay: Duration,
    pub fail: Option<&'static str>,
}

impl Recorder {
    pub fn new(namespace: &'static str) -> Arc<Self> {
        Arc::new(Self { namespace, delay: Duration::ZERO, fail: None })
    }
}

impl Plugin for Recorder {
    fn namespace(&self) -> &str {
        self.namespace
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::ChatHeaders])
    }

    fn start<'a>(&'a self, _ctx: &'a StartContext) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.fail.map_or(Ok(()), |reason| Err(reason.to_owned()))
        })
    }

    fn chat_headers<'a>(&'a self, _input: &'a ChatInput, output: &'a mut ChatHeadersOutput) -> HookFuture<'a> {
        let order = output.headers.entry("x-order".to_owned()).or_default();
        if !order.is_empty() {
            order.push(',');
        }
        order.push_str(self.namespace);
        Box::pin(async { Ok(()) })
    }
}

/// The Python test plugin run in `mode`.
pub fn acme(mode: &str) -> ExternalSpec {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/plugins/acme.py");
    ExternalSpec::new("acme", vec!["python3".into(), script.display().to_string(), mode.into()])
}

pub fn chat_input() -> ChatInput {
    let mut input = ChatInput {
        session_id: "ses_1".into(),
        message_id: "msg_2".into(),
        agent: "build".into(),
        ..ChatInput::default()
    };
    input.model.provider_id = "openai".into();
    input.model.model_id = "gpt-5".into();
    input
}

/// A project with a tool registry.
pub struct Project {
    pub _temp: tempfile::TempDir,
    pub registry: Arc<ToolRegistry>,
    pub agents: Agents,
}

impl Project {
    pub fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let project = root.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let output = OutputStore::new(root.join("tool-output"), ToolOutputConfig::default());
        let location = Location::new(&project, output.dir()).unwrap();
        let registry = Arc::new(ToolRegistry::new(location, output).unwrap());
        let dirs =
            AgentDirs { tool_output: root.join("tool-output"), plans: root.join("plans"), ..AgentDirs::default() };
        let agents = Agents::new(&dirs, None, &IndexMap::new());
        Self { _temp: temp, registry, agents }
    }

    pub fn dir(&self) -> PathBuf {
        self.registry.location().root().to_path_buf()
    }

    pub fn ctx(&self) -> ToolContext {
        ToolContext {
            session_id: "ses_1".into(),
            message_id: "msg_1".into(),
            call_id: "call_1".into(),
            agent: self.agents.get("build").unwrap(),
            location: Arc::clone(self.registry.location()),
            cancel: CancellationToken::new(),
            permissions: Arc::new(Permissions::in_memory()),
            progress: Arc::new(NoProgress),
            output: self.registry.output().clone(),
            editor: self.registry.editor(),
        }
    }
}
