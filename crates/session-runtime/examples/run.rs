//! Drives one prompt end to end against a scripted mock provider: the model reads a file through a
//! tool, then answers. Run with `cargo run -p opencode-session-runtime --example run`.

use std::sync::Arc;

use opencode_config::Config;
use opencode_config::Paths;
use opencode_llm::ToolDefinition;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_session_runtime::DeltaKind;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RuntimeEvent;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mock = MockProvider::start().await?;
    let call = json!({"index": 0, "id": "call_1", "type": "function",
                      "function": {"name": "read", "arguments": "{\"path\":\"hello.txt\"}"}});
    mock.push(MockResponse::sse([
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).to_string(),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
        "[DONE]".to_owned(),
    ]));
    mock.push(MockResponse::sse([
        json!({"choices": [{"index": 0, "delta": {"content": "The file says hello."}}]}).to_string(),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        json!({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 6, "total_tokens": 126}})
            .to_string(),
        "[DONE]".to_owned(),
    ]));

    let root = tempfile::tempdir()?;
    let project = root.path().join("project");
    std::fs::create_dir_all(&project)?;
    std::fs::write(project.join("hello.txt"), "hello")?;
    let config: Config = serde_json::from_value(json!({
        "model": "mock/m",
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": format!("{}/v1", mock.base_url())},
            "models": {"m": {"tool_call": true, "limit": {"context": 128000, "output": 4096}}}}}
    }))?;
    let paths = Paths::under(&root.path().join("data"));
    let tools = FnTools::new().tool(
        ToolDefinition::new(
            "read",
            "Read a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ),
        |input, ctx| {
            Box::pin(async move {
                let path = ctx.directory.join(input["path"].as_str().unwrap_or_default());
                std::fs::read_to_string(path).map_err(|err| err.to_string())
            })
        },
    );
    let locations = StandardLocations::new(&config, paths.clone(), Default::default())
        .with_tools(move |_| Ok(Arc::new(tools.clone())));
    let runtime = SessionRuntime::builder(
        Arc::new(opencode_session_store::Store::open(paths.database())?),
        opencode_llm::LlmClient::new(),
        Arc::new(opencode_catalog::Catalog::default().with_config(&config)?),
        Arc::new(config),
        paths,
    )
    .locations(locations)
    .build();

    let mut events = runtime.subscribe();
    let printer = tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            match &*event {
                RuntimeEvent::Delta { kind: DeltaKind::Text, delta, .. } => print!("{delta}"),
                RuntimeEvent::Durable(event)
                    if event.kind == opencode_session_store::EventKind::PartUpdated
                        && event.data["part"]["type"] == "tool"
                        && event.data["part"]["state"]["status"] == "completed" =>
                {
                    println!("[tool {} -> {}]", event.data["part"]["tool"], event.data["part"]["state"]["output"]);
                }
                _ => {}
            }
        }
    });
    let session = runtime.create_session(&project, Default::default()).await?;
    let result = runtime.run(PromptRequest::text(&session.id, "What does hello.txt say?")).await?;
    println!(
        "\n{:?}: {} requests, {} output tokens",
        result.outcome,
        mock.requests().len(),
        result.session.tokens.output
    );
    drop(runtime);
    printer.abort();
    Ok(())
}
