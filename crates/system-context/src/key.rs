//! Stable, namespaced keys for Context Sources and registry contributions.

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde::Deserializer;
use serde::Serialize;
use serde::Serializer;

use crate::error::SystemContextError;

/// A stable namespaced key such as `core/date` or `plugin.acme/todos`.
///
/// Shape: a namespace of `[a-z0-9][a-z0-9._-]*`, a `/`, then a name of `[a-z0-9][a-z0-9._/-]*`.
/// Keys order by their text, which is what makes registry output deterministic.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceKey(Arc<str>);

impl SourceKey {
    /// Validates `key`.
    pub fn new(key: impl AsRef<str>) -> Result<Self, SystemContextError> {
        let key = key.as_ref();
        match invalid_reason(key) {
            None => Ok(Self(Arc::from(key))),
            Some(reason) => Err(SystemContextError::InvalidKey { key: key.to_owned(), reason }),
        }
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A key written in this crate's source; the unit tests check every one of them.
    pub(crate) fn builtin(key: &'static str) -> Self {
        Self(Arc::from(key))
    }
}

impl fmt::Display for SourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl AsRef<str> for SourceKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for SourceKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SourceKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(&text).map_err(serde::de::Error::custom)
    }
}

/// Why `key` is not a valid key, or `None` when it is.
fn invalid_reason(key: &str) -> Option<&'static str> {
    let Some((namespace, name)) = key.split_once('/') else {
        return Some("expected `namespace/name`");
    };
    if !segment_ok(namespace, false) {
        return Some("the namespace must start with [a-z0-9] and contain only [a-z0-9._-]");
    }
    if !segment_ok(name, true) {
        return Some("the name must start with [a-z0-9] and contain only [a-z0-9._/-]");
    }
    None
}

fn segment_ok(segment: &str, slash_allowed: bool) -> bool {
    let mut bytes = segment.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    plain(first) && bytes.all(|b| plain(b) || matches!(b, b'.' | b'_' | b'-') || (slash_allowed && b == b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_namespaced_keys() {
        for key in ["core/date", "plugin.acme/todos", "a/b/c", "x-1/y_2.z-3"] {
            assert_eq!(SourceKey::new(key).map(|k| k.to_string()), Ok(key.to_owned()));
        }
    }

    #[test]
    fn rejects_malformed_keys() {
        for key in ["date", "/date", "core/", "Core/date", "core/-date", "core//x/", "co re/x", "core/Date", "_c/x"] {
            let Err(SystemContextError::InvalidKey { key: rejected, .. }) = SourceKey::new(key) else {
                panic!("{key} should be rejected");
            };
            assert_eq!(rejected, key);
        }
    }

    #[test]
    fn serializes_as_a_string_and_validates_on_read() {
        let key = SourceKey::new("core/date").unwrap();
        assert_eq!(serde_json::to_value(&key).unwrap(), serde_json::json!("core/date"));
        assert!(serde_json::from_value::<SourceKey>(serde_json::json!("Nope")).is_err());
    }
}
