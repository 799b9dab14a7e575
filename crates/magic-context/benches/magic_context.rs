//! `cargo xtask bench magic-context [--json] [--sessions N] [--turns N] [--baseline-ttl SECONDS]
//! [--longmemeval FILE [--limit N]]`: replays seeded
//! synthetic sessions three ways through a prompt-caching mock of Anthropic and reports cache
//! hits, busts and their causes, overflow errors, fact retention and billed cost.
//!
//! What runs: each session is replayed request by request (one per step of each turn's tool
//! loop). The request is the one the runtime would send: a fixed system prompt and tool set, the
//! projected history after the mode's management, encoded by the real Anthropic Messages adapter
//! with its automatic cache breakpoints, and billed by `opencode_mock_provider::prefix_cache`
//! on a simulated clock. The modes:
//!
//! - `none`: the history grows until the provider refuses it (an overflow error), then the
//!   overflow compaction summarises it and the request is sent again.
//! - `compaction`: the built-in compaction summarises before a request would pass the usable
//!   window (window minus a 20,000-token reserve).
//! - `magic-context`: the Magic Context engine transforms every request (the plugin's pass,
//!   driven directly rather than through the runtime), its historian runs between requests, and
//!   the overflow compaction stays as the safety net.
//!
//! Summaries are simulated deterministically (a digest of the compacted history capped at the
//! summary budget, keeping its newest lines) and billed as a side call: the transcript as uncached
//! input plus the summary as output, on the main model (as OpenCode compacts). Magic Context's
//! historian publishes the deterministic digest, but is billed as the product's default would be
//! billed, a call on the small model (Claude Haiku 4.5 list prices): its real prompt as uncached
//! input, the four versions of each compartment as output. Those tokens are reported apart
//! (`side_*`), since the small model's requests cannot read the main model's cache; their cost
//! is in `cost_usd`.

#[path = "support/sessions.rs"]
mod sessions;

use std::time::Duration;
use std::time::Instant;

use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::ToolDefinition;
use opencode_llm::protocol::Protocol;
use opencode_llm::protocol::anthropic_messages::AnthropicMessages;
use opencode_magic_context::Decision;
use opencode_magic_context::Engine;
use opencode_magic_context::MagicContextConfig;
use opencode_magic_context::PassInput;
use opencode_magic_context::Store;
use opencode_magic_context::historian;
use opencode_mock_provider::prefix_cache::CacheUsage;
use opencode_mock_provider::prefix_cache::PrefixCache;
use serde_json::json;
use sessions::Session;
use sessions::Turn;

/// The simulated model's context window (tokens): small enough that these sessions need
/// managing, as a 200K window does over a few hundred turns.
const WINDOW: u64 = 64_000;
/// The built-in compaction's reserve for output.
const RESERVE: u64 = 20_000;
/// What a compaction summary may hold (OpenCode's summary output budget).
const SUMMARY_TOKENS: u64 = 4_096;
/// Recent history the built-in compaction keeps verbatim.
const KEEP_TOKENS: u64 = 15_000;
const TTL_MS: u64 = 300_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    None,
    Compaction,
    MagicContext,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Compaction => "compaction",
            Self::MagicContext => "magic-context",
        }
    }
}

/// Totals of one run (or of all runs of a mode).
#[derive(Debug, Clone, Default)]
struct Totals {
    requests: u64,
    input: u64,
    creation: u64,
    read: u64,
    output: u64,
    per_request_hit: f64,
    busts: u64,
    unattributed: u64,
    causes: std::collections::BTreeMap<String, u64>,
    /// Tokens written to the cache by bust requests, per cause.
    rewritten: std::collections::BTreeMap<String, u64>,
    overflow_errors: u64,
    compactions: u64,
    cost: f64,
    contexts: Vec<u64>,
    facts: u64,
    facts_retained: u64,
    facts_in_request: u64,
    side_input: u64,
    side_output: u64,
    side_cost: f64,
}

