//! Sessions: load (history replayed), resume (not replayed), list, modes and config options, and a client that vanishes.

use agent_client_protocol::v1::schema::{
    ListSessionsRequest, LoadSessionRequest, ResumeSessionRequest, SessionConfigKind, SessionConfigOptionValue,
    SessionConfigSelectOptions, SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest, ToolCallStatus,
};
use opencode_session_store::{MessageInfo, PartKind};
use serde_json::json;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_the_whole_history() {
    let fixture = Fixture::new(json!({})).await;
    fixture
        .push([tool_call("call_1", "bash", json!({"command": "echo replayed", "description": "Echo"})), text("Done.")]);
    let work = fixture.work.clone();
    let session = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.prompt(&session, "run the echo").await.unwrap();
            session
        })
        .await;
    let (work, id) = (fixture.work.clone(), session.clone());
    let (response, updates) = fixture
        .client(choose_once(), async move |conn: Conn| {
            conn.init().await;
            let load = LoadSessionRequest::new(id.clone(), work);
            let response = conn.cx.send_request(load).block_task().await.unwrap();
            (response, conn.updates(&id))
        })
        .await;
    let user = chunks(&updates, |update| match update {
        SessionUpdate::UserMessageChunk(chunk) => Some(chunk.content.clone()),
        _ => None,
    });
    assert_eq!(user, "run the echo");
    let call = updates
        .iter()
        .find_map(|update| match update {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .expect("the tool call is replayed");
    assert_eq!((call.title.as_str(), call.status), ("echo replayed", ToolCallStatus::Completed));
    assert!(call.raw_output.unwrap()["output"].as_str().unwrap().contains("replayed"));
    let agent = chunks(&updates, |update| match update {
        SessionUpdate::AgentMessageChunk(chunk) => Some(chunk.content.clone()),
        _ => None,
    });
    assert_eq!(agent, "Done.");
    assert_eq!(response.modes.unwrap().current_mode_id.0.as_ref(), "build");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_takes_up_a_session_without_replaying_it_and_the_next_turn_has_its_history() {
    let fixture = Fixture::new(json!({})).await;
    fixture.push([text("First answer."), text("Second answer.")]);
    let work = fixture.work.clone();
    let session = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.prompt(&session, "first question").await.unwrap();
            session
        })
        .await;
    let (work, id) = (fixture.work.clone(), session.clone());
    let (init, response, updates) = fixture
        .client(choose_once(), async move |conn: Conn| {
            let init = conn.init().await;
            let resume = ResumeSessionRequest::new(id.clone(), work);
            let response = conn.cx.send_request(resume).block_task().await.unwrap();
            let replayed = conn.updates(&id);
            conn.prompt(&id, "second question").await.unwrap();
            (init, response, replayed)
        })
        .await;
    assert!(init.agent_capabilities.session_capabilities.resume.is_some());
    assert_eq!(response.modes.unwrap().current_mode_id.0.as_ref(), "build");
    assert!(
        !updates
            .iter()
            .any(|update| matches!(update, SessionUpdate::UserMessageChunk(_) | SessionUpdate::AgentMessageChunk(_))),
        "nothing replayed: {updates:?}"
    );
    let second = fixture.mock.requests()[1].body_json().unwrap().to_string();
    assert!(second.contains("first question") && second.contains("First answer."), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_the_sessions_of_a_directory() {
    let fixture = Fixture::new(json!({})).await;
    let elsewhere = fixture.home.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let work = fixture.work.clone();
    let (mine, listed) = fixture
        .client(choose_once(), async move |conn: Conn| {
            let mine = conn.start(&work).await;
            conn.new_session(&elsewhere).await;
            let listed = conn.cx.send_request(ListSessionsRequest::new().cwd(work.clone())).block_task().await.unwrap();
            (mine, listed)
        })
        .await;
    let ids: Vec<&str> = listed.sessions.iter().map(|info| info.session_id.0.as_ref()).collect();
    assert_eq!(ids, [mine.as_str()]);
    assert_eq!(listed.sessions[0].cwd, fixture.work);
    assert!(listed.sessions[0].updated_at.is_some());
}

/// The values of a select option.
fn values(options: &[agent_client_protocol::v1::schema::SessionConfigOption], id: &str) -> (String, Vec<String>) {
    let option = options.iter().find(|option| option.id.0.as_ref() == id).expect("the option exists");
    let SessionConfigKind::Select(select) = &option.kind else { panic!("{id} is a select") };
    let SessionConfigSelectOptions::Ungrouped(values) = &select.options else { panic!("{id} is ungrouped") };
    (select.current_value.0.to_string(), values.iter().map(|value| value.value.0.to_string()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_are_primary_agents_and_config_options_switch_mode_model_and_thought_level() {
    let fixture = Fixture::new(json!({})).await;
    let work = fixture.work.clone();
    let (created, after_model, after_level, errors, session, updates) = fixture
        .client(choose_once(), async move |conn: Conn| {
            conn.init().await;
            let created = conn.new_session(&work).await;
            let session = created.session_id.0.to_string();
            let set = |id: &str, value: &str| {
                SetSessionConfigOptionRequest::new(
                    session.clone(),
                    id.to_owned(),
                    SessionConfigOptionValue::from(value),
                )
            };
            conn.cx.send_request(SetSessionModeRequest::new(session.clone(), "plan")).block_task().await.unwrap();
            let after_model = conn.cx.send_request(set("model", "mock/r")).block_task().await.unwrap();
            let (_, levels) = values(&after_model.config_options, "thought_level");
            let after_level = conn.cx.send_request(set("thought_level", &levels[1])).block_task().await.unwrap();
            let mut errors = Vec::new();
            for (id, value) in
                [("model", "nope/none"), ("thought_level", "extreme"), ("mode", "general"), ("colour", "red")]
            {
                errors.push(conn.cx.send_request(set(id, value)).block_task().await.unwrap_err());
            }
            conn.cx.send_request(set("mode", "build")).block_task().await.unwrap();
            (created.clone(), after_model, after_level, errors, session.clone(), conn.updates(&session))
        })
        .await;
    let modes: Vec<&str> =
        created.modes.as_ref().unwrap().available_modes.iter().map(|mode| mode.id.0.as_ref()).collect();
    assert_eq!(modes, ["build", "plan"]);
    let options = created.config_options.unwrap();
    assert_eq!(values(&options, "mode"), ("build".to_owned(), vec!["build".to_owned(), "plan".to_owned()]));
    // Every model of every provider that can be called (the small model's provider included).
    let models = vec!["mock/m".to_owned(), "mock/r".to_owned(), "titles/t".to_owned()];
    assert_eq!(values(&options, "model"), ("mock/m".to_owned(), models));
    assert_eq!(values(&options, "thought_level").1, ["default"]);
    assert_eq!(values(&after_model.config_options, "mode").0, "plan");
    assert_eq!(values(&after_model.config_options, "model").0, "mock/r");
    let (level, levels) = values(&after_level.config_options, "thought_level");
    assert!(levels.len() > 1 && level == levels[1], "{levels:?}");
    for error in &errors {
        assert_eq!(error.code, agent_client_protocol::ErrorCode::INVALID_PARAMS, "{error:?}");
    }
    assert!(errors[0].message.contains("nope/none"), "{}", errors[0].message);
    assert!(errors[2].message.contains("unknown mode `general`"), "{}", errors[2].message);
    // The choices are the session's own, durable.
    let stored = fixture.store().read(|r| r.session(&session)).unwrap().unwrap();
    assert_eq!(stored.agent.as_deref(), Some("build"));
    let model = stored.model.unwrap();
    assert_eq!(
        (model.provider_id.as_str(), model.id.as_str(), model.variant.as_deref()),
        ("mock", "r", Some(level.as_str()))
    );
    assert!(updates.iter().any(|update| matches!(update, SessionUpdate::ConfigOptionUpdate(_))));
    assert!(updates.iter().any(
        |update| matches!(update, SessionUpdate::CurrentModeUpdate(mode) if mode.current_mode_id.0.as_ref() == "build")
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_vanishing_mid_turn_interrupts_it_and_keeps_the_session() {
    let fixture = Fixture::new(json!({})).await;
    fixture.push([stalled("Partial answer")]);
    let work = fixture.work.clone();
    // The client leaves while its prompt is running; `client` returns once the agent has stopped.
    let session = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            let blocks = vec![agent_client_protocol::v1::schema::ContentBlock::from("long job".to_owned())];
            let _running =
                conn.cx.send_request(agent_client_protocol::v1::schema::PromptRequest::new(session.clone(), blocks));
            conn.wait_for(&session, |update| matches!(update, SessionUpdate::AgentMessageChunk(_))).await;
            session
        })
        .await;
    let history = fixture.store().read(|r| r.full_history(&session)).unwrap();
    let user_text: Vec<String> = history
        .iter()
        .filter(|message| matches!(message.info, MessageInfo::User(_)))
        .flat_map(|message| message.parts.iter())
        .filter_map(|part| match &part.kind {
            PartKind::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(user_text, ["long job"]);
    assert!(history.iter().any(|message| matches!(message.info, MessageInfo::Assistant(_))), "{history:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_default_agent_is_the_starting_mode() {
    let fixture = Fixture::new(json!({"default_agent": "plan"})).await;
    let work = fixture.work.clone();
    let created = fixture
        .client(choose_once(), async move |conn: Conn| {
            conn.init().await;
            conn.new_session(&work).await
        })
        .await;
    assert_eq!(created.modes.unwrap().current_mode_id.0.as_ref(), "plan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_mcp_servers_serve_the_sessions_turns() {
    if std::process::Command::new("node").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "node is required under CI for the MCP test");
        eprintln!("notice: node not found; skipping the MCP test");
        return;
    }
    let fixture = Fixture::new(json!({})).await;
    fixture.push([text("ok")]);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/scripted.mjs");
    let work = fixture.work.clone();
    fixture
        .client(choose_once(), async move |conn: Conn| {
            conn.init().await;
            let server = agent_client_protocol::v1::schema::McpServer::Stdio(
                agent_client_protocol::v1::schema::McpServerStdio::new("scripted", "node")
                    .args(vec![script.display().to_string()]),
            );
            let request = agent_client_protocol::v1::schema::NewSessionRequest::new(work).mcp_servers(vec![server]);
            let created = conn.cx.send_request(request).block_task().await.unwrap();
            conn.prompt(&created.session_id.0, "use the tool").await.unwrap();
        })
        .await;
    let request = fixture.mock.requests().pop().unwrap().body_json().unwrap();
    let tools: Vec<&str> =
        request["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"scripted_ok"), "{tools:?}");
}
