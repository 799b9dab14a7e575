//! Seeded synthetic coding sessions: tool-heavy turns with big reads and greps, repeated reads of
//! one file, edits after reads, failing commands, idle gaps past the cache lifetime, a model
//! switch, and planted facts (early, middle, late) with later updates and distractors.
//!
//! A session is a list of turns; a turn is a user message and a tool loop of steps, each step one
//! provider request answered by an assistant message (tool calls, or the final answer). The same
//! seed always gives the same session, byte for byte.

use opencode_llm::ContentPart;
use opencode_llm::Message;
use opencode_llm::Role;
use opencode_llm::ToolResultValue;
use serde_json::json;

/// One tool call of a step and what it returned.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: &'static str,
    pub input: serde_json::Value,
    pub output: String,
    pub error: bool,
}

/// One provider request of a turn: the assistant's reply to it, either tool calls (whose results
/// the next request carries) or the final answer.
#[derive(Debug, Clone)]
pub struct Step {
    pub thought: String,
    pub calls: Vec<Call>,
    /// Seconds the request and the tools took.
    pub seconds: u64,
}

#[derive(Debug, Clone)]
pub struct Turn {
    /// Seconds of idleness before the user wrote.
    pub idle_seconds: u64,
    pub model: &'static str,
    pub user: String,
    pub steps: Vec<Step>,
    pub answer: String,
}

/// A fact to probe at the end: its latest value must be reachable.
#[derive(Debug, Clone)]
pub struct Fact {
    /// Words to search with.
    pub query: String,
    pub latest: String,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub name: String,
    pub turns: Vec<Turn>,
    pub facts: Vec<Fact>,
}

impl Session {
    /// Raw bytes of all the content (user, tool outputs, answers).
    pub fn size(&self) -> usize {
        self.turns
            .iter()
            .map(|turn| {
                turn.user.len()
                    + turn.answer.len()
                    + turn.steps.iter().flat_map(|step| &step.calls).map(|call| call.output.len()).sum::<usize>()
            })
            .sum()
    }
}

pub const SONNET: &str = "claude-sonnet-4-5";
pub const OPUS: &str = "claude-opus-4-1";

/// The benchmark's sessions: `count` seeded sessions of `turns` turns.
pub fn sessions(count: u64, turns: usize) -> Vec<Session> {
    (0..count).map(|seed| generate(seed, turns)).collect()
}

/// One session.
pub fn generate(seed: u64, turns: usize) -> Session {
    let mut rng = fastrand::Rng::with_seed(0x6d63_0000 + seed);
    let facts = plant(&mut rng, turns);
    let switch_at = turns * 3 / 5;
    let files: Vec<String> =
        (0..12).map(|i| format!("src/{}.rs", MODULES[(i + seed as usize) % MODULES.len()])).collect();
    let hot = files[0].clone();
    let mut out = Vec::new();
    for index in 0..turns {
        let mut user = format!("{} {}", ASKS[rng.usize(..ASKS.len())], files[rng.usize(..files.len())]);
        for plant in facts.iter().filter(|plant| plant.turn == index) {
            user.push('\n');
            user.push_str(&plant.text);
        }
        let idle_seconds = if index > 0 && rng.u8(..100) < 8 { rng.u64(330..1500) } else { rng.u64(5..90) };
        let model = if index >= switch_at { OPUS } else { SONNET };
        let steps = (0..rng.usize(1..5)).map(|_| step(&mut rng, &files, &hot)).collect();
        let answer = format!("Done: {}. {}", ANSWERS[rng.usize(..ANSWERS.len())], filler(&mut rng, 40));
        out.push(Turn { idle_seconds, model, user, steps, answer });
    }
    let probes = facts.iter().filter(|plant| plant.latest).map(|plant| plant.fact.clone()).collect();
    Session { name: format!("s{seed:02}-{turns}t"), turns: out, facts: probes }
}

struct Plant {
    turn: usize,
    text: String,
    fact: Fact,
    /// The newest version of its fact (older ones are superseded).
    latest: bool,
}

/// Facts early, middle and late; some updated later; distractors that share words.
fn plant(rng: &mut fastrand::Rng, turns: usize) -> Vec<Plant> {
    let mut plants = Vec::new();
    let spots = [turns / 10, turns / 2, turns * 4 / 5];
    for (index, subject) in SUBJECTS.iter().enumerate() {
        let turn = spots[index % spots.len()] + index / spots.len();
        let first = rng.u32(1000..9999).to_string();
        let query = subject.to_string();
        let updated = index % 2 == 0 && turn + 5 < turns;
        plants.push(Plant {
            turn,
            text: format!("Remember: the {subject} is {first}."),
            fact: Fact { query: query.clone(), latest: first.clone() },
            latest: !updated,
        });
        plants.push(Plant {
            turn: (turn + 1).min(turns - 1),
            text: format!("Unrelated: the old {subject} in the legacy service was {}.", rng.u32(1000..9999)),
            fact: Fact { query: query.clone(), latest: String::new() },
            latest: false,
        });
        if updated {
            let later = rng.u32(1000..9999).to_string();
            let at = (turn + rng.usize(3..turns.saturating_sub(turn).max(4))).min(turns - 1);
            plants.push(Plant {
                turn: at,
                text: format!("Update: the {subject} is now {later} (it was {first})."),
                fact: Fact { query, latest: later },
                latest: true,
            });
        }
    }
    plants
}

fn step(rng: &mut fastrand::Rng, files: &[String], hot: &str) -> Step {
    let calls = (0..rng.usize(1..3)).map(|_| call(rng, files, hot)).collect();
    Step { thought: filler(rng, 12), calls, seconds: rng.u64(4..40) }
}

