//! Against this project's server.

use std::path::Path;

use opencode_client::Client;
use opencode_client::ClientError;
use opencode_client::StreamItem;
use opencode_config::Env;
use opencode_http_api::ServerOptions;
use pretty_assertions::assert_eq;

use super::mock_with_tool_call;
use super::prompt_and_follow;
use super::shown;

struct Ours {
    server: opencode_http_api::Server,
    client: Client,
    _mock: opencode_mock_provider::MockProvider,
    _root: tempfile::TempDir,
}

async fn start(port: u16, root: tempfile::TempDir) -> Ours {
    let mock = mock_with_tool_call("Here they are.").await;
    let dir = root.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "# demo\n").unwrap();
    let config = opencode_mock_provider::peer::mock_project_config(&format!("{}/v1", mock.base_url()));
    std::fs::write(dir.join("opencode.json"), config).unwrap();
    let env = Env::from_pairs([("HOME", root.path().join("home").to_string_lossy().into_owned())]);
    let server = start_server(port, env, &dir).await;
    let client = Client::new(&server.url()).unwrap().with_directory(dir.to_string_lossy());
    Ours { server, client, _mock: mock, _root: root }
}

async fn start_server(port: u16, env: Env, dir: &Path) -> opencode_http_api::Server {
    let options = ServerOptions { port, ..ServerOptions::default() };
    opencode_http_api::start_server(options, env, dir.to_path_buf()).await.unwrap()
}

#[tokio::test]
async fn a_turn_with_a_tool_call_is_followed_live_and_matches_the_stored_transcript() {
    let ours = start(0, tempfile::tempdir().unwrap()).await;
    assert!(ours.client.health().await.unwrap().healthy);
    let (followed, fetched) = prompt_and_follow(&ours.client, "Here they are.").await;
    assert_eq!(shown(&followed), shown(&fetched));
    assert_eq!(
        shown(&fetched),
        ["User: list the files here", "tool bash Completed (2 lines)", "Assistant: Here they are."]
    );
    let sessions = ours.client.sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].title, "client test");
}

#[tokio::test]
async fn failures_are_one_line_errors_with_a_hint() {
    let ours = start(0, tempfile::tempdir().unwrap()).await;
    let missing = ours.client.session("ses_0000000000000000000000000").await.unwrap_err();
    assert_eq!(missing.status(), Some(404));
    assert!(
        missing.to_string().starts_with("GET /session/ses_0000000000000000000000000 failed with 404: "),
        "{missing}"
    );
    assert!(matches!(Client::new("localhost:4096"), Err(ClientError::BadUrl(_))));
    let nobody = Client::new("http://127.0.0.1:9").unwrap().health().await.unwrap_err();
    assert!(matches!(nobody, ClientError::Unreachable { .. }), "{nobody}");
    assert_eq!(nobody.hint(), "check that the server is running and the URL is right");
}

#[tokio::test]
async fn the_event_stream_comes_back_after_the_server_restarts() {
    let ours = start(0, tempfile::tempdir().unwrap()).await;
    let port = ours.server.local_addr().port();
    let mut events = ours.client.events();
    assert!(matches!(events.next().await, Some(StreamItem::Event { .. })));
    let Ours { server, client, _mock, _root } = ours;
    server.shutdown().await.unwrap();
    let dropped = tokio::time::timeout(super::GUARD, events.next()).await.unwrap();
    assert!(matches!(dropped, Some(StreamItem::Disconnected(_))), "{dropped:?}");
    let env = Env::from_pairs([("HOME", _root.path().join("home").to_string_lossy().into_owned())]);
    let _again = start_server(port, env, &_root.path().join("project")).await;
    loop {
        match tokio::time::timeout(super::GUARD, events.next()).await.unwrap().unwrap() {
            StreamItem::Reconnected => break,
            StreamItem::Disconnected(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let connected = super::next_event(&mut events).await;
    assert_eq!(connected, opencode_client::Event::Connected);
    assert!(client.health().await.unwrap().healthy);
}

#[tokio::test]
async fn a_session_is_shared_at_a_link_that_serves_it_and_unshared() {
    let ours = start(0, tempfile::tempdir().unwrap()).await;
    let session = ours.client.create_session(Some("to share")).await.unwrap();
    let url = ours.client.share(&session.id).await.unwrap().expect("a link");
    assert!(url.ends_with(&format!("/share/{}", session.id)), "{url}");
    let page = reqwest::get(&url).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("to share"));
    ours.client.unshare(&session.id).await.unwrap();
    assert_eq!(ours.client.session(&session.id).await.unwrap().share_url(), None);
}

#[tokio::test]
async fn a_providers_api_key_is_stored_through_the_server_and_the_provider_becomes_usable() {
    let ours = start(0, tempfile::tempdir().unwrap()).await;
    let before = ours.client.all_providers().await.unwrap();
    let groq = before.iter().find(|provider| provider.id == "groq").expect("the catalog knows groq");
    assert!(!groq.connected);
    ours.client.set_api_key("groq", "gsk-test").await.unwrap();
    let after = ours.client.all_providers().await.unwrap();
    assert!(after.iter().any(|provider| provider.id == "groq" && provider.connected));
    let usable = ours.client.providers().await.unwrap();
    assert!(usable.providers.iter().any(|provider| provider.id == "groq"));
}
