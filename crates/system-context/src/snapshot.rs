//! The durable shapes: the Context Snapshot, the Baseline System Context and a generation of both.
//!
//! The session store persists these opaquely as JSON ([`Snapshot::to_json`], [`Snapshot::from_json`]);
//! only this crate interprets them.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value as Json;

use crate::error::SystemContextError;
use crate::key::SourceKey;

/// What was last admitted for one Context Source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceSnapshot {
    /// The codec-encoded value.
    pub value: Json,
    /// Pre-rendered removal text, present only for sources that can disappear: once a source is gone
    /// its renderer is gone too, so the text is rendered while the value is admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<String>,
}

/// The model-hidden comparison state of one Context Epoch: one entry per admitted source key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Snapshot {
    sources: BTreeMap<SourceKey, SourceSnapshot>,
}

impl Snapshot {
    /// The entry admitted for `key`.
    pub fn get(&self, key: &SourceKey) -> Option<&SourceSnapshot> {
        self.sources.get(key)
    }

    /// Admitted keys, in key order.
    pub fn keys(&self) -> impl Iterator<Item = &SourceKey> {
        self.sources.keys()
    }

    pub fn len(&self) -> usize {
        self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The JSON the session store persists (an object keyed by source key, in key order).
    pub fn to_json(&self) -> Json {
        let map = self.sources.iter().map(|(key, entry)| (key.to_string(), entry_json(entry))).collect();
        Json::Object(map)
    }

    /// Reads what [`Snapshot::to_json`] wrote.
    pub fn from_json(json: &Json) -> Result<Self, SystemContextError> {
        Self::deserialize(json).map_err(|err| SystemContextError::Snapshot { reason: err.to_string() })
    }

    pub(crate) fn insert(&mut self, key: SourceKey, entry: SourceSnapshot) {
        self.sources.insert(key, entry);
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = (&SourceKey, &SourceSnapshot)> {
        self.sources.iter()
    }
}

/// The full System Context rendered at the start of a Context Epoch: the exact joined text (the
/// provider-cache prefix, reused verbatim) and each source's part, in render order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    pub text: String,
    pub parts: IndexMap<SourceKey, String>,
}

impl Baseline {
    pub(crate) fn from_parts(parts: IndexMap<SourceKey, String>) -> Self {
        Self { text: join_texts(parts.values().map(String::as_str)), parts }
    }
}

/// A fresh baseline and the snapshot that goes with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    pub baseline: Baseline,
    pub snapshot: Snapshot,
}

/// Renderings are joined with one blank line, both in baselines and in combined update messages.
pub(crate) fn join_texts<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for text in texts {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(text);
    }
    out
}

fn entry_json(entry: &SourceSnapshot) -> Json {
    let mut map = serde_json::Map::new();
    map.insert("value".to_owned(), entry.value.clone());
    if let Some(removed) = &entry.removed {
        map.insert("removed".to_owned(), Json::String(removed.clone()));
    }
    Json::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trip_keeps_removal_text() {
        let mut snapshot = Snapshot::default();
        snapshot.insert(SourceKey::builtin("core/date"), SourceSnapshot { value: json!("Mon"), removed: None });
        snapshot.insert(
            SourceKey::builtin("core/instructions"),
            SourceSnapshot { value: json!([]), removed: Some("gone".into()) },
        );
        let stored = snapshot.to_json();
        assert_eq!(
            stored,
            json!({"core/date": {"value": "Mon"}, "core/instructions": {"value": [], "removed": "gone"}})
        );
        assert_eq!(Snapshot::from_json(&stored).unwrap(), snapshot);
    }

    #[test]
    fn unreadable_snapshot_is_a_clear_error() {
        let err = Snapshot::from_json(&json!({"Bad Key": {"value": 1}})).unwrap_err();
        assert!(matches!(err, SystemContextError::Snapshot { .. }), "{err}");
        assert!(Snapshot::from_json(&json!([1])).is_err());
    }
}
