#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-llm` benchmarks (run with `cargo xtask bench`, or `cargo bench -p opencode-llm --bench llm`).
//!
//! 1. Decode throughput: recorded SSE streams through framing + protocol decoder + event sink, in MB/s
//!    per core, next to plain `serde_json::from_slice::<Value>` over the same payload bytes.
//! 2. Per-call overhead: one streamed call through `LlmClient` against the local mock provider, minus
//!    a plain HTTP request reading the same response from the same server.

use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use futures_util::StreamExt;
use opencode_llm::LlmClient;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::framing::Frame;
use opencode_llm::protocol::EventSink;
use opencode_mock_provider::Cassette;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;

/// One recorded stream body and the protocol that decodes it.
struct Corpus {
    protocol: &'static str,
    bodies: Vec<Vec<u8>>,
}

fn main() {
    let fixtures = opencode_mock_provider::fixtures_dir();
    if !fixtures.exists() {
        eprintln!("skipping benchmarks: {} not found", fixtures.display());
        return;
    }
    let corpora = load_corpora(&fixtures);
    println!("decode throughput (one core, recorded streams fed in 1 KiB reads)");
    println!("MB/s of JSON payload bytes; `decode` = framing + protocol decoder + event lifecycle");
    println!("{:<26} {:>12} {:>14} {:>18} {:>8}", "protocol", "body bytes", "decode MB/s", "from_slice MB/s", "ratio");
    for corpus in &corpora {
        decode_benchmark(corpus);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    runtime.block_on(overhead_benchmark(&fixtures));
}

fn load_corpora(fixtures: &Path) -> Vec<Corpus> {
    let sets: [(&str, &[&str]); 5] = [
        ("openai-chat", &["recordings/llm/openai-chat", "recordings/llm/openai-compatible-chat"]),
        ("openai-responses", &["recordings/llm/openai-responses"]),
        ("anthropic-messages", &["recordings/llm/anthropic-messages"]),
        ("gemini", &["recordings/llm/gemini"]),
        ("bedrock-converse", &["recordings/llm/bedrock-converse"]),
    ];
    let mut corpora = Vec::new();
    for (protocol, dirs) in sets {
        if opencode_llm::protocol::by_id(protocol).is_none() {
            continue;
        }
        let mut bodies = Vec::new();
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(fixtures.join(dir)) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(cassette) = Cassette::load(&entry.path()) else {
                    continue;
                };
                for interaction in cassette.interactions {
                    if interaction.response.status == 200 {
                        bodies.push(interaction.response.body.to_vec());
                    }
                }
            }
        }
        if !bodies.is_empty() {
            corpora.push(Corpus { protocol, bodies });
        }
    }
    corpora
}

fn decode_benchmark(corpus: &Corpus) {
    let protocol = opencode_llm::protocol::by_id(corpus.protocol).expect("known protocol");
    let request = LlmRequest::new("bench");
    let total: usize = corpus.bodies.iter().map(Vec::len).sum();

    let decode = || {
        let mut events = 0usize;
        for body in &corpus.bodies {
            let mut frames = protocol.framing().decoder();
            let mut decoder = protocol.decoder(&request);
            let mut sink = EventSink::new();
            let mut buf: Vec<Frame> = Vec::new();
            for chunk in body.chunks(1024) {
                if frames.push(chunk, &mut buf).is_err() {
                    break;
                }
                for frame in buf.drain(..) {
                    if decoder.decode(frame, &mut sink).is_err() || sink.is_terminal() {
                        break;
                    }
                }
                events += sink.drain().count();
            }
            let _ = frames.finish(&mut buf);
            if !sink.is_terminal() {
                let _ = decoder.end(&mut sink);
            }
            events += sink.drain().count();
        }
        events
    };

    // The baseline parses exactly the JSON payloads the decoder sees.
    let payloads = payloads(corpus);
    let from_slice = || {
        let mut values = 0usize;
        for payload in &payloads {
            if serde_json::from_slice::<serde_json::Value>(payload).is_ok() {
                values += 1;
            }
        }
        values
    };

    // Both rates are over the same payload bytes, so the ratio is a ratio of times; the decoder
    // also frames the SSE or event-stream bytes around them.
    let payload_bytes: usize = payloads.iter().map(Vec::len).sum();
    let decode_rate = throughput(payload_bytes, decode);
    let baseline_rate = throughput(payload_bytes, from_slice);
    println!(
        "{:<26} {:>12} {:>14.1} {:>18.1} {:>8.2}",
        corpus.protocol,
        total,
        decode_rate,
        baseline_rate,
        decode_rate / baseline_rate
    );
}

