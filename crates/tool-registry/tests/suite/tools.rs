//! The read-only tools and the shell, end to end through the registry.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use opencode_config::ToolOutputConfig;
use opencode_tool_registry::Settlement;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::tools::EnvOverlay;
use serde_json::json;

use super::support::Env;

struct Overlay;
impl EnvOverlay for Overlay {
    fn env<'a>(&'a self, ctx: &'a ToolContext, cwd: &'a Path) -> BoxFuture<'a, Vec<(String, String)>> {
        let seen = format!("{}@{}", ctx.call_id, cwd.file_name().and_then(|n| n.to_str()).unwrap_or_default());
        Box::pin(async move { vec![("PLUGIN_VAR".into(), "from-plugin".into()), ("PLUGIN_SEEN".into(), seen)] })
    }
}

fn env_with_tools(limits: ToolOutputConfig) -> Env {
    let env = Env::with_limits(limits);
    opencode_tool_registry::tools::register_filesystem_and_shell(&env.registry, Arc::new(Overlay)).unwrap();
    env
}

async fn run(env: &Env, ctx: &ToolContext, tool: &str, input: serde_json::Value) -> Settlement {
    env.registry.execute(&ToolCall { call_id: ctx.call_id.clone(), name: tool.into(), input }, ctx).await.unwrap()
}

#[tokio::test]
async fn read_numbers_lines_and_pages() {
    let env = env_with_tools(ToolOutputConfig::default());
    env.write("a.txt", "one\ntwo\nthree\n");
    let all = run(&env, &env.ctx("build"), "read", json!({"filePath": "a.txt"})).await;
    assert_eq!(
        all.text,
        "<path>a.txt</path>\n<type>file</type>\n<content>\n1: one\n2: two\n3: three\n\n(End of file - total 3 lines)\n</content>"
    );
    let page = run(&env, &env.ctx("build"), "read", json!({"filePath": "a.txt", "offset": 2, "limit": 1})).await;
    assert!(page.text.contains("2: two\n\n(Showing lines 2-2 of 3. Use offset=3 to continue.)"), "{}", page.text);
    let beyond = run(&env, &env.ctx("build"), "read", json!({"filePath": "a.txt", "offset": 9})).await;
    assert_eq!(beyond.text, "Offset 9 is out of range for this file (3 lines)");
    let missing = run(&env, &env.ctx("build"), "read", json!({"filePath": "A.txt"})).await;
    assert_eq!(missing.status, SettlementStatus::Error);
    assert_eq!(missing.text, "File not found: A.txt\n\nDid you mean one of these?\na.txt");
}

#[tokio::test]
async fn read_refuses_binary_attaches_images_and_cuts_long_lines() {
    let env = env_with_tools(ToolOutputConfig::default());
    std::fs::write(env.project.join("blob.bin"), [0u8, 1, 2, 3, 0, 5]).unwrap();
    std::fs::write(env.project.join("pic.png"), [0x89, b'P', b'N', b'G']).unwrap();
    env.write("long.txt", &"x".repeat(5000));
    let binary = run(&env, &env.ctx("build"), "read", json!({"filePath": "blob.bin"})).await;
    assert_eq!(binary.text, "Cannot read binary file: blob.bin");
    let image = run(&env, &env.ctx("build"), "read", json!({"filePath": "pic.png"})).await;
    assert_eq!(image.media.len(), 1);
    assert_eq!(image.media[0].media_type, "image/png");
    let long = run(&env, &env.ctx("build"), "read", json!({"filePath": "long.txt"})).await;
    assert!(long.text.contains("... (line truncated to 2000 chars)"));
}

#[tokio::test]
async fn read_asks_for_env_files_and_reads_managed_output_by_absolute_path() {
    let env = env_with_tools(ToolOutputConfig::default());
    env.write(".env", "SECRET=1\n");
    let mut agent = (*env.agent("build")).clone();
    agent.permission.push(opencode_tool_registry::Rule::new("read", "*.env", opencode_config::PermissionAction::Deny));
    let denied = run(&env, &env.ctx_with(Arc::new(agent)), "read", json!({"filePath": ".env"})).await;
    assert!(denied.text.starts_with("The user has specified a rule which prevents you"), "{}", denied.text);
    let managed = env.registry.output().bound(&"line\n".repeat(20_000)).managed_path.unwrap();
    let read =
        run(&env, &env.ctx("explore"), "read", json!({"filePath": managed.display().to_string(), "offset": 19_999}))
            .await;
    assert!(read.text.contains("19999: line\n20000: line\n"), "{}", read.text);
}