impl Totals {
    fn hit_ratio(&self) -> f64 {
        let all = self.input + self.creation + self.read;
        if all == 0 { 0.0 } else { self.read as f64 / all as f64 }
    }

    fn request_hit_ratio(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.per_request_hit / self.requests as f64 }
    }

    fn retained(&self) -> f64 {
        if self.facts == 0 { 1.0 } else { self.facts_retained as f64 / self.facts as f64 }
    }

    fn in_request(&self) -> f64 {
        if self.facts == 0 { 1.0 } else { self.facts_in_request as f64 / self.facts as f64 }
    }

    fn peak(&self) -> u64 {
        self.contexts.iter().copied().max().unwrap_or(0)
    }

    fn p95(&self) -> u64 {
        let mut sorted = self.contexts.clone();
        sorted.sort_unstable();
        sorted.get((sorted.len() * 95 / 100).min(sorted.len().saturating_sub(1))).copied().unwrap_or(0)
    }

    fn add(&mut self, other: &Totals) {
        self.requests += other.requests;
        self.input += other.input;
        self.creation += other.creation;
        self.read += other.read;
        self.output += other.output;
        self.per_request_hit += other.per_request_hit;
        self.busts += other.busts;
        self.unattributed += other.unattributed;
        for (cause, count) in &other.causes {
            *self.causes.entry(cause.clone()).or_default() += count;
        }
        for (cause, tokens) in &other.rewritten {
            *self.rewritten.entry(cause.clone()).or_default() += tokens;
        }
        self.overflow_errors += other.overflow_errors;
        self.compactions += other.compactions;
        self.cost += other.cost;
        self.contexts.extend(&other.contexts);
        self.facts += other.facts;
        self.facts_retained += other.facts_retained;
        self.facts_in_request += other.facts_in_request;
        self.side_input += other.side_input;
        self.side_output += other.side_output;
        self.side_cost += other.side_cost;
    }
}

/// List prices, dollars per million tokens: (input, output).
/// Claude Haiku 4.5, the small model the historian runs on: dollars per million tokens in, out.
const SMALL_MODEL_PRICES: (f64, f64) = (1.0, 5.0);

fn prices(model: &str) -> (f64, f64) {
    if model.contains("opus") { (15.0, 75.0) } else { (3.0, 15.0) }
}

fn cost(model: &str, usage: &CacheUsage, output: u64) -> f64 {
    let (input, out) = prices(model);
    let five_minute = usage.cache_creation_input_tokens - usage.cache_creation_1h_tokens;
    (usage.input_tokens as f64 * input
        + five_minute as f64 * input * 1.25
        + usage.cache_creation_1h_tokens as f64 * input * 2.0
        + usage.cache_read_input_tokens as f64 * input * 0.1
        + output as f64 * out)
        / 1_000_000.0
}

/// One session replayed in one mode.
struct Run {
    mode: Mode,
    cache: PrefixCache,
    history: Vec<Message>,
    engine: Option<Engine>,
    session_id: String,
    now_ms: u64,
    model: &'static str,
    /// The cached prefix the previous request left (read + written), per model.
    previous_cached: Option<(&'static str, u64)>,
    /// Why the next request's prefix may legitimately differ (host-side causes).
    pending_cause: Option<String>,
    idle_ms: u64,
    last_body: String,
    totals: Totals,
    _dir: Option<tempfile::TempDir>,
}

impl Run {
    fn new(mode: Mode, session: &Session, baseline_ttl: u64) -> Result<Self, String> {
        let (engine, dir) = if mode == Mode::MagicContext {
            let dir = tempfile::tempdir().map_err(|err| format!("temp dir: {err}"))?;
            let store = Store::open(&dir.path().join("context.db")).map_err(|err| err.to_string())?;
            let config = MagicContextConfig {
                context_limit: WINDOW,
                overhead_tokens: overhead_tokens(),
                baseline_cache_ttl_seconds: baseline_ttl,
                ..MagicContextConfig::default()
            };
            (Some(Engine::new(config, store)), Some(dir))
        } else {
            (None, None)
        };
        Ok(Self {
            mode,
            cache: PrefixCache::new(),
            history: Vec::new(),
            engine,
            session_id: session.name.clone(),
            now_ms: 1_700_000_000_000,
            model: sessions::SONNET,
            previous_cached: None,
            pending_cause: None,
            idle_ms: 0,
            last_body: String::new(),
            totals: Totals::default(),
            _dir: dir,
        })
    }

