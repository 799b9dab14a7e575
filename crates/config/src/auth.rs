//! Stored provider credentials: `auth.json` in the data dir, a map `provider id -> entry`.
//!
//! The file is written with mode 0600, atomically (a temporary file in the same directory, then a
//! rename), so a crash never leaves a half-written file. `OPENCODE_AUTH_CONTENT` replaces the file's
//! content when reading. Entries of a type this version does not know are kept as they are.
//!
//! OAuth entries expire; a [`CredentialRefresher`] (implemented by the provider auth plugins in
//! `opencode-plugin-host`) renews one that expires within [`REFRESH_MARGIN_MS`] and saves it here
//! before it is used. The trait lives here so that its callers (the session runtime) and its
//! implementers need not know each other.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ConfigError, Env, jsonc};

/// One provider's stored credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum AuthInfo {
    /// An API key.
    Api {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// OAuth tokens; `expires` is milliseconds since the Unix epoch.
    Oauth {
        refresh: String,
        access: String,
        expires: u64,
        #[serde(rename = "accountId", default, skip_serializing_if = "Option::is_none")]
        account_id: Option<String>,
        #[serde(rename = "enterpriseUrl", default, skip_serializing_if = "Option::is_none")]
        enterprise_url: Option<String>,
    },
    /// A well-known remote config: `token` is exported as the environment variable `key`.
    Wellknown { key: String, token: String },
}

impl AuthInfo {
    /// The kind as written in the file.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Api { .. } => "api",
            Self::Oauth { .. } => "oauth",
            Self::Wellknown { .. } => "wellknown",
        }
    }

    /// The secret to send as an API key (the access token for OAuth).
    pub fn api_key(&self) -> &str {
        match self {
            Self::Api { key, .. } => key,
            Self::Oauth { access, .. } => access,
            Self::Wellknown { token, .. } => token,
        }
    }
}

impl AuthInfo {
    /// Whether this is an OAuth entry that expires within `margin_ms` of `now_ms` (milliseconds
    /// since the Unix epoch). `expires: 0` never expires.
    pub fn expires_within(&self, margin_ms: u64, now_ms: u64) -> bool {
        matches!(self, Self::Oauth { expires, .. } if *expires != 0 && *expires <= now_ms.saturating_add(margin_ms))
    }
}

/// Renew OAuth tokens this long (5 minutes) before they expire.
pub const REFRESH_MARGIN_MS: u64 = 5 * 60 * 1000;

/// What [`CredentialRefresher::fresh`] returns.
pub type RefreshFuture<'a> = Pin<Box<dyn Future<Output = Result<Option<AuthInfo>, RefreshError>> + Send + 'a>>;

/// Keeps stored sign-ins usable: called before a provider request is built.
pub trait CredentialRefresher: Send + Sync {
    /// `provider`'s credentials to use now, read from `store`. An OAuth entry that expires within
    /// [`REFRESH_MARGIN_MS`] is refreshed and saved to `store` (atomically) first; other entries,
    /// and providers this refresher does not know, come back as stored. `None` when nothing is
    /// stored.
    fn fresh<'a>(&'a self, provider: &'a str, store: &'a AuthStore) -> RefreshFuture<'a>;
}

/// A stored sign-in that could not be refreshed (or read, or saved again).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot refresh the `{provider}` sign-in: {reason}")]
pub struct RefreshError {
    pub provider: String,
    pub reason: String,
}

impl RefreshError {
    /// The command that fixes it.
    pub fn hint(&self) -> String {
        format!("sign in again with `opencode auth login {}`", self.provider)
    }
}

/// One `auth.json` entry: understood, or kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthEntry {
    Known(AuthInfo),
    Unknown(Value),
}

/// The credentials file.
#[derive(Debug, Clone)]
pub struct AuthStore {
    path: PathBuf,
    content: Option<String>,
}