#[tokio::test]
async fn glob_grep_and_list_respect_gitignore() {
    let env = env_with_tools(ToolOutputConfig::default());
    std::fs::create_dir_all(env.project.join(".git")).unwrap();
    env.write(".gitignore", "ignored/\n");
    env.write("src/lib.rs", "pub fn needle() {}\n");
    env.write("src/deep/mod.rs", "// needle here\nfn other() {}\n");
    env.write("ignored/skip.rs", "needle\n");
    env.write("README.md", "no match\n");
    let globbed = run(&env, &env.ctx("explore"), "glob", json!({"pattern": "**/*.rs"})).await;
    let mut paths: Vec<&str> = globbed.text.lines().collect();
    paths.sort_unstable();
    assert_eq!(paths, ["src/deep/mod.rs", "src/lib.rs"]);
    let grepped = run(&env, &env.ctx("explore"), "grep", json!({"pattern": "needle", "include": "*.rs"})).await;
    assert!(grepped.text.starts_with("Found 2 matches\n"), "{}", grepped.text);
    assert!(grepped.text.contains("src/lib.rs:\n  Line 1: pub fn needle() {}\n"));
    assert!(grepped.text.contains("src/deep/mod.rs:\n  Line 1: // needle here\n"));
    assert!(!grepped.text.contains("ignored"));
    let none = run(&env, &env.ctx("explore"), "grep", json!({"pattern": "absent_word"})).await;
    assert_eq!(none.text, "No files found");
    let bad = run(&env, &env.ctx("explore"), "grep", json!({"pattern": "(unclosed"})).await;
    assert_eq!(bad.status, SettlementStatus::Error);
    let listed = run(&env, &env.ctx("explore"), "list", json!({})).await;
    assert!(listed.text.contains("  src/\n    lib.rs\n"), "{}", listed.text);
    assert!(!listed.text.contains("skip.rs"));
}

#[tokio::test]
async fn grep_caps_matches_at_one_hundred() {
    let env = env_with_tools(ToolOutputConfig::default());
    env.write("many.txt", &"hit\n".repeat(500));
    let grepped = run(&env, &env.ctx("build"), "grep", json!({"pattern": "hit"})).await;
    assert!(grepped.text.starts_with("Found 100 matches (showing first 100)"));
    assert!(grepped.text.contains("(Results are truncated: showing first 100 matches."));
}

#[tokio::test]
async fn bash_runs_in_the_location_with_the_env_overlay() {
    let env = env_with_tools(ToolOutputConfig::default());
    std::fs::create_dir(env.project.join("sub")).unwrap();
    let ctx = env.ctx("build");
    let command = "pwd; echo $PLUGIN_VAR; echo $PLUGIN_SEEN; echo err >&2; exit 3";
    let settled = run(&env, &ctx, "bash", json!({"command": command, "workdir": "sub"})).await;
    assert_eq!(settled.status, SettlementStatus::Completed);
    // The overlay was asked for this call and its resolved working directory.
    let expected = format!("{}\nfrom-plugin\n{}@sub\n", env.project.join("sub").display(), ctx.call_id);
    assert!(settled.text.starts_with(&expected), "{}", settled.text);
    assert!(settled.text.contains("err\n"));
    assert!(settled.text.ends_with("<bash_metadata>\nexit code: 3\n</bash_metadata>"));
    assert_eq!(settled.metadata["exit"], 3);
    // Clients show the output without the footer meant for the model.
    assert_eq!(settled.metadata["output"].as_str().unwrap(), settled.text.split("\n\n<bash_metadata>").next().unwrap());
    assert_eq!(settled.metadata["truncated"], false);
}

#[tokio::test]
async fn bash_output_is_bounded_and_spilled_by_the_tool() {
    let env = env_with_tools(ToolOutputConfig { max_lines: 100, max_bytes: 8192 });
    let settled = run(&env, &env.ctx("build"), "bash", json!({"command": "seq 1 100000"})).await;
    assert!(settled.truncated);
    assert!(settled.text.starts_with("1\n2\n"));
    assert!(settled.text.ends_with("99999\n100000\n"), "{}", settled.text);
    assert!(settled.text.len() <= 8192 && settled.text.lines().count() <= 100);
    assert_eq!(settled.metadata["truncated"], true);
    let full = std::fs::read_to_string(settled.managed_path.unwrap()).unwrap();
    assert_eq!(full.lines().count(), 100_000);
}

#[tokio::test]
async fn bash_timeout_kills_the_whole_process_group() {
    let env = env_with_tools(ToolOutputConfig::default());
    let marker = env.project.join("survivor");
    let command = format!("(sleep 2; touch {}) & echo started; sleep 30", marker.display());
    let settled = run(&env, &env.ctx("build"), "bash", json!({"command": command, "timeout": 300})).await;
    assert!(settled.text.starts_with("started\n"));
    assert!(settled.text.contains("bash tool terminated command after exceeding timeout 300 ms"));
    assert_eq!(settled.metadata["timedOut"], true);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!marker.exists(), "a background child of the timed-out command survived");
}

#[tokio::test]
async fn bash_interrupt_kills_the_whole_process_group() {
    let env = env_with_tools(ToolOutputConfig::default());
    let marker = env.project.join("survivor");
    let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
    let ctx = env.ctx("build");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let settled = run(&env, &ctx, "bash", json!({"command": command})).await;
    assert_eq!(settled.status, SettlementStatus::Interrupted);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!marker.exists(), "a background child of the interrupted command survived");
}

#[tokio::test]
async fn plan_agent_cannot_edit_but_may_write_plans() {
    let env = env_with_tools(ToolOutputConfig::default());
    env.write("a.txt", "x\n");
    let denied = run(&env, &env.ctx("plan"), "write", json!({"filePath": "a.txt", "content": "y"})).await;
    assert_eq!(denied.status, SettlementStatus::Error);
    assert_eq!(std::fs::read_to_string(env.project.join("a.txt")).unwrap(), "x\n");
    let plan =
        run(&env, &env.ctx("plan"), "write", json!({"filePath": ".opencode/plans/p.md", "content": "# plan"})).await;
    assert_eq!(plan.status, SettlementStatus::Completed, "{}", plan.text);
    let visible: Vec<String> = env.registry.definitions(&env.agent("explore")).into_iter().map(|d| d.name).collect();
    assert_eq!(visible, ["bash", "read", "glob", "grep", "list"]);
}