/// The JSON payloads inside a corpus: SSE `data:` fields, or event-stream frame payloads.
fn payloads(corpus: &Corpus) -> Vec<Vec<u8>> {
    let protocol = opencode_llm::protocol::by_id(corpus.protocol).expect("known protocol");
    let mut out = Vec::new();
    for body in &corpus.bodies {
        let mut frames = protocol.framing().decoder();
        let mut buf = Vec::new();
        let _ = frames.push(body, &mut buf);
        let _ = frames.finish(&mut buf);
        for frame in buf {
            match frame {
                Frame::Sse(event) if event.data.trim() != "[DONE]" => out.push(event.data.into_bytes()),
                Frame::EventStream(message) => out.push(message.payload.to_vec()),
                Frame::Sse(_) => {}
            }
        }
    }
    out
}

/// MB/s of `work` over `bytes`, from the best of several timed batches.
fn throughput(bytes: usize, work: impl Fn() -> usize) -> f64 {
    let mut sink = 0usize;
    let start = Instant::now();
    let mut iterations = 0u32;
    while start.elapsed() < Duration::from_millis(300) {
        sink = sink.wrapping_add(work());
        iterations += 1;
    }
    let batch = iterations.max(1);
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..batch {
            sink = sink.wrapping_add(work());
        }
        best = best.min(start.elapsed().as_secs_f64() / f64::from(batch));
    }
    std::hint::black_box(sink);
    bytes as f64 / best / 1e6
}

async fn overhead_benchmark(fixtures: &Path) {
    let Ok(cassette) = Cassette::load(&fixtures.join("recordings/llm/openai-chat/streams-tool-call.json")) else {
        eprintln!("skipping overhead benchmark: cassette missing");
        return;
    };
    let response = &cassette.interactions[0].response;
    let mock = MockProvider::start().await.expect("mock starts");
    let route = opencode_llm::provider::route(
        "openai",
        &opencode_llm::provider::ProviderConfig {
            base_url: Some(format!("{}/v1", mock.base_url())),
            api_key: Some("bench-key".into()),
            protocol: Some("openai-chat".into()),
            ..Default::default()
        },
    )
    .expect("route");
    let client = LlmClient::new();
    let http = reqwest::Client::new();
    let request = LlmRequest::new("gpt-4o-mini").system("Call tools.").message(Message::user("Call get_weather."));
    let body = client.prepare(&route, &request).expect("prepare").body;
    let url = format!("{}/v1/chat/completions", mock.base_url());

    const RUNS: usize = 300;
    let mut plain = Vec::with_capacity(RUNS);
    let mut full = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        mock.push(MockResponse::from_recorded(response));
        let start = Instant::now();
        let reply = http.post(&url).body(body.clone()).send().await.expect("send");
        let mut stream = reply.bytes_stream();
        while stream.next().await.is_some() {}
        plain.push(start.elapsed());

        mock.push(MockResponse::from_recorded(response));
        let start = Instant::now();
        let events: Vec<_> = client.stream(&route, &request).await.expect("stream").collect().await;
        full.push(start.elapsed());
        assert!(events.last().is_some_and(|event| matches!(event, opencode_llm::LlmEvent::Finish { .. })));
    }
    let plain = median(&mut plain);
    let full = median(&mut full);
    println!();
    println!("per-call overhead against the local mock ({RUNS} calls, medians)");
    println!("  plain HTTP round trip:   {:>8.1} µs", plain.as_secs_f64() * 1e6);
    println!("  LlmClient::stream:       {:>8.1} µs", full.as_secs_f64() * 1e6);
    println!("  overhead:                {:>8.1} µs", (full.as_secs_f64() - plain.as_secs_f64()) * 1e6);
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}
