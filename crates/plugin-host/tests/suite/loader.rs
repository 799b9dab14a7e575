//! Discovery of external plugins from `plugin[]` and `.opencode/plugin/`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use opencode_config::PluginSpec;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::loader::discover;
use pretty_assertions::assert_eq;
use serde_json::json;

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn entries() -> Vec<PluginSpec> {
    vec![
        PluginSpec::Name("opencode-wakatime@1.2.0".into()),
        PluginSpec::WithOptions(
            "acme".into(),
            json!({"command": ["python3", "acme.py"], "required": true, "timeout": 250, "env": {"A": "1"}, "mood": "calm"}),
        ),
        PluginSpec::Name("./plugins/tool.ts".into()),
        PluginSpec::Name("opencode-copilot-auth".into()),
        PluginSpec::Name("./bin/local-plugin".into()),
    ]
}

#[test]
fn config_entries_and_plugin_directories_follow_the_documented_rule() {
    let temp = tempfile::tempdir().unwrap();
    let base = temp.path();
    write(&base.join("bin/local-plugin"), "#!/bin/sh\n", 0o755);
    let dir = base.join(".opencode/plugin");
    write(&dir.join("b-second"), "#!/bin/sh\n", 0o755);
    write(&dir.join("a-first"), "#!/bin/sh\n", 0o755);
    write(&dir.join("notes.txt"), "", 0o644);
    write(&dir.join("old.js"), "", 0o644);

    let discovery = discover(&entries(), base, std::slice::from_ref(&dir), false);
    let specs: Vec<(&str, Vec<String>)> =
        discovery.specs.iter().map(|spec| (spec.name.as_str(), spec.command.clone())).collect();
    assert_eq!(
        specs,
        vec![
            ("acme", vec!["python3".to_owned(), "acme.py".to_owned()]),
            ("local-plugin", vec![base.join("./bin/local-plugin").display().to_string()]),
            ("a-first", vec![dir.join("a-first").display().to_string()]),
            ("b-second", vec![dir.join("b-second").display().to_string()]),
        ]
    );
    let acme = &discovery.specs[0];
    assert_eq!(acme.requirement, Requirement::Required);
    assert_eq!(acme.call_timeout, Duration::from_millis(250));
    assert_eq!(acme.env, vec![("A".to_owned(), "1".to_owned())]);
    assert_eq!(acme.options, json!({"mood": "calm"}));

    let notices: Vec<&str> = discovery.notices.iter().map(|notice| notice.source.as_str()).collect();
    let notes = dir.join("notes.txt").display().to_string();
    let old = dir.join("old.js").display().to_string();
    assert_eq!(notices, vec!["opencode-wakatime@1.2.0", "./plugins/tool.ts", "opencode-copilot-auth", &notes, &old]);
    assert!(discovery.notices[0].reason.starts_with("npm package plugins need OpenCode's JavaScript runtime"));
    assert!(discovery.notices[4].reason.starts_with("JavaScript/TypeScript plugins need OpenCode's Bun runtime"));
}

#[test]
fn pure_mode_runs_no_external_plugin_and_says_so() {
    let temp = tempfile::tempdir().unwrap();
    let discovery = discover(&entries()[1..2], temp.path(), &[], true);
    assert_eq!(discovery.specs, vec![]);
    assert_eq!(discovery.notices[0].source, "acme");
    assert_eq!(discovery.notices[0].reason, "skipped: pure mode disables external plugins");
}

#[tokio::test]
async fn unsupported_entries_appear_in_the_ready_report_without_failing_it() {
    let temp = tempfile::tempdir().unwrap();
    let discovery = discover(&entries()[..1], temp.path(), &[], false);
    let host = discovery.register(PluginHost::builder()).build();
    let report = host.ready().await.unwrap();
    assert_eq!(report.problems().count(), 1);
    assert_eq!(report.problems().next().unwrap().name, "opencode-wakatime@1.2.0");
}
