//! An explicit environment: the loader reads variables only through this, so tests pass a map and
//! nothing inside the core reads the process environment behind the caller's back.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::Paths;

/// A snapshot of environment variables. Empty values count as unset, as in OpenCode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: HashMap<String, String>,
}

impl Env {
    /// The current process environment (non-UTF-8 variables are skipped).
    pub fn from_process() -> Self {
        Self { vars: std::env::vars().collect() }
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Self { vars: pairs.into_iter().map(|(key, value)| (key.into(), value.into())).collect() }
    }

    /// The variable's value, `None` when unset or empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str).filter(|value| !value.is_empty())
    }

    /// Whether a flag variable is on (`1` or `true`, any case).
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).is_some_and(|value| value == "1" || value.eq_ignore_ascii_case("true"))
    }

    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(key.into(), value.into());
    }

    /// OpenCode's directories under this environment.
    pub fn paths(&self) -> Paths {
        Paths::from_lookup(|key| self.get(key).map(PathBuf::from))
    }
}
