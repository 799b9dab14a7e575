//! The XDG directories OpenCode uses, in one place.

use std::path::{Path, PathBuf};

/// OpenCode's directories: data (database, credentials, tool output), config, cache (models), state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub data: PathBuf,
    pub config: PathBuf,
    pub cache: PathBuf,
    pub state: PathBuf,
}

/// The session database's file name in the data directory. Not OpenCode's `opencode.db`: both
/// programs keep working side by side in one data directory.
pub const DATABASE_FILE: &str = "opencode-rs.db";

impl Paths {
    /// Resolve from the environment: `XDG_*_HOME` (falling back to `~/.local/share` etc.), with
    /// `OPENCODE_TEST_HOME` replacing the home directory and `OPENCODE_CONFIG_DIR` the config dir.
    pub fn from_env() -> Self {
        Self::from_lookup(|key| std::env::var_os(key).filter(|value| !value.is_empty()).map(PathBuf::from))
    }

    /// Resolve with an explicit variable lookup (tests pass a map instead of the process environment).
    pub fn from_lookup(var: impl Fn(&str) -> Option<PathBuf>) -> Self {
        let home = var("OPENCODE_TEST_HOME").or_else(|| var("HOME")).unwrap_or_else(std::env::temp_dir);
        let xdg = |key: &str, fallback: &str| var(key).unwrap_or_else(|| home.join(fallback)).join("opencode");
        Self {
            data: xdg("XDG_DATA_HOME", ".local/share"),
            config: var("OPENCODE_CONFIG_DIR").unwrap_or_else(|| xdg("XDG_CONFIG_HOME", ".config")),
            cache: xdg("XDG_CACHE_HOME", ".cache"),
            state: xdg("XDG_STATE_HOME", ".local/state"),
        }
    }

    /// Every directory under one root (`<root>/data`, `<root>/config`, ...), for tests and portable installs.
    pub fn under(root: &Path) -> Self {
        Self {
            data: root.join("data"),
            config: root.join("config"),
            cache: root.join("cache"),
            state: root.join("state"),
        }
    }

    /// Stored provider credentials.
    pub fn auth_file(&self) -> PathBuf {
        self.data.join("auth.json")
    }

    /// The session database, a file of its own beside OpenCode's `opencode.db` (which has another
    /// schema and is never opened for writing).
    pub fn database(&self) -> PathBuf {
        self.data.join(DATABASE_FILE)
    }

    /// Managed Tool Output Files: one flat directory.
    pub fn tool_output_dir(&self) -> PathBuf {
        self.data.join("tool-output")
    }

    /// Plans written by the `plan` agent.
    pub fn plans_dir(&self) -> PathBuf {
        self.data.join("plans")
    }

    /// The cached models.dev catalog.
    pub fn models_cache(&self) -> PathBuf {
        self.cache.join("models.json")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_variables_win_over_home() {
        let paths = Paths::from_lookup(|key| match key {
            "HOME" => Some("/home/u".into()),
            "XDG_DATA_HOME" => Some("/xdg/data".into()),
            _ => None,
        });
        assert_eq!(paths.data, PathBuf::from("/xdg/data/opencode"));
        assert_eq!(paths.config, PathBuf::from("/home/u/.config/opencode"));
        assert_eq!(paths.auth_file(), PathBuf::from("/xdg/data/opencode/auth.json"));
    }
}