    fn replay(mut self, session: &Session) -> Result<Totals, String> {
        for turn in &session.turns {
            self.turn(turn)?;
        }
        self.probe(session);
        Ok(self.totals)
    }

    fn turn(&mut self, turn: &Turn) -> Result<(), String> {
        self.advance(turn.idle_seconds * 1000);
        if turn.model != self.model {
            self.model = turn.model;
        }
        self.history.push(Message::user(turn.user.clone()));
        for (index, step) in turn.steps.iter().enumerate() {
            let [calls, results] = sessions::step_messages(step, index);
            self.request(message_tokens(&calls))?;
            self.history.push(calls);
            self.history.push(results);
            self.advance(step.seconds * 1000);
        }
        self.request(opencode_magic_context::render::tokens(&turn.answer))?;
        self.history.push(Message::assistant(vec![opencode_llm::ContentPart::text(turn.answer.clone())]));
        self.advance(3_000);
        Ok(())
    }

    fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
        self.idle_ms += ms;
    }

    /// One provider request (plus any compaction the mode does around it).
    fn request(&mut self, output_tokens: u64) -> Result<(), String> {
        if self.mode == Mode::Compaction && self.prompt_tokens(&self.history)? + RESERVE >= WINDOW {
            self.compact()?;
        }
        let (mut body, mut reason) = self.body()?;
        if PrefixCache::prompt_tokens(&body).map_err(|err| err.to_string())? > WINDOW {
            // The provider refuses it: the overflow compaction runs and the request is sent again.
            self.totals.overflow_errors += 1;
            self.compact()?;
            (body, reason) = self.body()?;
        }
        let usage = self.cache.request(&body, Duration::from_millis(self.now_ms)).map_err(|err| err.to_string())?;
        self.record(&usage, output_tokens, reason);
        self.last_body = body.to_string();
        self.idle_ms = 0;
        Ok(())
    }

    /// The request body after the mode's management, and the cause Magic Context gave if it
    /// executed.
    fn body(&mut self) -> Result<(serde_json::Value, Option<String>), String> {
        let mut messages = self.history.clone();
        let mut reason = None;
        if let Some(engine) = &mut self.engine {
            let pass = PassInput {
                session_id: self.session_id.clone(),
                project: "/bench/project".into(),
                model_key: format!("anthropic/{}", self.model),
                now_ms: self.now_ms,
                // The configured `context_limit` is the simulated window.
                window: None,
            };
            let report = engine.transform(&pass, &mut messages).map_err(|err| err.to_string())?;
            if report.decision == Decision::Execute {
                reason = Some(report.reason.clone());
            }
            // The historian runs out of band; here it finishes before the next request.
            if report.historian_due {
                self.historian()?;
            }
        }
        let request = request(self.model, messages);
        let body = AnthropicMessages.encode(&request).map_err(|err| err.to_string())?;
        Ok((body, reason))
    }

    /// One historian run: the digest is published, billed as the small model's call would be.
    fn historian(&mut self) -> Result<(), String> {
        let Some(engine) = &mut self.engine else { return Ok(()) };
        let Some(job) = engine.historian_job(&self.session_id).map_err(|err| err.to_string())? else {
            return Ok(());
        };
        let compartments = historian::digest(&job.rows, job.next_sequence);
        let tokens = opencode_magic_context::render::tokens;
        let input = tokens(historian::SYSTEM) + tokens(&historian::prompt(&job.rows, &job.memories));
        let output: u64 = compartments
            .iter()
            .map(|c| {
                let v = &c.versions;
                tokens(&v.full) + tokens(&v.condensed) + tokens(&v.outcome) + tokens(&v.anchor) + 40
            })
            .sum();
        let side_cost = (input as f64 * SMALL_MODEL_PRICES.0 + output as f64 * SMALL_MODEL_PRICES.1) / 1_000_000.0;
        self.totals.side_input += input;
        self.totals.side_output += output;
        self.totals.side_cost += side_cost;
        self.totals.cost += side_cost;
        let answer = historian::Answer { compartments, facts: Vec::new() };
        engine.publish_historian(&job, &answer, self.now_ms).map_err(|err| err.to_string())?;
        Ok(())
    }

