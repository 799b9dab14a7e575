//! The GitHub action as a runner executes it, short of GitHub itself: `github/install.sh` against
//! a local release server (checksums, cache, PATH), `github/run.sh` with the action's inputs
//! against the stand-in API, and `action.yml` plus the workflow `opencode github install` writes,
//! read as YAML.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::Mutex;

use axum::Router;
use axum::http::StatusCode;
use axum::http::Uri;
use serde_json::Value;
use sha2::Digest;

use super::github::Api;
use super::github::RUN;
use super::github::TOKEN;
use super::github::agent_fixes;
use super::github::checkout;
use super::github::comment_event;
use super::github::git;
use super::support::Home;
use super::support::mock_config;
use super::support::stderr;
use super::support::stdout;

fn action_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../github")
}

/// A releases page serving `files` under `/download/v0.1.0/`; its URL and the paths it served.
fn releases(files: Vec<(String, Vec<u8>)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let served = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&served);
    let files = Arc::new(files);
    let (url_sender, url) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let app = Router::new().fallback(move |uri: Uri| async move {
                log.lock().unwrap().push(uri.path().to_owned());
                let name = uri.path().strip_prefix("/releases/download/v0.1.0/").unwrap_or_default();
                match files.iter().find(|(file, _)| file == name) {
                    Some((_, bytes)) => (StatusCode::OK, bytes.clone()),
                    None => (StatusCode::NOT_FOUND, b"Not Found".to_vec()),
                }
            });
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            url_sender.send(format!("http://{}/releases", listener.local_addr().unwrap())).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (url.recv().unwrap(), served)
}

/// This build's binary packed as the Linux x64 release archive, and its `.sha256` file.
fn release_archive(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let stage = dir.join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_opencode"), stage.join("opencode")).unwrap();
    let archive = dir.join("opencode.tar.gz");
    let packed = Command::new("tar")
        .arg("--use-compress-program=gzip -1")
        .arg("-cf")
        .arg(&archive)
        .arg("-C")
        .arg(&stage)
        .arg("opencode")
        .status()
        .unwrap();
    assert!(packed.success());
    let bytes = std::fs::read(&archive).unwrap();
    let sum = format!("{:x}  opencode-x86_64-unknown-linux-gnu.tar.gz\n", sha2::Sha256::digest(&bytes));
    (bytes, sum.into_bytes())
}

fn install(home: &Home, releases: &str, into: &Path) -> std::process::Output {
    Command::new("bash")
        .arg(action_dir().join("install.sh"))
        .env("OPENCODE_VERSION", "v0.1.0")
        .env("OPENCODE_INSTALL_DIR", into)
        .env("OPENCODE_RELEASES", releases)
        .env("RUNNER_OS", "Linux")
        .env("RUNNER_ARCH", "X64")
        .env("GITHUB_PATH", home.path().join("github_path"))
        .output()
        .unwrap()
}

#[test]
fn the_action_installs_the_release_checked_against_its_checksum_once() {
    let home = Home::new();
    let (archive, sum) = release_archive(home.path());
    let name = "opencode-x86_64-unknown-linux-gnu.tar.gz";
    let (url, served) = releases(vec![(name.to_owned(), archive), (format!("{name}.sha256"), sum)]);
    let into = home.path().join("tools/opencode");

    let output = install(&home, &url, &into);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).ends_with("opencode 0.1.0\n"), "{}", stdout(&output));
    assert!(into.join("opencode").is_file());
    assert_eq!(std::fs::read_to_string(home.path().join("github_path")).unwrap(), format!("{}\n", into.display()));
    assert_eq!(served.lock().unwrap().len(), 2);

    // A second job on the same cache downloads nothing.
    let output = install(&home, &url, &into);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("opencode v0.1.0: from the cache\n"), "{}", stdout(&output));
    assert_eq!(served.lock().unwrap().len(), 2);
}

#[test]
fn the_action_refuses_a_release_that_does_not_match_its_checksum() {
    let home = Home::new();
    let (archive, _) = release_archive(home.path());
    let name = "opencode-x86_64-unknown-linux-gnu.tar.gz";
    let wrong = format!("{}  {name}\n", "0".repeat(64)).into_bytes();
    let (url, _) = releases(vec![(name.to_owned(), archive), (format!("{name}.sha256"), wrong)]);
    let into = home.path().join("tools/opencode");
    let output = install(&home, &url, &into);
    assert!(!output.status.success());
    let out = stdout(&output);
    assert!(
        out.contains(&format!("::error::{name} does not match its checksum (expected {}", "0".repeat(64))),
        "{out}"
    );
    assert!(!into.exists(), "nothing is installed");

    // A release missing for this version says which download failed.
    let output = install(&home, &url.replace("/releases", "/elsewhere"), &into);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("404"), "{}", stderr(&output));
}

