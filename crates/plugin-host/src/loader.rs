//! Which external plugins to run: config `plugin[]` entries, then `.opencode/plugin/` executables.
//!
//! The rule (docs/PLUGINS.md):
//! - `["name", {"command": ["python3", "plugin.py"], ...options}]` runs that command; options
//!   `required` (bool), `timeout` (ms per hook call), `env` (object) are the host's, the rest go to
//!   the plugin in `initialize`.
//! - A path (`/abs`, `./rel`, `../rel`, `~/rel`, `file://...`; relative to the declaring config's
//!   directory) to an executable file runs it.
//! - JavaScript/TypeScript files and npm package names are OpenCode (Bun) plugins: not runnable by
//!   this host, reported as unsupported, never fatal. `opencode-openai-codex-auth` and
//!   `opencode-copilot-auth` are ignored as OpenCode does (the flows are built in).
//! - Executables in `.opencode/plugin/` and `.opencode/plugins/` run in file-name order.
//! - `pure` skips all of them (reported, so the user sees why).

use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use opencode_config::PluginSpec;
use serde_json::Map;
use serde_json::Value;

use crate::external::ExternalPlugin;
use crate::external::ExternalSpec;
use crate::host::PluginHostBuilder;
use crate::host::PluginNotice;
use crate::host::Requirement;

const DEPRECATED: [&str; 2] = ["opencode-openai-codex-auth", "opencode-copilot-auth"];
const SCRIPT_EXTENSIONS: [&str; 6] = ["js", "mjs", "cjs", "ts", "mts", "cts"];

/// External plugins to run, and entries that will not run (with why).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovery {
    pub specs: Vec<ExternalSpec>,
    pub notices: Vec<PluginNotice>,
}

impl Discovery {
    /// Adds the plugins (in discovery order) and notices to `builder`.
    pub fn register(self, mut builder: PluginHostBuilder) -> PluginHostBuilder {
        for spec in self.specs {
            let requirement = spec.requirement;
            builder = builder.plugin(std::sync::Arc::new(ExternalPlugin::new(spec)), requirement);
        }
        self.notices.into_iter().fold(builder, PluginHostBuilder::notice)
    }
}

/// Discovers external plugins: `entries` from config (paths relative to `base`), then executables
/// in each of `plugin_dirs` (missing directories are fine). With `pure`, nothing runs.
pub fn discover(entries: &[PluginSpec], base: &Path, plugin_dirs: &[PathBuf], pure: bool) -> Discovery {
    let mut discovery = Discovery::default();
    for entry in entries {
        let (name, options) = match entry {
            PluginSpec::Name(name) => (name.as_str(), None),
            PluginSpec::WithOptions(name, options) => (name.as_str(), options.as_object()),
        };
        match from_entry(name, options, base) {
            Ok(spec) => discovery.specs.push(spec),
            Err(reason) => discovery.notices.push(PluginNotice { source: name.to_owned(), reason }),
        }
    }
    for dir in plugin_dirs {
        scan_dir(dir, &mut discovery);
    }
    if pure {
        let skipped = discovery.specs.drain(..).map(|spec| PluginNotice {
            source: spec.name,
            reason: "skipped: pure mode disables external plugins".to_owned(),
        });
        let skipped: Vec<PluginNotice> = skipped.collect();
        discovery.notices.splice(0..0, skipped);
    }
    discovery
}

fn from_entry(name: &str, options: Option<&Map<String, Value>>, base: &Path) -> Result<ExternalSpec, String> {
    if DEPRECATED.contains(&name) {
        return Err("ignored: this flow is built in".to_owned());
    }
    if let Some(command) = options.and_then(|options| options.get("command")) {
        let command = string_list(command).ok_or("`command` must be a non-empty array of strings")?;
        return Ok(with_options(ExternalSpec::new(sanitize(name), command), options));
    }
    let Some(path) = as_path(name, base) else {
        return Err("npm package plugins need OpenCode's JavaScript runtime; use an executable plugin or \
                    `[name, {\"command\": [...]}]` (docs/PLUGINS.md)"
            .to_owned());
    };
    let spec = executable_spec(&path)?;
    Ok(with_options(spec, options))
}

