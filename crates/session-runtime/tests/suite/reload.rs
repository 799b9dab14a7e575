//! Reloading a directory's Location: the next use loads the directory's current configuration (model,
//! tools); a drain running in the directory keeps the Location it started with, and the reload
//! happens once it is over.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;

use opencode_catalog::Catalog;
use opencode_config::Config;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_llm::ClientOptions;
use opencode_llm::LlmClient;
use opencode_llm::RetryPolicy;
use opencode_mock_provider::MockProvider;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RegistryTools;
use opencode_session_runtime::Reload;
use opencode_session_runtime::RuntimeOptions;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use opencode_session_runtime::ToolHost;
use opencode_session_store::MessageInfo;
use opencode_session_store::NewSession;
use opencode_session_store::Store;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::admission::gated_tool;
use super::support::fast_retries;
use super::support::text;
use super::support::tool_call;

/// A configuration naming `model` of the mock provider (which offers `m` and `m2`).
fn config_json(mock: &MockProvider, model: &str) -> Value {
    mock.opencode_config(json!({
        "model": format!("mock/{model}"),
        "provider": {"mock": {"models": {"m2": {"tool_call": true}}}}
    }))
}

struct Setup {
    runtime: SessionRuntime,
    /// How many times a Location was opened (its tools built).
    opens: Arc<AtomicUsize>,
    project: tempfile::TempDir,
    _data: tempfile::TempDir,
}

/// A runtime that loads each directory's own configuration; its start configuration names `mock/m`.
fn setup(mock: &MockProvider, tools: FnTools) -> Setup {
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config: Config = serde_json::from_value(config_json(mock, "m")).unwrap();
    let paths = Paths::under(data.path());
    let store = Arc::new(Store::open(paths.database()).unwrap());
    let catalog = Arc::new(Catalog::default().with_config(&config).unwrap());
    let llm = LlmClient::with_options(ClientOptions { retry: RetryPolicy::none(), ..ClientOptions::default() });
    let opens = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&opens);
    let locations = StandardLocations::new(&config, paths.clone(), Env::default())
        .per_directory()
        .with_configured_tools(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(Arc::new(tools.clone()) as Arc<dyn ToolHost>)
        });
    let options = RuntimeOptions { retry: fast_retries(), titles: false, ..RuntimeOptions::default() };
    // The project's file names the start configuration: its own configuration applies to it.
    write_config(project.path(), &config_json(mock, "m"));
    let runtime = SessionRuntime::builder(store, llm, catalog, Arc::new(config), paths)
        .locations(locations)
        .options(options)
        .build();
    Setup { runtime, opens, project, _data: data }
}

fn write_config(dir: &Path, config: &Value) {
    std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
}

