//! The real OpenCode, for tests that check we interoperate with it: its binary and its npm packages,
//! installed once per target directory from the npm registry, and run offline in an isolated home.
//!
//! Without `npm` (or when the install fails) the helpers return `None` after printing a notice, so a
//! developer machine without the tools skips those tests; under `CI` they panic instead, because CI
//! must run them.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

/// The OpenCode release the compatibility tests are written against.
pub const OPENCODE_VERSION: &str = "1.18.34";

/// Installs `spec` (`name@version`) with `npm install --ignore-scripts` under `cache/<spec>/` and
/// returns that prefix (its packages are in `node_modules/`). Installed once: later calls, from any
/// test process, find the finished prefix. A half-finished install is never seen: it happens in a
/// temporary sibling that is renamed into place.
pub fn npm_install(cache: &Path, spec: &str) -> Option<PathBuf> {
    // Tests of one process install one at a time (their staging directory is the process's).
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let prefix = cache.join(spec.replace(['/', '@'], "_"));
    if prefix.join("node_modules").is_dir() {
        return Some(prefix);
    }
    if !tool_present("npm") || !tool_present("node") {
        return skip(&format!("npm/node not found; skipping the tests that need {spec}"));
    }
    let staging = cache.join(format!(".{}-{}", spec.replace(['/', '@'], "_"), std::process::id()));
    let _stale = std::fs::remove_dir_all(&staging);
    if let Err(err) = std::fs::create_dir_all(&staging) {
        return skip(&format!("cannot create {}: {err}", staging.display()));
    }
    let installed = Command::new("npm")
        .args(["install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-save", "--prefix"])
        .arg(&staging)
        .arg(spec)
        .status()
        .is_ok_and(|status| status.success());
    if !installed {
        let _cleanup = std::fs::remove_dir_all(&staging);
        return skip(&format!("npm install {spec} failed"));
    }
    // Another process may have won the race; its prefix is as good as ours.
    if std::fs::rename(&staging, &prefix).is_err() {
        let _cleanup = std::fs::remove_dir_all(&staging);
    }
    prefix.join("node_modules").is_dir().then_some(prefix)
}

/// The real OpenCode binary ([`OPENCODE_VERSION`], Linux x64), run offline.
#[derive(Debug, Clone)]
pub struct OpenCode {
    pub binary: PathBuf,
}

impl OpenCode {
    /// Installs `opencode-linux-x64@OPENCODE_VERSION` under `cache` (tests pass
    /// `env!("CARGO_TARGET_TMPDIR")`, shared by every crate of the workspace).
    pub fn install(cache: &Path) -> Option<Self> {
        if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
            return skip("the real OpenCode binary is only installed on Linux x64");
        }
        let prefix = npm_install(cache, &format!("opencode-linux-x64@{OPENCODE_VERSION}"))?;
        let binary = prefix.join("node_modules/opencode-linux-x64/bin/opencode");
        if binary.is_file() { Some(Self { binary }) } else { skip(&format!("{} is missing", binary.display())) }
    }

    /// A command running OpenCode with `home` as its whole world (HOME and the XDG directories under
    /// it), offline: no update check, no models.dev fetch, no plugins or npm installs, no sharing.
    pub fn command(&self, home: &Path) -> Command {
        let mut command = Command::new(&self.binary);
        command.env_remove("OPENCODE_SERVER_PASSWORD").envs(self.environment(home));
        command
    }

    /// The whole environment OpenCode runs with in `home` (HOME, the XDG directories, the offline
    /// switches), with `home` seeded; for running it where a `Command` cannot be used (in tmux).
    pub fn environment(&self, home: &Path) -> Vec<(String, String)> {
        seed_home(home);
        let mut env = vec![("HOME".to_owned(), home.to_string_lossy().into_owned())];
        env.extend(offline_env(home));
        env
    }
}

impl OpenCode {
    /// [`OpenCode::command`] run in `dir`. OpenCode takes its working directory from `PWD` when set,
    /// so both are set (a test process inherits the `PWD` of the shell that started it).
    pub fn command_in(&self, home: &Path, dir: &Path) -> Command {
        let mut command = self.command(home);
        command.current_dir(dir).env("PWD", dir);
        command
    }
}

/// The environment that keeps OpenCode offline and inside `home`.
pub fn offline_env(home: &Path) -> Vec<(String, String)> {
    let home = home.to_string_lossy();
    let dirs = [
        ("XDG_CONFIG_HOME", format!("{home}/.config")),
        ("XDG_DATA_HOME", format!("{home}/.local/share")),
        ("XDG_CACHE_HOME", format!("{home}/.cache")),
        ("XDG_STATE_HOME", format!("{home}/.local/state")),
    ];
    let flags = [
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_SHARE",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS",
        "OPENCODE_DISABLE_CLAUDE_CODE",
        "OPENCODE_DISABLE_EXTERNAL_SKILLS",
        "OPENCODE_PURE",
    ];
    let npm = [
        // OpenCode installs its plugin package with npm at start unless the lock file lists it
        // (`seed_home` writes one); any attempt left goes to a dead port, offline.
        ("npm_config_registry", "http://127.0.0.1:9/"),
        ("npm_config_offline", "true"),
        ("NO_PROXY", "127.0.0.1,localhost"),
        ("no_proxy", "127.0.0.1,localhost"),
    ];
    dirs.into_iter()
        .chain(flags.into_iter().map(|flag| (flag, "1".to_owned())))
        .chain(npm.into_iter().map(|(k, v)| (k, v.to_owned())))
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// Writes the config-directory files that stop OpenCode from installing its plugin package.
fn seed_home(home: &Path) {
    let config = home.join(".config/opencode");
    let _made = std::fs::create_dir_all(config.join("node_modules"));
    let dependency = format!(r#"{{ "dependencies": {{ "@opencode-ai/plugin": "{OPENCODE_VERSION}" }} }}"#);
    let lock = format!(
        r#"{{ "name": "opencode", "lockfileVersion": 3, "requires": true, "packages": {{ "": {dependency} }} }}"#
    );
    let _written = std::fs::write(config.join("package.json"), dependency);
    let _written = std::fs::write(config.join("package-lock.json"), lock);
}

/// An `opencode.json` for a project whose model `mock/mock-model` is an OpenAI-compatible provider at
/// `base_url` (ending in `/v1`); OpenCode and this project both read it.
pub fn mock_project_config(base_url: &str) -> String {
    serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": { "baseURL": base_url, "apiKey": "sk-mock" },
                "models": { "mock-model": { "name": "Mock Model", "tool_call": true,
                    "limit": { "context": 128000, "output": 4096 } } }
            }
        }
    })
    .to_string()
}

fn tool_present(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|out| out.status.success())
}

pub(crate) fn skip<T>(notice: &str) -> Option<T> {
    assert!(std::env::var_os("CI").is_none(), "{notice} (required under CI)");
    eprintln!("notice: {notice}");
    None
}
