//! The official `@opencode-ai/sdk` npm package (pinned) against our server, from Node. The package is
//! installed into the target directory (`opencode_mock_provider::peer`); without npm the test is
//! skipped with a notice, except under CI where npm is required.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use super::runtime::start_runtime;
use super::runtime::text;
use super::start;

const SDK: &str = "@opencode-ai/sdk@1.18.35";

#[tokio::test]
async fn the_official_sdk_works_against_the_server() {
    let Some(sdk) = install_sdk() else { return };
    let t = start().await;
    smoke(sdk, t.url.clone(), t.dir.clone(), "echo: say hi").await;
}

#[tokio::test]
async fn the_official_sdk_prompts_through_the_session_runtime() {
    let Some(sdk) = install_sdk() else { return };
    let t = start_runtime(json!({})).await;
    t.mock.push(text("Hi from the runtime."));
    t.mock.push(text("Second reply."));
    smoke(sdk, t.url.clone(), t.dir.clone(), "Hi from the runtime.").await;
    assert_eq!(t.mock.requests().len(), 2);
}

/// Runs `tests/sdk/smoke.mjs` and checks every step passed.
async fn smoke(sdk: PathBuf, url: String, dir: PathBuf, reply: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/smoke.mjs");
    let reply = reply.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(script)
            .arg(url)
            .arg(dir)
            .env("OPENCODE_SDK_DIR", sdk)
            .env("OPENCODE_SMOKE_REPLY", reply)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "SDK smoke failed:\n{stdout}\n{stderr}");
    for step in ["health", "session.create", "session.prompt", "session.messages", "event.subscribe", "v1 prompt"] {
        assert!(stdout.lines().any(|l| l == format!("ok {step}")), "step {step} missing:\n{stdout}");
    }
}

/// `node_modules/@opencode-ai/sdk` under the target dir, installing the pinned version once.
pub fn install_sdk() -> Option<PathBuf> {
    let prefix = opencode_mock_provider::peer::npm_install(Path::new(env!("CARGO_TARGET_TMPDIR")), SDK)?;
    Some(prefix.join("node_modules/@opencode-ai/sdk"))
}