impl AuthStore {
    /// The store at `path`, with `OPENCODE_AUTH_CONTENT` from `env` replacing its content when reading.
    pub fn new(path: impl Into<PathBuf>, env: &Env) -> Self {
        Self { path: path.into(), content: env.get("OPENCODE_AUTH_CONTENT").map(str::to_owned) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry, in file order. A missing file is an empty store.
    pub fn entries(&self) -> Result<IndexMap<String, AuthEntry>, ConfigError> {
        let (source, text) = match &self.content {
            Some(content) => ("OPENCODE_AUTH_CONTENT".to_owned(), content.clone()),
            None => match std::fs::read_to_string(&self.path) {
                Ok(text) => (self.path.display().to_string(), text),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(IndexMap::new()),
                Err(err) => return Err(ConfigError::Read { path: self.path.clone(), reason: err.to_string() }),
            },
        };
        if text.trim().is_empty() {
            return Ok(IndexMap::new());
        }
        let raw: IndexMap<String, Value> = jsonc::from_str(&text).map_err(|err| ConfigError::Parse {
            origin: source,
            line: err.line,
            column: err.column,
            message: err.message,
        })?;
        Ok(raw
            .into_iter()
            .map(|(id, value)| {
                let entry = match serde_json::from_value::<AuthInfo>(value.clone()) {
                    Ok(info) => AuthEntry::Known(info),
                    Err(_) => AuthEntry::Unknown(value),
                };
                (id, entry)
            })
            .collect())
    }

    /// The credentials stored for `provider`, if understood.
    pub fn get(&self, provider: &str) -> Result<Option<AuthInfo>, ConfigError> {
        Ok(match self.entries()?.shift_remove(provider) {
            Some(AuthEntry::Known(info)) => Some(info),
            _ => None,
        })
    }

    /// Stores (or replaces) `provider`'s credentials.
    pub fn set(&self, provider: &str, info: AuthInfo) -> Result<(), ConfigError> {
        let mut entries = self.file_entries()?;
        entries.insert(provider.to_owned(), AuthEntry::Known(info));
        self.write(&entries)
    }

    /// Removes `provider`'s credentials; returns whether there were any.
    pub fn remove(&self, provider: &str) -> Result<bool, ConfigError> {
        let mut entries = self.file_entries()?;
        let removed = entries.shift_remove(provider).is_some();
        if removed {
            self.write(&entries)?;
        }
        Ok(removed)
    }

    /// Writes go to the file even when `OPENCODE_AUTH_CONTENT` overrides reads.
    fn file_entries(&self) -> Result<IndexMap<String, AuthEntry>, ConfigError> {
        Self { path: self.path.clone(), content: None }.entries()
    }

    fn write(&self, entries: &IndexMap<String, AuthEntry>) -> Result<(), ConfigError> {
        let mut map = serde_json::Map::new();
        for (id, entry) in entries {
            let value = match entry {
                AuthEntry::Known(info) => serde_json::to_value(info).map_err(|err| self.write_error(&err))?,
                AuthEntry::Unknown(value) => value.clone(),
            };
            map.insert(id.clone(), value);
        }
        let text = serde_json::to_string_pretty(&Value::Object(map)).map_err(|err| self.write_error(&err))?;
        write_private(&self.path, text.as_bytes()).map_err(|err| self.write_error(&err))
    }

    fn write_error(&self, err: &dyn std::fmt::Display) -> ConfigError {
        ConfigError::Write { path: self.path.clone(), reason: err.to_string() }
    }
}

/// Writes `bytes` to `path` atomically with mode 0600: a temporary sibling, fsync, rename.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), fastish_nonce()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        // Best effort: the temporary file is ours and useless now.
        std::fs::remove_file(&temp).ok();
    }
    result
}

/// Distinguishes concurrent writers within one process.
fn fastish_nonce() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_unknown_kinds_survive() {
        let dir = std::env::temp_dir().join(format!("opencode-auth-{}", std::process::id()));
        let path = dir.join("auth.json");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&path, r#"{"future": {"type": "passkey", "id": 1}}"#).unwrap();
        let store = AuthStore::new(&path, &Env::default());
        store.set("openai", AuthInfo::Api { key: "sk-1".into(), metadata: None }).unwrap();
        let oauth = AuthInfo::Oauth {
            refresh: "r".into(),
            access: "a".into(),
            expires: 1,
            account_id: None,
            enterprise_url: None,
        };
        store.set("anthropic", oauth.clone()).unwrap();
        assert_eq!(store.get("anthropic").unwrap(), Some(oauth));
        assert!(store.remove("openai").unwrap());
        assert!(!store.remove("openai").unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"passkey\""), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn oauth_entries_expire_within_the_margin_and_zero_never_expires() {
        let oauth = |expires| AuthInfo::Oauth {
            refresh: "r".into(),
            access: "a".into(),
            expires,
            account_id: None,
            enterprise_url: None,
        };
        let now = 1_000_000_000;
        assert!(oauth(now - 1).expires_within(REFRESH_MARGIN_MS, now));
        assert!(oauth(now + REFRESH_MARGIN_MS).expires_within(REFRESH_MARGIN_MS, now));
        assert!(!oauth(now + REFRESH_MARGIN_MS + 1).expires_within(REFRESH_MARGIN_MS, now));
        assert!(!oauth(0).expires_within(REFRESH_MARGIN_MS, now));
        assert!(!AuthInfo::Api { key: "k".into(), metadata: None }.expires_within(REFRESH_MARGIN_MS, now));
    }

    #[test]
    fn env_content_replaces_the_file_when_reading() {
        let env = Env::from_pairs([("OPENCODE_AUTH_CONTENT", r#"{"groq": {"type": "api", "key": "gsk"}}"#)]);
        let store = AuthStore::new("/nonexistent/auth.json", &env);
        assert_eq!(store.get("groq").unwrap(), Some(AuthInfo::Api { key: "gsk".into(), metadata: None }));
    }
}
