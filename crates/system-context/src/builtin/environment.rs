//! `core/environment`: where the agent is running.

use std::path::Path;

use serde::Deserialize;
use serde::Serialize;

use super::ENVIRONMENT;
use crate::key::SourceKey;
use crate::source::ContextSource;
use crate::source::Loaded;

/// The facts the environment source reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub working_directory: String,
    pub workspace_root: String,
    pub is_git_repo: bool,
    /// Node's `process.platform` spelling (`linux`, `darwin`, `win32`, ...), as OpenCode reports it.
    pub platform: String,
}

impl Environment {
    /// The environment of a Location on this host.
    pub fn new(working_directory: &Path, workspace_root: &Path, is_git_repo: bool) -> Self {
        Self {
            working_directory: working_directory.display().to_string(),
            workspace_root: workspace_root.display().to_string(),
            is_git_repo,
            platform: host_platform().to_owned(),
        }
    }
}

/// This host's platform in Node's `process.platform` spelling.
pub fn host_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        "solaris" | "illumos" => "sunos",
        other => other,
    }
}

/// The environment source: a fixed value for the Location's life.
pub struct EnvironmentSource {
    key: SourceKey,
    environment: Environment,
}

impl EnvironmentSource {
    pub fn new(environment: Environment) -> Self {
        Self { key: SourceKey::builtin(ENVIRONMENT), environment }
    }
}

impl ContextSource for EnvironmentSource {
    type Value = Environment;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<Environment> {
        Loaded::Value(self.environment.clone())
    }

    fn baseline(&self, current: &Environment) -> String {
        format!("Here is some useful information about the environment you are running in:\n{}", render(current))
    }

    fn update(&self, _previous: &Environment, current: &Environment) -> String {
        format!("The environment you are running in is now:\n{}", render(current))
    }
}

fn render(environment: &Environment) -> String {
    format!(
        "<env>\n  Working directory: {}\n  Workspace root folder: {}\n  Is directory a git repo: {}\n  Platform: {}\n</env>",
        environment.working_directory,
        environment.workspace_root,
        if environment.is_git_repo { "yes" } else { "no" },
        environment.platform,
    )
}