fn call(rng: &mut fastrand::Rng, files: &[String], hot: &str) -> Call {
    match rng.u8(..100) {
        // Re-reading the same file is the commonest waste in real sessions.
        0..=24 => read(rng, hot),
        25..=49 => {
            let file = files[rng.usize(..files.len())].clone();
            read(rng, &file)
        }
        50..=69 => {
            let pattern = WORDS[rng.usize(..WORDS.len())];
            let hits: Vec<String> = (0..rng.usize(10..40))
                .map(|_| format!("{}:{}:    {}", files[rng.usize(..files.len())], rng.u32(1..900), code_line(rng)))
                .collect();
            Call { name: "grep", input: json!({"pattern": pattern}), output: hits.join("\n"), error: false }
        }
        70..=84 => {
            let file = files[rng.usize(..files.len())].clone();
            let body: Vec<String> = (0..rng.usize(3..25)).map(|_| code_line(rng)).collect();
            Call {
                name: "edit",
                input: json!({"filePath": file, "oldString": code_line(rng), "newString": body.join("\n")}),
                output: "Edit applied successfully.".into(),
                error: false,
            }
        }
        _ => {
            let failed = rng.bool();
            let output = if failed {
                format!("error[E0308]: mismatched types\n  --> {}:{}:9\n{}", files[0], rng.u32(1..400), code_line(rng))
            } else {
                (0..rng.usize(5..40)).map(|i| format!("test tests::case_{i} ... ok")).collect::<Vec<_>>().join("\n")
            };
            Call { name: "bash", input: json!({"command": "cargo test"}), output, error: failed }
        }
    }
}

fn read(rng: &mut fastrand::Rng, file: &str) -> Call {
    // A file's content depends on its name only, so re-reads return identical text.
    let mut local = fastrand::Rng::with_seed(file.bytes().map(u64::from).sum::<u64>() * 7919);
    let lines: Vec<String> = (1..local.usize(40..110)).map(|n| format!("{n:>5}\t{}", code_line(&mut local))).collect();
    let _advance = rng.u8(..);
    Call { name: "read", input: json!({"filePath": file}), output: lines.join("\n"), error: false }
}

fn code_line(rng: &mut fastrand::Rng) -> String {
    let a = WORDS[rng.usize(..WORDS.len())];
    let b = WORDS[rng.usize(..WORDS.len())];
    match rng.u8(..4) {
        0 => format!("let {a}_{b} = {a}.{b}()?;"),
        1 => format!("fn {a}_{b}(&self, {b}: &{}) -> Result<(), Error> {{", capital(a)),
        2 => format!("    if {a}.is_{b}() {{ return Err(Error::{}); }}", capital(b)),
        _ => format!("// {a} {b}: keep the {a} stable across {b} changes"),
    }
}

fn capital(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|first| first.to_uppercase().collect::<String>() + chars.as_str()).unwrap_or_default()
}

fn filler(rng: &mut fastrand::Rng, words: usize) -> String {
    (0..words).map(|_| WORDS[rng.usize(..WORDS.len())]).collect::<Vec<_>>().join(" ")
}

/// The session as the host's projected history after `turns` whole turns plus `steps` steps of the
/// next one (used by tests to build histories of a given length).
pub fn history(session: &Session, turns: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for turn in &session.turns[..turns] {
        messages.push(Message::user(turn.user.clone()));
        for (index, step) in turn.steps.iter().enumerate() {
            messages.extend(step_messages(step, index));
        }
        messages.push(Message::assistant(vec![ContentPart::text(turn.answer.clone())]));
    }
    messages
}

/// The assistant message with a step's tool calls, and the tool message with their results.
pub fn step_messages(step: &Step, index: usize) -> [Message; 2] {
    let mut calls = vec![ContentPart::text(step.thought.clone())];
    let mut results = Vec::new();
    for (n, call) in step.calls.iter().enumerate() {
        let id = format!("call_{index}_{n}");
        calls.push(ContentPart::ToolCall {
            id: id.clone(),
            name: call.name.into(),
            input: call.input.clone(),
            provider_executed: false,
            provider_metadata: None,
        });
        let result = if call.error {
            ToolResultValue::Error(serde_json::Value::String(call.output.clone()))
        } else {
            ToolResultValue::Text(call.output.clone())
        };
        results.push(ContentPart::ToolResult {
            id,
            name: call.name.into(),
            result,
            provider_executed: false,
            cache: None,
            provider_metadata: None,
        });
    }
    [Message { role: Role::Assistant, content: calls }, Message { role: Role::Tool, content: results }]
}

const SUBJECTS: [&str; 9] = [
    "staging database port",
    "retry budget for the uploader",
    "feature flag name for billing",
    "release branch prefix",
    "maximum batch size",
    "cache region id",
    "on-call pager alias code",
    "schema version pin",
    "worker pool size",
];

const MODULES: [&str; 14] = [
    "auth", "billing", "upload", "session", "router", "config", "store", "queue", "worker", "cache", "metrics",
    "retry", "limits", "schema",
];

const ASKS: [&str; 8] = [
    "Fix the failing test in",
    "Refactor the error handling in",
    "Add logging around the retries in",
    "Why does this panic? Look at",
    "Rename the handler and update callers of",
    "Make the timeout configurable in",
    "Review the locking in",
    "Split the long function in",
];

const ANSWERS: [&str; 5] = [
    "the handler now returns the error instead of panicking",
    "tests pass after the rename",
    "the timeout reads from config with a default of 30s",
    "the lock is held only while the map is touched",
    "logging added at each retry with the attempt number",
];

const WORDS: [&str; 24] = [
    "request", "session", "token", "buffer", "retry", "limit", "config", "store", "queue", "handler", "error",
    "stream", "window", "cache", "worker", "batch", "schema", "router", "metric", "upload", "client", "server",
    "frame", "state",
];