    fn prompt_tokens(&self, messages: &[Message]) -> Result<u64, String> {
        let body = AnthropicMessages.encode(&request(self.model, messages.to_vec())).map_err(|err| err.to_string())?;
        PrefixCache::prompt_tokens(&body).map_err(|err| err.to_string())
    }

    /// The built-in compaction: a summary of the older history plus the recent turns verbatim,
    /// billed as a side call.
    fn compact(&mut self) -> Result<(), String> {
        let keep_from = keep_from(&self.history);
        let transcript_tokens = self.prompt_tokens(&self.history[..keep_from])?;
        let summary = summarise(&self.history[..keep_from]);
        let summary_tokens = opencode_magic_context::render::tokens(&summary);
        let side = CacheUsage { input_tokens: transcript_tokens, ..CacheUsage::default() };
        self.totals.cost += cost(self.model, &side, summary_tokens);
        self.totals.input += transcript_tokens;
        self.totals.output += summary_tokens;
        self.totals.compactions += 1;
        let mut history = vec![Message::user(summary)];
        history.extend(self.history.drain(keep_from..));
        self.history = history;
        self.pending_cause = Some("compaction".into());
        Ok(())
    }

    fn record(&mut self, usage: &CacheUsage, output: u64, reason: Option<String>) {
        let totals = &mut self.totals;
        totals.requests += 1;
        totals.input += usage.input_tokens;
        totals.creation += usage.cache_creation_input_tokens;
        totals.read += usage.cache_read_input_tokens;
        totals.output += output;
        totals.per_request_hit += usage.cache_read_input_tokens as f64 / usage.total().max(1) as f64;
        totals.cost += cost(self.model, usage, output);
        totals.contexts.push(usage.total());
        if let Some((model, cached)) = self.previous_cached
            && usage.cache_read_input_tokens < cached
        {
            totals.busts += 1;
            let cause = if model != self.model {
                Some("model_switch".to_owned())
            } else if self.idle_ms > TTL_MS {
                Some("ttl_expired".to_owned())
            } else {
                reason.or_else(|| self.pending_cause.clone())
            };
            let cause = cause.unwrap_or_else(|| {
                totals.unattributed += 1;
                "unattributed".to_owned()
            });
            *totals.rewritten.entry(cause.clone()).or_default() += usage.cache_creation_input_tokens;
            if cause != "unattributed" {
                *totals.causes.entry(cause).or_default() += 1;
            }
        }
        self.pending_cause = None;
        self.previous_cached = Some((self.model, usage.cache_read_input_tokens + usage.cache_creation_input_tokens));
    }

    /// Is each fact's latest value in the last request, or (Magic Context) found by `ctx_search`?
    fn probe(&mut self, session: &Session) {
        for fact in &session.facts {
            self.totals.facts += 1;
            let in_request = self.last_body.contains(&fact.latest);
            let searched = self.engine.as_ref().is_some_and(|engine| {
                let hits = engine.search(&self.session_id, "/bench/project", &fact.query, 10).unwrap_or_default();
                hits.iter().any(|hit| hit.text.contains(&fact.latest))
            });
            if in_request || searched {
                self.totals.facts_retained += 1;
            }
            if in_request {
                self.totals.facts_in_request += 1;
            }
        }
    }
}

fn message_tokens(message: &Message) -> u64 {
    opencode_magic_context::render::tokens(&serde_json::to_string(&message.content).unwrap_or_default())
}

