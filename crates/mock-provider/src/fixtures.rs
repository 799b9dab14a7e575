//! Shared fixtures and comparison helpers.

use std::path::PathBuf;

/// The shared fixtures folder, `../shared/fixtures` beside the workspace root.
///
/// Computed from this crate's manifest directory
/// (`<crate>/../../../shared/fixtures`) and canonicalized when it exists.
/// Recordings live under `recordings/`, e.g.
/// `fixtures_dir().join("recordings/llm/openai-chat/streams-text.json")`.
pub fn fixtures_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    dir.canonicalize().unwrap_or(dir)
}

/// The fixtures folder, if present.
///
/// When it is missing: if the `CI` environment variable is set (non-empty),
/// this panics, so fixture-based tests cannot silently pass in CI; otherwise
/// it prints `skipping: ../shared/fixtures not found (…)` to stderr and
/// returns `None` so the calling test can return early:
///
/// ```
/// # fn test() {
/// let Some(fixtures) = opencode_mock_provider::require_fixtures() else { return };
/// let path = fixtures.join("recordings/llm/openai-chat/streams-text.json");
/// # let _ = path;
/// # }
/// ```
pub fn require_fixtures() -> Option<PathBuf> {
    let dir = fixtures_dir();
    if dir.is_dir() {
        return Some(dir);
    }
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    if in_ci {
        panic!(
            "shared fixtures not found at {} (expected ../shared/fixtures beside the workspace \
             root); fixture-based tests must not be skipped in CI",
            dir.display()
        );
    }
    eprintln!("skipping: ../shared/fixtures not found (looked at {})", dir.display());
    None
}

/// Canonical JSON text for comparisons: object keys sorted recursively
/// (by their UTF-8 bytes), no insignificant whitespace.
///
/// Independent of whether `serde_json`'s `preserve_order` feature is enabled,
/// so two values that differ only in key order produce the same string.
///
/// ```
/// use opencode_mock_provider::canonical_json;
/// let value = serde_json::json!({"b": [{"d": 1, "c": null}], "a": "x"});
/// assert_eq!(canonical_json(&value), r#"{"a":"x","b":[{"c":null,"d":1}]}"#);
/// ```
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by_key(|(key, _)| *key);
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                // A string's Display is its JSON encoding.
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
