//! Runtime overhead per provider turn: from a tool call arriving at the end of turn k's stream to the
//! request of turn k+1 being sent (tool settlement, boundary, context reconcile, history reload,
//! request building), with 10, 100 and 1,000 messages of history. A no-op tool; the mock answers at
//! once. Then 1,000 turns in one session, printing the process's RSS growth (`VmRSS` in
//! `/proc/self/status`) from after the first 100 turns (allocator and caches warm) to the end.
//!
//! `cargo bench -p opencode-session-runtime --bench turn`

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use futures_util::future::BoxFuture;
use opencode_config::Config;
use opencode_config::Paths;
use opencode_llm::LlmRequest;
use opencode_llm::ToolDefinition;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::Hooks;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use opencode_session_runtime::ToolInvocation;
use opencode_session_runtime::TurnInfo;
use opencode_session_store::CreatedTime;
use opencode_session_store::MessageInfo;
use opencode_session_store::ModelRef;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use serde_json::json;

const TURNS: usize = 200;

/// Records when a tool call starts (end of a stream) and when the next request is about to go out.
#[derive(Default)]
struct Clock {
    tool_at: Mutex<Option<Instant>>,
    gaps: Mutex<Vec<f64>>,
}

impl Hooks for Clock {
    fn chat_params<'a>(&'a self, _turn: &'a TurnInfo, _request: &'a mut LlmRequest) -> BoxFuture<'a, ()> {
        if let Some(at) = self.tool_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            self.gaps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(at.elapsed().as_secs_f64() * 1e3);
        }
        Box::pin(async {})
    }

    fn tool_before<'a>(&'a self, _turn: &'a TurnInfo, _call: &'a mut ToolInvocation) -> BoxFuture<'a, ()> {
        *self.tool_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        Box::pin(async {})
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        println!("runtime overhead per turn (tool call received -> next request sent), {TURNS} turns");
        for history in [10, 100, 1_000] {
            let (gaps, _) = measure(history, TURNS).await?;
            println!(
                "  {history:>5} messages of history: p50 {:.2} ms, p90 {:.2} ms, min {:.2} ms",
                pct(&gaps, 50),
                pct(&gaps, 90),
                gaps[0]
            );
        }
        let (gaps, rss) = measure_rss(RSS_TURNS).await?;
        println!(
            "{RSS_TURNS} turns in one session: p50 {:.2} ms; VmRSS {:.1} MiB after 100 turns -> {:.1} MiB after {RSS_TURNS} (+{:.1} MiB)",
            pct(&gaps, 50),
            rss.0,
            rss.1,
            rss.1 - rss.0
        );
        Ok(())
    })
}

const RSS_TURNS: usize = 1_000;

/// Runs `turns` tool turns over `history` seeded messages: the per-turn gaps (sorted) and the RSS
/// (MiB) after 100 turns and at the end.
async fn measure(history: usize, turns: usize) -> Result<(Vec<f64>, (f64, f64)), Box<dyn std::error::Error>> {
    let mock = MockProvider::start().await?;
    let base = format!("{}/v1", mock.base_url());
    measure_at(&base, Some(&mock), history, turns).await
}

