#![allow(clippy::expect_used, reason = "an example fails loudly")]

//! A local OpenAI-compatible model to try `opencode run` without an API key: it streams a short
//! answer, word by word, to every request, and prints the configuration that points opencode at it.
//!
//! ```sh
//! cargo run -p opencode --example mock_model -- run "Say hello"   # one command: runs `opencode run` against it
//! cargo run -p opencode --example mock_model          # or keep it serving: prints an `export ...` line
//! ```

use std::time::Duration;

use opencode_mock_provider::{MockProvider, MockResponse};
use serde_json::json;

const ANSWER: &str = "Hello from the local mock model! opencode streamed this answer through its session runtime; \
                      point it at a real provider with `opencode auth login` and `-m provider/model`.";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mock = MockProvider::start().await.expect("cannot start the mock model");
    let config = json!({
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Local mock",
            "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "none"},
            "models": {"echo": {"name": "Mock", "tool_call": true, "limit": {"context": 128_000, "output": 4_096}}}}},
        "model": "mock/echo"
    });
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() {
        std::process::exit(run_opencode(&mock, config.to_string(), args).await);
    }
    println!("mock model listening on {}/v1 (Ctrl-C stops it)", mock.base_url());
    println!("in another terminal:\n");
    println!("  export OPENCODE_CONFIG_CONTENT='{config}'");
    println!("  cargo run -p opencode -- run \"Say hello\"\n");
    loop {
        while mock.remaining() < 2 {
            mock.push(answer());
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
            _ = tokio::signal::ctrl_c() => return,
        }
    }
}

/// Runs `opencode <args>` (through cargo) pointed at the mock, serving answers until it exits.
async fn run_opencode(mock: &MockProvider, config: String, args: Vec<String>) -> i32 {
    let child = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO"))
            .args(["run", "-q", "-p", "opencode", "--"])
            .args(args)
            .env("OPENCODE_CONFIG_CONTENT", config)
            .status()
    });
    tokio::pin!(child);
    loop {
        while mock.remaining() < 2 {
            mock.push(answer());
        }
        tokio::select! {
            status = &mut child => {
                let status = status.expect("the opencode process was lost").expect("cannot run cargo");
                return status.code().unwrap_or(1);
            }
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// The answer streamed a word at a time.
fn answer() -> MockResponse {
    let mut response = MockResponse::sse(Vec::<String>::new());
    for (index, word) in ANSWER.split_inclusive(' ').enumerate() {
        let role = if index == 0 { json!("assistant") } else { json!(null) };
        let chunk = json!({"id": "mock", "choices": [{"index": 0, "delta": {"role": role, "content": word}}]});
        response = response.chunk(format!("data: {chunk}\n\n")).delay(Duration::from_millis(15));
    }
    let done = json!({"id": "mock", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let usage = json!({"id": "mock", "choices": [],
                       "usage": {"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50}});
    response.chunk(format!("data: {done}\n\ndata: {usage}\n\ndata: [DONE]\n\n"))
}
