//! Against OpenCode 1.18.34's own server (`opencode serve` from npm, offline, in a throw-away home):
//! the same calls and event stream decode, and a turn reads the same as against ours.

use std::io::BufRead;
use std::io::BufReader;
use std::path::Path;
use std::process::Child;
use std::process::Stdio;

use opencode_client::Client;
use opencode_mock_provider::peer::OpenCode;
use pretty_assertions::assert_eq;

use super::mock_with_tool_call;
use super::prompt_and_follow;
use super::shown;

/// `opencode serve` killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _killed = self.0.kill();
        let _reaped = self.0.wait();
    }
}

fn serve(opencode: &OpenCode, home: &Path, dir: &Path) -> (Serve, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = opencode
        .command_in(home, dir)
        .args(["serve", "--hostname", "127.0.0.1", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let serve = Serve(child);
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.split("listening on ").nth(1).map(str::to_owned))
        .expect("OpenCode printed its URL");
    (serve, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_speaks_to_opencodes_own_server() {
    let Some(opencode) = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR"))) else { return };
    let mock = mock_with_tool_call("Here they are.").await;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "# demo\n").unwrap();
    let config = opencode_mock_provider::peer::mock_project_config(&format!("{}/v1", mock.base_url()));
    std::fs::write(dir.join("opencode.json"), config).unwrap();
    let home = root.path().join("home");
    let (_serve, url) = tokio::task::block_in_place(|| serve(&opencode, &home, &dir));
    let client = Client::new(&url).unwrap().with_directory(dir.to_string_lossy());
    assert!(client.health().await.unwrap().healthy);
    assert!(client.agents().await.unwrap().iter().any(|agent| agent.name == "build"));
    let providers = client.providers().await.unwrap();
    assert!(providers.providers.iter().any(|p| p.id == "mock"), "{providers:?}");

    let (followed, fetched) = prompt_and_follow(&client, "Here they are.").await;
    assert_eq!(shown(&followed), shown(&fetched));
    assert_eq!(
        shown(&fetched),
        ["User: list the files here", "tool bash Completed (2 lines)", "Assistant: Here they are."]
    );
    let missing = client.session("ses_0000000000000000000000000").await.unwrap_err();
    assert_eq!(missing.status(), Some(404), "{missing}");
}