fn scan_dir(dir: &Path, discovery: &mut Discovery) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = read.filter_map(Result::ok).map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        let hidden = path.file_name().and_then(|name| name.to_str()).is_none_or(|name| name.starts_with('.'));
        if hidden || path.is_dir() {
            continue;
        }
        match executable_spec(&path) {
            Ok(spec) => discovery.specs.push(spec),
            Err(reason) => discovery.notices.push(PluginNotice { source: path.display().to_string(), reason }),
        }
    }
}

/// An executable plugin file (not a JS/TS module).
fn executable_spec(path: &Path) -> Result<ExternalSpec, String> {
    let extension = path.extension().and_then(|ext| ext.to_str()).unwrap_or_default();
    if SCRIPT_EXTENSIONS.contains(&extension) {
        return Err("JavaScript/TypeScript plugins need OpenCode's Bun runtime; make it an executable that \
                    speaks the protocol in docs/PLUGINS.md"
            .to_owned());
    }
    let metadata = std::fs::metadata(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    if !is_executable(&metadata) {
        return Err(format!("{} is not executable (chmod +x it)", path.display()));
    }
    let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap_or("plugin");
    Ok(ExternalSpec::new(sanitize(stem), vec![path.display().to_string()]))
}

fn with_options(mut spec: ExternalSpec, options: Option<&Map<String, Value>>) -> ExternalSpec {
    let Some(options) = options else {
        return spec;
    };
    let mut rest = options.clone();
    rest.remove("command");
    if let Some(required) = rest.remove("required").and_then(|value| value.as_bool()) {
        spec.requirement = if required { Requirement::Required } else { Requirement::Optional };
    }
    if let Some(ms) = rest.remove("timeout").and_then(|value| value.as_u64()) {
        spec.call_timeout = Duration::from_millis(ms);
    }
    if let Some(Value::Object(env)) = rest.remove("env") {
        spec.env = env.into_iter().filter_map(|(key, value)| Some((key, value.as_str()?.to_owned()))).collect();
    }
    spec.options = Value::Object(rest);
    spec
}

/// The entry as a path, when it is written as one.
fn as_path(entry: &str, base: &Path) -> Option<PathBuf> {
    let entry = entry.strip_prefix("file://").unwrap_or(entry);
    if let Some(rest) = entry.strip_prefix("~/") {
        return std::env::var_os("HOME").map(|home| PathBuf::from(home).join(rest));
    }
    if entry.starts_with('/') {
        return Some(PathBuf::from(entry));
    }
    (entry.starts_with("./") || entry.starts_with("../")).then(|| base.join(entry))
}

fn string_list(value: &Value) -> Option<Vec<String>> {
    let list: Option<Vec<String>> = value.as_array()?.iter().map(|item| item.as_str().map(str::to_owned)).collect();
    list.filter(|list| !list.is_empty())
}

/// A plugin name as a namespace: lowercase, other characters become `-`.
fn sanitize(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name);
    let mapped: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c.to_ascii_lowercase() } else { '-' })
        .collect();
    let trimmed = mapped.trim_start_matches(['.', '_', '-']);
    if trimmed.is_empty() { "plugin".to_owned() } else { trimmed.to_owned() }
}

#[cfg(unix)]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    metadata.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_namespaces() {
        assert_eq!(sanitize("My Plugin"), "my-plugin");
        assert_eq!(sanitize("@acme/todo"), "todo");
        assert_eq!(sanitize("..."), "plugin");
    }

    #[test]
    fn only_path_shaped_entries_are_paths() {
        let base = Path::new("/project");
        assert_eq!(as_path("./x", base), Some(PathBuf::from("/project/./x")));
        assert_eq!(as_path("file:///opt/p", base), Some(PathBuf::from("/opt/p")));
        assert_eq!(as_path("opencode-foo@1.2.0", base), None);
    }
}
