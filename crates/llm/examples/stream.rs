//! Streams one completion and prints every event as a JSON line, then the folded response.
//!
//! ```text
//! cargo run -p opencode-llm --example stream -- --provider anthropic --model claude-haiku-4-5 "Say hello"
//! cargo run -p opencode-llm --example stream -- --provider openai --model gpt-4o-mini --protocol openai-chat "Hi"
//! cargo run -p opencode-llm --example stream -- --provider ollama --model llama3.2 --base-url http://127.0.0.1:11434/v1 "Hi"
//! cargo run -p opencode-llm --example stream -- --mock "Say hello"
//! ```
//!
//! Keys (and AWS credentials and region) come from the usual environment variables. `--mock` starts
//! a local mock provider speaking the Chat Completions wire format, so the whole stack runs offline.

use std::process::ExitCode;

use futures_util::StreamExt;
use opencode_llm::LlmClient;
use opencode_llm::LlmError;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::LlmResponse;
use opencode_llm::Message;
use opencode_llm::provider;
use opencode_llm::provider::ProviderConfig;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use serde_json::json;

const USAGE: &str = "usage: stream --provider P --model M [--protocol NAME] [--base-url URL] [--system TEXT] \
                     [--max-tokens N] [--mock] \"prompt\"";

#[derive(Debug, Default)]
struct Args {
    provider: Option<String>,
    model: Option<String>,
    protocol: Option<String>,
    base_url: Option<String>,
    system: Option<String>,
    max_tokens: Option<u32>,
    mock: bool,
    prompt: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("error: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}\nhint: {}", error.hint());
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), LlmError> {
    let prompt = args.prompt.clone().unwrap_or_default();
    // Kept alive for the whole run when `--mock` is used.
    let mut mock = None;
    let (provider_id, config) = if args.mock {
        let server = MockProvider::start()
            .await
            .map_err(|err| LlmError::configuration(format!("cannot start the mock provider: {err}")))?;
        server.push(scripted_reply(&prompt));
        let config = ProviderConfig { base_url: Some(format!("{}/v1", server.base_url())), ..Default::default() };
        mock = Some(server);
        ("openai-compatible".to_owned(), config)
    } else {
        let provider = args.provider.clone().ok_or_else(|| LlmError::configuration("--provider is required"))?;
        let config =
            ProviderConfig { base_url: args.base_url.clone(), protocol: args.protocol.clone(), ..Default::default() };
        (provider, config)
    };
    let route = provider::route(&provider_id, &config)?;

    let model =
        args.model.clone().unwrap_or_else(|| if mock.is_some() { "mock-model".to_owned() } else { String::new() });
    if model.is_empty() {
        return Err(LlmError::configuration("--model is required"));
    }
    let mut request = LlmRequest::new(model).message(Message::user(prompt));
    if let Some(system) = args.system {
        request = request.system(system);
    }
    request.generation.max_tokens = args.max_tokens;

    let client = LlmClient::new();
    let mut stream = client.stream(&route, &request).await?;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        println!("{}", serde_json::to_string(&event).unwrap_or_default());
        events.push(event);
    }
    let response = LlmResponse::from_events(&events);
    let folded = json!({
        "text": response.text(),
        "reasoning": response.reasoning(),
        "tool_calls": response.tool_calls(),
        "usage": response.usage,
        "finish_reason": response.finish_reason,
    });
    println!("{folded}");
    match events.into_iter().last() {
        Some(LlmEvent::Error { error }) => Err(error),
        _ => Ok(()),
    }
}

/// A Chat Completions stream that echoes the prompt word by word.
fn scripted_reply(prompt: &str) -> MockResponse {
    let reply = format!("You said: {prompt}");
    let mut chunks: Vec<String> = reply
        .split_inclusive(' ')
        .map(|word| {
            json!({"id": "mock-1", "model": "mock-model", "choices": [{"index": 0, "delta": {"content": word}}]})
                .to_string()
        })
        .collect();
    chunks.push(json!({"id": "mock-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string());
    let words = reply.split(' ').count() as u64;
    chunks.push(
        json!({"id": "mock-1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": words, "total_tokens": 12 + words}})
            .to_string(),
    );
    chunks.push("[DONE]".to_owned());
    MockResponse::sse(chunks)
}

fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args::default();
    while let Some(arg) = argv.next() {
        let mut value = |name: &str| argv.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--provider" => args.provider = Some(value("--provider")?),
            "--model" => args.model = Some(value("--model")?),
            "--protocol" => args.protocol = Some(value("--protocol")?),
            "--base-url" => args.base_url = Some(value("--base-url")?),
            "--system" => args.system = Some(value("--system")?),
            "--max-tokens" => {
                let raw = value("--max-tokens")?;
                args.max_tokens = Some(raw.parse().map_err(|_| format!("--max-tokens takes a number, not `{raw}`"))?);
            }
            "--mock" => args.mock = true,
            "-h" | "--help" => return Err("help requested".to_owned()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag `{flag}`")),
            _ if args.prompt.is_none() => args.prompt = Some(arg),
            _ => return Err("give the prompt as one quoted argument".to_owned()),
        }
    }
    if args.prompt.is_none() {
        return Err("a prompt is required".to_owned());
    }
    if !args.mock && (args.provider.is_none() || args.model.is_none()) {
        return Err("--provider and --model are required (or use --mock)".to_owned());
    }
    Ok(args)
}
