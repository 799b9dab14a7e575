//! A real server on 127.0.0.1:0 with the echo driver (or, in `runtime`, the session runtime against the
//! mock provider), over temporary directories, and a reqwest client.

mod approvals;
mod auth;
mod commands;
mod config;
mod directories;
mod errors;
mod events;
mod files;
mod find;
mod fuzz;
mod mcp;
mod openapi;
mod parts;
mod plugins;
mod project_update;
mod projects;
mod pty;
mod reload;
mod replies;
mod runtime;
mod sdk;
mod security;
mod sessions;
mod status;
mod tools;
mod vcs;
mod web;

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use opencode_config::Env;
use opencode_config::Paths;
use opencode_http_api::EchoDriver;
use opencode_http_api::Server;
use opencode_http_api::ServerContext;
use opencode_http_api::ServerOptions;
use opencode_session_store::Store;
use serde_json::Value;

pub struct TestServer {
    pub server: Server,
    pub url: String,
    pub root: tempfile::TempDir,
    /// The default instance directory (not a git repository).
    pub dir: PathBuf,
    pub store: Arc<Store>,
    pub http: reqwest::Client,
}

pub async fn start() -> TestServer {
    start_with(ServerOptions { port: 0, ..ServerOptions::default() }).await
}

pub async fn start_with(options: ServerOptions) -> TestServer {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let paths = Paths::under(&root.path().join("home"));
    std::fs::create_dir_all(&paths.data).unwrap();
    let env = Env::from_pairs([("HOME", root.path().join("home").to_string_lossy().into_owned())]);
    let store = Arc::new(Store::open(paths.database()).unwrap());
    let driver = Arc::new(EchoDriver::new(Arc::clone(&store)));
    let context = ServerContext::new(Arc::clone(&store), driver, env, paths, dir.clone());
    let server = opencode_http_api::serve(options, context).await.unwrap();
    let url = server.url();
    TestServer { server, url, root, dir, store, http: reqwest::Client::new() }
}

impl TestServer {
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        send(self.http.get(self.at(path))).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        send(self.http.post(self.at(path)).json(&body)).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        send(self.http.patch(self.at(path)).json(&body)).await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        send(self.http.delete(self.at(path))).await
    }

    /// A new git repository with one commit under the temporary root (its own project).
    pub fn git_project(&self, name: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("README.md"), format!("# {name}\n")).unwrap();
        git(&dir, &["init", "-q"]);
        git(&dir, &["add", "."]);
        git(&dir, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", name]);
        dir.canonicalize().unwrap()
    }
}

pub async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
    (status, body)
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?} failed");
}

/// `?directory=<dir>` percent-encoded.
pub fn directory_query(dir: &Path) -> String {
    format!("directory={}", percent_encode(&dir.to_string_lossy(), b"/"))
}

/// Percent-encodes everything but unreserved characters and `keep`.
pub fn percent_encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) || keep.contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