/// The index from which the built-in compaction keeps history verbatim: the newest whole turns
/// within [`KEEP_TOKENS`], at least the current one.
fn keep_from(history: &[Message]) -> usize {
    let mut size = 0;
    let mut keep = history.len();
    for (index, message) in history.iter().enumerate().rev() {
        size += message_tokens(message);
        if message.role == opencode_llm::Role::User {
            if size > KEEP_TOKENS && keep < history.len() {
                break;
            }
            keep = index;
        }
    }
    keep
}

/// A deterministic stand-in for the summary model: the digest of the history (including any
/// earlier summary), keeping the newest lines that fit the summary budget.
fn summarise(history: &[Message]) -> String {
    let rows: Vec<(usize, String, String)> = history
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let role = match message.role {
                opencode_llm::Role::User => "user",
                opencode_llm::Role::Assistant => "assistant",
                _ => "tool",
            };
            let text = message
                .content
                .iter()
                .map(|part| match part {
                    opencode_llm::ContentPart::Text { text, .. } => text.clone(),
                    opencode_llm::ContentPart::ToolCall { name, input, .. } => format!("TC: {name} {input}"),
                    opencode_llm::ContentPart::ToolResult { result, .. } => result.to_text(),
                    _ => String::new(),
                })
                .collect::<Vec<_>>()
                .join("\n");
            (index, role.to_owned(), text)
        })
        .collect();
    let mut lines: Vec<String> = Vec::new();
    for row in &rows {
        if row.2.starts_with("## Summary") {
            lines.extend(row.2.lines().skip(1).map(str::to_owned));
        } else {
            let digest = historian::digest(std::slice::from_ref(row), 1);
            lines.extend(digest.iter().flat_map(|c| c.versions.full.lines().map(str::to_owned)));
        }
    }
    let mut kept = Vec::new();
    let mut size = 0;
    for line in lines.iter().rev() {
        size += opencode_magic_context::render::tokens(line) + 1;
        if size > SUMMARY_TOKENS {
            break;
        }
        kept.push(line.as_str());
    }
    kept.reverse();
    format!("## Summary of the earlier conversation\n{}", kept.join("\n"))
}

/// The request the runtime would send: fixed system prompt and tools, automatic cache policy.
fn request(model: &str, messages: Vec<Message>) -> LlmRequest {
    let mut request = LlmRequest::new(model).system(system_prompt());
    for (name, description) in TOOLS {
        request = request.tool(ToolDefinition::new(
            *name,
            *description,
            json!({"type": "object", "properties": {"input": {"type": "string", "description": description}}}),
        ));
    }
    request.messages = messages;
    request
}

const TOOLS: &[(&str, &str)] = &[
    ("read", "Read a file from the project. Returns numbered lines; use offset and limit for large files."),
    ("grep", "Search file contents with a regular expression; returns matching lines with paths and numbers."),
    ("edit", "Replace an exact string in a file with another; fails when the old string is not unique."),
    ("bash", "Run a shell command in the project directory with a timeout; returns stdout and stderr."),
    ("ctx_search", "Search project memories and this session's full raw history."),
    ("ctx_expand", "Read the raw messages a session-history section summarises."),
];

fn system_prompt() -> String {
    let rules = "You are a coding agent working in a Rust repository. Prefer small, reviewed changes. \
                 Read before you edit; run the tests after each change; explain what you changed. ";
    rules.repeat(40)
}

fn overhead_tokens() -> u64 {
    let empty = request(sessions::SONNET, Vec::new());
    AnthropicMessages.encode(&empty).ok().and_then(|body| PrefixCache::prompt_tokens(&body).ok()).unwrap_or(0)
}

