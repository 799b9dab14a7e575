//! `auth.json`: atomic private writes, overrides, tolerance of bad content.

use opencode_config::{AuthInfo, AuthStore, ConfigError, Env};

#[test]
fn a_fresh_store_is_created_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/opencode/auth.json");
    let store = AuthStore::new(&path, &Env::default());
    assert!(store.entries().unwrap().is_empty());
    store.set("openai", AuthInfo::Api { key: "sk-1".into(), metadata: None }).unwrap();
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written, serde_json::json!({"openai": {"type": "api", "key": "sk-1"}}));
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
}

#[test]
fn a_corrupt_file_is_a_positioned_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    std::fs::write(&path, "{\"openai\": {\"type\": \"api\", \"key\": }").unwrap();
    let err = AuthStore::new(&path, &Env::default()).entries().unwrap_err();
    assert!(matches!(err, ConfigError::Parse { line: 1, column: 35, .. }), "{err:?}");
}