/// The model of every request the mock received.
fn models(mock: &MockProvider) -> Vec<String> {
    mock.requests().iter().map(|r| r.body_json().unwrap()["model"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_reload_makes_the_next_prompt_use_the_changed_configuration() {
    let mock = MockProvider::start().await.unwrap();
    let s = setup(&mock, FnTools::new());
    let session = s.runtime.create_session(s.project.path(), NewSession::default()).await.unwrap();
    mock.push_all([text("one"), text("two"), text("three")]);

    s.runtime.run(PromptRequest::text(&session.id, "first")).await.unwrap();
    write_config(s.project.path(), &config_json(&mock, "m2"));
    // The open Location keeps the configuration it was opened with.
    s.runtime.run(PromptRequest::text(&session.id, "second")).await.unwrap();
    assert_eq!(s.runtime.reload_location(s.project.path()), Reload::Disposed);
    assert_eq!(s.runtime.open_locations(), vec![]);
    s.runtime.run(PromptRequest::text(&session.id, "third")).await.unwrap();

    assert_eq!(models(&mock), ["m", "m", "m2"]);
    assert_eq!(s.opens.load(Ordering::SeqCst), 2);
    assert_eq!(s.runtime.reload_location(Path::new("/nowhere/open")), Reload::NotOpen);
}

#[tokio::test]
async fn a_reload_during_a_running_turn_waits_for_the_drain_and_the_turn_keeps_its_location() {
    let mock = MockProvider::start().await.unwrap();
    let (tools, mut started, release) = gated_tool();
    let s = setup(&mock, tools);
    let session = s.runtime.create_session(s.project.path(), NewSession::default()).await.unwrap();
    mock.push_all([tool_call("call_1", "wait", json!({})), text("Done."), text("Reloaded.")]);

    s.runtime.prompt(PromptRequest::text(&session.id, "Start")).await.unwrap();
    tokio::select! {
        _ = started.recv() => {}
        outcome = s.runtime.wait_idle(&session.id) => panic!("the drain ended before its tool ran: {outcome:?}"),
    }
    write_config(s.project.path(), &config_json(&mock, "m2"));
    assert_eq!(s.runtime.reload_location(s.project.path()), Reload::Deferred);
    let directory = s.project.path().to_path_buf();
    assert_eq!(s.runtime.open_locations(), vec![(directory.clone(), true)]);
    // Asking for the Location meanwhile (here: validating an agent) does not replace it.
    let check =
        PromptRequest { agent: Some("build".into()), admit_only: true, ..PromptRequest::text(&session.id, "x") };
    s.runtime.prompt(check).await.unwrap();
    assert_eq!(s.opens.load(Ordering::SeqCst), 1);

    release.notify_one();
    assert_eq!(s.runtime.wait_idle(&session.id).await, Some(DrainOutcome::Completed));
    // The whole drain ran with the configuration it started with: both of its requests used `m`.
    assert_eq!(models(&mock), ["m", "m"]);
    let history = s.runtime.store().read(|r| r.messages(&session.id, None, 100)).unwrap();
    for message in &history.messages {
        if let MessageInfo::Assistant(assistant) = &message.info {
            assert_eq!(assistant.error, None);
        }
    }

    s.runtime.run(PromptRequest::text(&session.id, "Again")).await.unwrap();
    assert_eq!(models(&mock), ["m", "m", "m2"]);
    assert_eq!(s.opens.load(Ordering::SeqCst), 2);
    assert_eq!(s.runtime.open_locations(), vec![(directory, false)]);
}

#[tokio::test]
async fn reload_all_disposes_every_idle_location() {
    let mock = MockProvider::start().await.unwrap();
    let s = setup(&mock, FnTools::new());
    let other = tempfile::tempdir().unwrap();
    mock.push_all([text("a"), text("b")]);
    for dir in [s.project.path(), other.path()] {
        write_config(dir, &config_json(&mock, "m2"));
        let session = s.runtime.create_session(dir, NewSession::default()).await.unwrap();
        s.runtime.run(PromptRequest::text(&session.id, "hi")).await.unwrap();
    }
    assert_eq!(s.runtime.open_locations().len(), 2);

    let reloaded = s.runtime.reload_all();
    assert_eq!(reloaded.len(), 2);
    assert!(reloaded.iter().all(|(_, reload)| *reload == Reload::Disposed), "{reloaded:?}");
    assert_eq!(s.runtime.open_locations(), vec![]);
}

#[tokio::test]
async fn a_reload_stops_the_locations_mcp_servers_and_the_next_use_starts_them_again() {
    if std::process::Command::new("node").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "node is required under CI for the MCP tests");
        eprintln!("notice: node not found; skipping this MCP test");
        return;
    }
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/scripted.mjs");
    let pid_file = project.path().join("pid");
    let command = json!(["node", script, "--pid-file", pid_file]);
    let config: Config =
        serde_json::from_value(json!({"mcp": {"scripted": {"type": "local", "command": command}}})).unwrap();
    let paths = Paths::under(data.path());
    let (tool_paths, permissions) = (paths.clone(), Arc::new(opencode_tool_registry::Permissions::in_memory()));
    let locations =
        StandardLocations::new(&config, paths.clone(), Env::default()).with_configured_tools(move |dir, config| {
            let tools = RegistryTools::standard(dir, config, &tool_paths, Arc::clone(&permissions))?;
            Ok(Arc::new(tools) as Arc<dyn ToolHost>)
        });
    let runtime = SessionRuntime::builder(
        Arc::new(Store::open(paths.database()).unwrap()),
        LlmClient::new(),
        Arc::new(Catalog::default()),
        Arc::new(config),
        paths,
    )
    .locations(locations)
    .options(RuntimeOptions { titles: false, ..RuntimeOptions::default() })
    .build();
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    // Checking the prompt's agent opens the Location, which starts its MCP server.
    let open =
        || PromptRequest { agent: Some("build".into()), admit_only: true, ..PromptRequest::text(&session.id, "x") };

    runtime.prompt(open()).await.unwrap();
    let first = server_pid(&pid_file).await;
    assert!(alive(first));
    assert_eq!(runtime.reload_location(project.path()), Reload::Disposed);
    // Killing is immediate (SIGKILL to the group); reaping may take a moment.
    while alive(first) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    runtime.prompt(open()).await.unwrap();
    let second = server_pid(&pid_file).await;
    assert_ne!(first, second);
    assert!(alive(second));
}

/// The pid the scripted MCP server wrote once it started (the file is removed for the next one).
async fn server_pid(file: &Path) -> i32 {
    loop {
        if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|text| text.trim().parse().ok()) {
            std::fs::remove_file(file).unwrap();
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or_default().trim_start().starts_with('Z'),
        Err(_) => false,
    }
}