/// Runs the turns against the model at `base` (scripted through `mock` when given).
async fn measure_at(
    base: &str,
    mock: Option<&MockProvider>,
    history: usize,
    turns: usize,
) -> Result<(Vec<f64>, (f64, f64)), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let project = root.path().join("project");
    std::fs::create_dir_all(&project)?;
    let config: Config = serde_json::from_value(json!({
        "model": "mock/m",
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": base},
            "models": {"m": {"tool_call": true, "limit": {"context": 10000000, "output": 4096}}}}}
    }))?;
    let paths = Paths::under(&root.path().join("data"));
    let store = Arc::new(opencode_session_store::Store::open(paths.database())?);
    let tools = FnTools::new().tool(ToolDefinition::new("noop", "Does nothing", json!({"type": "object"})), |_, _| {
        Box::pin(async { Ok("ok".to_owned()) })
    });
    let clock = Arc::new(Clock::default());
    let rt = SessionRuntime::builder(
        Arc::clone(&store),
        opencode_llm::LlmClient::new(),
        Arc::new(opencode_catalog::Catalog::default().with_config(&config)?),
        Arc::new(config.clone()),
        paths.clone(),
    )
    .locations(
        StandardLocations::new(&config, paths, Default::default()).with_tools(move |_| Ok(Arc::new(tools.clone()))),
    )
    .hooks(Arc::clone(&clock) as Arc<dyn Hooks>)
    .build();
    let session = rt.create_session(&project, Default::default()).await?;
    seed(&store, &session.id, history)?;
    for turn in (0..turns).filter(|_| mock.is_some()) {
        let Some(mock) = mock else { break };
        let call = json!({"index": 0, "id": format!("call_{turn}"), "type": "function", "function": {"name": "noop", "arguments": "{}"}});
        mock.push(MockResponse::sse([
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).to_string(),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
            "[DONE]".to_owned(),
        ]));
    }
    if let Some(mock) = mock {
        mock.push(MockResponse::sse([
            json!({"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]}).to_string(),
            "[DONE]".to_owned(),
        ]));
    }
    let watch = Arc::clone(&clock);
    let warm = tokio::spawn(async move {
        loop {
            if watch.gaps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len() >= 100 {
                return rss_mib();
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    rt.run(PromptRequest::text(&session.id, "go")).await?;
    let end = rss_mib();
    let warm = if turns > 100 {
        warm.await?
    } else {
        warm.abort();
        end
    };
    let mut gaps = clock.gaps.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    gaps.sort_by(f64::total_cmp);
    Ok((gaps, (warm, end)))
}

/// [`measure`] for the RSS figure, against a mock that keeps nothing: the recording mock provider
/// keeps every request body (each carrying the whole history), which would dominate the figure.
async fn measure_rss(turns: usize) -> Result<(Vec<f64>, (f64, f64)), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, Arc::clone(&served), turns));
        }
    });
    measure_at(&format!("http://{address}/v1"), None, 10, turns).await
}

/// Answers each request on one connection: a tool call for the first `turns` requests, then text.
async fn serve(mut socket: tokio::net::TcpStream, served: Arc<std::sync::atomic::AtomicUsize>, turns: usize) {
    use tokio::io::AsyncReadExt;
    use tokio::io::AsyncWriteExt;
    let mut buffer = Vec::new();
    loop {
        let mut chunk = [0u8; 64 * 1024];
        let header_end = loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let headers = String::from_utf8_lossy(&buffer[..header_end]).to_ascii_lowercase();
        let length = headers
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buffer.len() < header_end + length {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        buffer.drain(..header_end + length);
        let turn = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let body = if turn < turns {
            let call = json!({"index": 0, "id": format!("call_{turn}"), "type": "function", "function": {"name": "noop", "arguments": "{}"}});
            format!(
                "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
            )
        } else {
            format!(
                "data: {}\n\ndata: [DONE]\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]})
            )
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// This process's resident set (MiB), from `/proc/self/status` (0 where there is none).
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `count` user messages with one text part each, written directly.
fn seed(store: &opencode_session_store::Store, session: &str, count: usize) -> opencode_session_store::Result<()> {
    store.write(|tx| {
        for i in 0..count {
            let message_id = id::ascending(id::IdKind::Message);
            tx.append_message(&MessageInfo::User(UserMessage {
                id: message_id.clone(),
                session_id: session.to_owned(),
                time: CreatedTime { created: tx.now() },
                format: None,
                summary: None,
                agent: "build".into(),
                model: ModelRef { provider_id: "mock".into(), model_id: "m".into(), variant: None },
                system: None,
                tools: None,
            }))?;
            tx.upsert_part(&Part {
                id: id::ascending(id::IdKind::Part),
                session_id: session.to_owned(),
                message_id,
                kind: PartKind::Text {
                    text: format!("message {i}: {}", "lorem ipsum ".repeat(20)),
                    synthetic: None,
                    ignored: None,
                    time: None,
                    metadata: None,
                },
            })?;
        }
        Ok(())
    })
}

fn pct(sorted: &[f64], p: usize) -> f64 {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}