/// The transform pass's latency with ~1,000 messages of history (steady state).
fn transform_latency() -> Result<(f64, usize), String> {
    let session = sessions::generate(99, 240);
    let dir = tempfile::tempdir().map_err(|err| format!("temp dir: {err}"))?;
    let store = Store::open(&dir.path().join("context.db")).map_err(|err| err.to_string())?;
    let config = MagicContextConfig { context_limit: 1_000_000, ..MagicContextConfig::default() };
    let mut engine = Engine::new(config, store);
    let history = sessions::history(&session, session.turns.len());
    let mut timings = Vec::new();
    let mut now = 0;
    for end in (900..history.len().min(1_100)).step_by(2) {
        let mut messages = history[..end].to_vec();
        now += 10_000;
        let pass = PassInput {
            session_id: "latency".into(),
            project: "/p".into(),
            model_key: "a/m".into(),
            now_ms: now,
            window: None,
        };
        let started = Instant::now();
        engine.transform(&pass, &mut messages).map_err(|err| err.to_string())?;
        if end >= 950 {
            timings.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    timings.sort_by(f64::total_cmp);
    Ok((timings.get(timings.len() / 2).copied().unwrap_or(0.0), timings.len()))
}

/// Sessions from a LongMemEval-format file (a JSON array of questions, each with
/// `haystack_sessions` of `{role, content}` turns, a `question` and its `answer`): each question's
/// haystack becomes one session (a new haystack session after an hour's gap), and its answer the
/// fact to probe. The data is not shipped; point `--longmemeval` at a copy.
fn longmemeval(path: &str, limit: usize) -> Result<Vec<Session>, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("{path}: {err}"))?;
    let questions: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|err| format!("{path}: not a LongMemEval JSON array: {err}"))?;
    questions.iter().take(limit).map(longmemeval_session).collect()
}

fn longmemeval_session(question: &serde_json::Value) -> Result<Session, String> {
    let id = question["question_id"].as_str().unwrap_or("question").to_owned();
    let haystack = question["haystack_sessions"].as_array().ok_or_else(|| format!("{id}: no haystack_sessions"))?;
    let mut turns: Vec<Turn> = Vec::new();
    for chat in haystack {
        let messages = chat.as_array().ok_or_else(|| format!("{id}: a haystack session is not a list"))?;
        // A new haystack session comes after an hour: the cache is cold again.
        let mut idle_seconds = if turns.is_empty() { 0 } else { 3_600 };
        let mut user = String::new();
        for message in messages {
            let content = message["content"].as_str().unwrap_or_default().to_owned();
            match message["role"].as_str() {
                Some("user") => user = content,
                Some("assistant") => {
                    let user = std::mem::take(&mut user);
                    turns.push(Turn {
                        idle_seconds,
                        model: sessions::SONNET,
                        user,
                        steps: Vec::new(),
                        answer: content,
                    });
                    idle_seconds = 30;
                }
                _ => {}
            }
        }
    }
    let answer = match &question["answer"] {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let query = question["question"].as_str().unwrap_or_default().to_owned();
    Ok(Session { name: id, turns, facts: vec![sessions::Fact { query, latest: answer }] })
}

struct Args {
    json: bool,
    sessions: u64,
    turns: usize,
    longmemeval: Option<String>,
    limit: usize,
    /// Magic Context's `baseline_cache_ttl_seconds` (300 turns the hour-long m[0] breakpoint off).
    baseline_ttl: u64,
}

fn args() -> Args {
    let baseline_ttl = MagicContextConfig::default().baseline_cache_ttl_seconds;
    let mut args = Args { json: false, sessions: 8, turns: 50, longmemeval: None, limit: 5, baseline_ttl };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--json" => args.json = true,
            "--sessions" => args.sessions = iter.next().and_then(|n| n.parse().ok()).unwrap_or(args.sessions),
            "--turns" => args.turns = iter.next().and_then(|n| n.parse().ok()).unwrap_or(args.turns),
            "--longmemeval" => args.longmemeval = iter.next(),
            "--limit" => args.limit = iter.next().and_then(|n| n.parse().ok()).unwrap_or(args.limit),
            "--baseline-ttl" => {
                args.baseline_ttl = iter.next().and_then(|n| n.parse().ok()).unwrap_or(args.baseline_ttl);
            }
            _ => {}
        }
    }
    args
}

