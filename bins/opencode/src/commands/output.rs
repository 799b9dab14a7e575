//! How `opencode run` shows a session's events.
//!
//! - `default`: the answer's text on stdout as it streams; one line per settled tool call on stderr
//!   (`| read     src/lib.rs`), so that stdout holds only the answer.
//! - `json`: one JSON object per line on stdout, as OpenCode's `run --format json` writes them:
//!   `{"type", "timestamp", "sessionID", "part" | "error"}` with `type` one of `text`, `reasoning`
//!   (with `--thinking`), `tool_use`, `step_start`, `step_finish`, `error`. Parts are emitted once,
//!   when they are complete.

use opencode_session_store::EventKind;
use std::collections::HashSet;
use std::io::Write;

use opencode_session_runtime::{DeltaKind, RuntimeEvent};
use serde_json::{Value, json};

use super::emit;
use crate::cli::Format;
use crate::error::CliError;

pub struct Printer {
    format: Format,
    thinking: bool,
    session_id: String,
    /// Parts already reported (by id and status), so repeated updates print once.
    reported: HashSet<String>,
    /// The text part whose deltas are being printed.
    streaming: Option<String>,
    /// Whether stdout's last byte is not a newline.
    open_line: bool,
}

impl Printer {
    pub fn new(format: Format, thinking: bool, session_id: &str) -> Self {
        Self {
            format,
            thinking,
            session_id: session_id.to_owned(),
            reported: HashSet::new(),
            streaming: None,
            open_line: false,
        }
    }

    /// Shows one event of the bus (events of other sessions are ignored).
    pub fn event(&mut self, event: &RuntimeEvent) -> Result<(), CliError> {
        if event.session_id() != self.session_id {
            return Ok(());
        }
        match (self.format, event) {
            (Format::Default, RuntimeEvent::Delta { kind: DeltaKind::Text, part_id, delta, .. }) => {
                self.text_delta(part_id, delta)
            }
            (Format::Default, RuntimeEvent::Delta { kind: DeltaKind::Reasoning, delta, .. }) if self.thinking => {
                eprint!("{delta}");
                Ok(())
            }
            (Format::Default, RuntimeEvent::Durable(event)) if event.kind == EventKind::PartUpdated => {
                self.tool_line(&event.data["part"])
            }
            (Format::Json, RuntimeEvent::Durable(event)) => match event.kind {
                EventKind::PartUpdated => self.json_part(&event.data["part"]),
                EventKind::SessionError => self.json_line("error", "error", &event.data["error"]),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Ends the answer with a newline.
    pub fn finish(&mut self) -> Result<(), CliError> {
        self.end_line()?;
        flush()
    }

    fn text_delta(&mut self, part_id: &str, delta: &str) -> Result<(), CliError> {
        if self.streaming.as_deref() != Some(part_id) {
            // A new text part (after tool calls) starts on a line of its own.
            self.end_line()?;
            self.streaming = Some(part_id.to_owned());
        }
        if delta.is_empty() {
            return Ok(());
        }
        emit(&mut std::io::stdout().lock(), format_args!("{delta}"))?;
        self.open_line = !delta.ends_with('\n');
        flush()
    }

    fn tool_line(&mut self, part: &Value) -> Result<(), CliError> {
        let status = part["state"]["status"].as_str().unwrap_or_default();
        if part["type"] != "tool" || !matches!(status, "completed" | "error") || !self.first_report(part, status) {
            return Ok(());
        }
        self.end_line()?;
        flush()?;
        let tool = part["tool"].as_str().unwrap_or("tool");
        let state = &part["state"];
        let title = state["title"]
            .as_str()
            .filter(|title| !title.is_empty())
            .map_or_else(|| summary(&state["input"]), str::to_owned);
        if status == "completed" {
            eprintln!("| {tool:<8} {title}");
        } else {
            let error = state["error"].as_str().unwrap_or_default().lines().next().unwrap_or_default();
            eprintln!("! {tool:<8} {title}: {error}");
        }
        Ok(())
    }

    fn json_part(&mut self, part: &Value) -> Result<(), CliError> {
        let kind = match part["type"].as_str().unwrap_or_default() {
            "tool" => match part["state"]["status"].as_str() {
                Some(status @ ("completed" | "error")) => ("tool_use", status),
                _ => return Ok(()),
            },
            "step-start" => ("step_start", ""),
            "step-finish" => ("step_finish", ""),
            "text" if !part["time"]["end"].is_null() => ("text", ""),
            "reasoning" if self.thinking && !part["time"]["end"].is_null() => ("reasoning", ""),
            _ => return Ok(()),
        };
        if !self.first_report(part, kind.1) {
            return Ok(());
        }
        self.json_line(kind.0, "part", part)
    }

    fn json_line(&self, kind: &str, field: &str, value: &Value) -> Result<(), CliError> {
        let timestamp = opencode_session_store::id::now_ms();
        let mut line = json!({"type": kind, "timestamp": timestamp, "sessionID": self.session_id});
        line[field] = value.clone();
        emit(&mut std::io::stdout().lock(), format_args!("{line}\n"))?;
        flush()
    }

    /// Whether `part` in `status` is reported for the first time (and records it).
    fn first_report(&mut self, part: &Value, status: &str) -> bool {
        let id = part["id"].as_str().unwrap_or_default();
        self.reported.insert(format!("{id}:{status}"))
    }

    fn end_line(&mut self) -> Result<(), CliError> {
        if self.open_line {
            self.open_line = false;
            emit(&mut std::io::stdout().lock(), format_args!("\n"))?;
        }
        Ok(())
    }
}

/// A short description of a tool call from its input, when the tool gave no title.
fn summary(input: &Value) -> String {
    ["filePath", "path", "pattern", "command", "url", "description"]
        .iter()
        .find_map(|key| input[key].as_str())
        .map_or_else(String::new, |text| text.lines().next().unwrap_or_default().to_owned())
}

fn flush() -> Result<(), CliError> {
    match std::io::stdout().flush() {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::Io(format!("cannot write output: {err}")))
        }
        _ => Ok(()),
    }
}