#[test]
fn the_action_runs_the_agent_with_its_inputs_and_leaves_the_export() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, payload)) = comment_event(&home, "/fix please add the fix file") else { return };
    let remote = checkout(&home);
    let api = Api::default();
    let url = api.start();
    agent_fixes(&mock);
    let temp = home.path().join("runner_temp");
    std::fs::create_dir_all(&temp).unwrap();
    let output = Command::new("bash")
        .arg(action_dir().join("run.sh"))
        .current_dir(home.work())
        .env_clear()
        .env("HOME", home.path().join("home"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("PATH", std::env::var("PATH").unwrap())
        .env("OPENCODE_CONFIG_CONTENT", mock_config(&mock, serde_json::json!({})))
        .env("OPENCODE_BIN", env!("CARGO_BIN_EXE_opencode"))
        .env("INPUT_MENTIONS", "/fix")
        .env("INPUT_AGENT", "build")
        .env("INPUT_MODEL", "mock/m")
        .env("INPUT_PROMPT", "")
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_EVENT_NAME", "issue_comment")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_REPOSITORY", "octo/repo")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", &url)
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_RUN_ID", "42")
        .env("GITHUB_ACTOR", "someone-else")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let n = payload["issue"]["number"].as_u64().unwrap();
    assert_eq!(git(&remote, &["branch", "--list", &format!("opencode/issue{n}-*")]).lines().count(), 1);
    let last = api.lines().pop().unwrap();
    assert!(
        last.ends_with(&format!(
            "Opened #77: https://github.example/octo/repo/pull/77\n\n<sub>opencode · [run]({RUN})</sub>"
        )),
        "{last}"
    );
    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(temp.join("opencode-session.json")).unwrap()).unwrap();
    assert!(export["info"]["title"].as_str().unwrap().starts_with("GitHub: please add the fix file"), "{export}");
}

/// Every `${{ inputs.X }}` in `text`.
fn referenced_inputs(text: &str) -> Vec<String> {
    text.match_indices("inputs.")
        .map(|(at, _)| text[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_').collect())
        .collect()
}

#[test]
fn the_action_and_the_installed_workflow_read_as_github_reads_them() {
    let text = std::fs::read_to_string(action_dir().join("action.yml")).unwrap();
    let action: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(action["runs"]["using"], "composite");
    let inputs = action["inputs"].as_object().unwrap();
    for name in ["prompt", "model", "agent", "directory", "github-token", "mentions", "version"] {
        assert!(inputs.contains_key(name), "input {name}");
    }
    assert_eq!(inputs["agent"]["default"], "build");
    assert_eq!(inputs["mentions"]["default"], "/opencode,/oc");
    for name in referenced_inputs(&text) {
        assert!(inputs.contains_key(&name), "action.yml uses an undeclared input {name}");
    }
    for step in action["runs"]["steps"].as_array().unwrap() {
        assert!(step["uses"].is_string() || step["shell"] == "bash", "a run step needs a shell: {step}");
    }

    let home = Home::new();
    git(&home.work(), &["init", "--quiet"]);
    let install = |args: &[&str]| home.opencode(&[&["github", "install"], args].concat()).output().unwrap();
    let output = install(&["--model", "anthropic/claude-sonnet-4-5", "--review"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("add the repository secret ANTHROPIC_API_KEY"), "{}", stdout(&output));
    let path = home.work().join(".github/workflows/opencode.yml");
    let workflow: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let triggers = workflow["on"].as_object().unwrap();
    assert_eq!(triggers.keys().collect::<Vec<_>>(), ["issue_comment", "pull_request_review_comment", "pull_request"]);
    let steps = workflow["jobs"]["opencode"]["steps"].as_array().unwrap();
    assert_eq!(steps[1]["uses"], format!("opencode-rs/opencode-rs/github@v{}", env!("CARGO_PKG_VERSION")));
    assert_eq!(steps[1]["env"]["ANTHROPIC_API_KEY"], "${{ secrets.ANTHROPIC_API_KEY }}");
    assert_eq!(steps[1]["with"]["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(workflow["jobs"]["opencode"]["permissions"]["contents"], "write");

    // It never replaces a workflow unasked.
    let output = install(&["--model", "anthropic/claude-sonnet-4-5"]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("already exists"), "{}", stderr(&output));
    let output = install(&["--model", "nobody/model"]);
    assert!(stderr(&output).contains("unknown provider `nobody`"), "{}", stderr(&output));
}