fn line(mode: Mode, session: &str, totals: &Totals) -> serde_json::Value {
    json!({
        "mode": mode.name(),
        "session": session,
        "requests": totals.requests,
        "cache_hit_ratio": round(totals.hit_ratio()),
        "cache_hit_ratio_per_request": round(totals.request_hit_ratio()),
        "busts": totals.busts,
        "unattributed_busts": totals.unattributed,
        "bust_causes": totals.causes,
        "bust_rewritten_tokens": totals.rewritten,
        "input_tokens": totals.input,
        "cache_creation_input_tokens": totals.creation,
        "cache_read_input_tokens": totals.read,
        "overflow_errors": totals.overflow_errors,
        "compactions": totals.compactions,
        "facts_retained_ratio": round(totals.retained()),
        "facts_in_request_ratio": round(totals.in_request()),
        "cost_usd": round(totals.cost),
        "side_input_tokens": totals.side_input,
        "side_output_tokens": totals.side_output,
        "side_cost_usd": round(totals.side_cost),
        "peak_context": totals.peak(),
        "p95_context": totals.p95(),
    })
}

fn round(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: magic-context benchmark: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args = args();
    let sessions = match &args.longmemeval {
        Some(path) => longmemeval(path, args.limit)?,
        None => sessions::sessions(args.sessions, args.turns),
    };
    let modes = [Mode::None, Mode::Compaction, Mode::MagicContext];
    let mut overall: Vec<Totals> = vec![Totals::default(); modes.len()];
    let mut rows = Vec::new();
    for session in &sessions {
        for (index, mode) in modes.iter().enumerate() {
            let totals = Run::new(*mode, session, args.baseline_ttl)?.replay(session)?;
            overall[index].add(&totals);
            rows.push((*mode, session.name.clone(), totals));
        }
    }
    let (p50, samples) = transform_latency()?;
    if args.json {
        for (mode, session, totals) in &rows {
            println!("{}", line(*mode, session, totals));
        }
        for (mode, totals) in modes.iter().zip(&overall) {
            let mut summary = line(*mode, "overall", totals);
            if *mode == Mode::MagicContext {
                summary["transform_p50_ms_at_1000_messages"] = json!(round(p50));
            }
            println!("{summary}");
        }
        return Ok(());
    }
    let bytes: usize = sessions.iter().map(Session::size).sum();
    println!(
        "magic-context benchmark: {} sessions x {} turns ({} KB of content), window {} tokens",
        sessions.len(),
        args.turns,
        bytes / 1024,
        WINDOW
    );
    println!(
        "{:<14} {:<10} {:>8} {:>9} {:>6} {:>7} {:>9} {:>6} {:>9} {:>8} {:>8}",
        "mode", "session", "requests", "cache hit", "per-rq", "busts", "unattrib", "overfl", "facts", "peak", "cost $"
    );
    for (mode, session, totals) in rows.iter().chain(
        modes.iter().zip(&overall).map(|(m, t)| (*m, "overall".to_owned(), t.clone())).collect::<Vec<_>>().iter(),
    ) {
        println!(
            "{:<14} {:<10} {:>8} {:>8.1}% {:>5.1}% {:>7} {:>9} {:>6} {:>8.1}% {:>8} {:>8.2}",
            mode.name(),
            session,
            totals.requests,
            totals.hit_ratio() * 100.0,
            totals.request_hit_ratio() * 100.0,
            totals.busts,
            totals.unattributed,
            totals.overflow_errors,
            totals.retained() * 100.0,
            totals.peak(),
            totals.cost
        );
    }
    for (mode, totals) in modes.iter().zip(&overall) {
        println!("{} bust causes: {:?}, tokens they wrote: {:?}", mode.name(), totals.causes, totals.rewritten);
        println!(
            "{} tokens: input {}, cache writes {}, cache reads {}; small model: {} in, {} out, ${:.2}",
            mode.name(),
            totals.input,
            totals.creation,
            totals.read,
            totals.side_input,
            totals.side_output,
            totals.side_cost
        );
    }
    println!("transform pass p50 at ~1,000 messages: {p50:.3} ms ({samples} passes)");
    Ok(())
}
