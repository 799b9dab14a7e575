//! Compaction's pure parts: the token estimate and trigger, the serialized record of history, the
//! split into an older head (summarised) and the newest tokens (kept verbatim as recent context), and
//! the anchored-summary prompt (which plugins may extend or replace through
//! `experimental.session.compacting`). The summary turn itself is run by the runner.
//!
//! Constants follow OpenCode's V2 defaults: 20k tokens reserved, the newest ~8k tokens kept, tool
//! output cut at 2000 characters in the record, a 4096-token summary.

use std::io::Write;

use opencode_config::Config;
use opencode_llm::LlmRequest;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessageWithParts;
use opencode_session_store::PartKind;
use opencode_session_store::ToolState;

use crate::history;

/// Tokens kept free below the context limit when no `compaction.reserved` is configured.
pub const DEFAULT_BUFFER: u64 = 20_000;
/// Newest tokens of history kept verbatim when no `compaction.preserve_recent_tokens` is configured.
pub const DEFAULT_KEEP_TOKENS: u64 = 8_000;
/// Tool output longer than this is cut in the serialized record.
pub const TOOL_OUTPUT_MAX_CHARS: usize = 2_000;
/// The most tokens a summary may use.
pub const SUMMARY_OUTPUT_TOKENS: u32 = 4_096;

/// When and how much to compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    /// Compact automatically when a request would not fit.
    pub auto: bool,
    /// Tokens kept free for the answer.
    pub buffer: u64,
    /// Newest tokens kept verbatim.
    pub keep_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self { auto: true, buffer: DEFAULT_BUFFER, keep_tokens: DEFAULT_KEEP_TOKENS }
    }
}

impl CompactionSettings {
    /// `compaction.auto`, `compaction.reserved` and `compaction.preserve_recent_tokens` from config.
    pub fn from_config(config: &Config) -> Self {
        let defaults = Self::default();
        let Some(compaction) = &config.compaction else { return defaults };
        Self {
            auto: compaction.auto.unwrap_or(defaults.auto),
            buffer: compaction.reserved.unwrap_or(defaults.buffer),
            keep_tokens: compaction.preserve_recent_tokens.unwrap_or(defaults.keep_tokens),
        }
    }

    /// Whether a request of `estimate` tokens overflows a model with `context` tokens whose answer may
    /// take `output` tokens. Unknown context limits (0) never trigger.
    pub fn overflows(&self, estimate: u64, context: u64, output: u64) -> bool {
        context > 0 && estimate > context.saturating_sub(output.max(self.buffer))
    }
}

/// OpenCode's token estimate: a quarter of the characters of the request's system, messages and tools
/// as JSON.
pub fn estimate_tokens(request: &LlmRequest) -> u64 {
    let mut counter = Counter(0);
    // Writing into a counter cannot fail; a serialization error would only undercount.
    serde_json::to_writer(&mut counter, &request.system).ok();
    serde_json::to_writer(&mut counter, &request.messages).ok();
    serde_json::to_writer(&mut counter, &request.tools).ok();
    counter.0.div_ceil(4)
}

/// The token estimate of `request` when the JSON lengths of its first `known` messages are already
/// known (`known_chars`, each message on its own): only the rest is serialised. Equal to
/// [`estimate_tokens`].
pub(crate) fn estimate_tokens_from(request: &LlmRequest, known: usize, known_chars: u64) -> u64 {
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, &request.system).ok();
    serde_json::to_writer(&mut counter, &request.tools).ok();
    let rest: u64 = request.messages.iter().skip(known).map(json_len).sum();
    // `[`, `]` and the commas between messages.
    let separators = 2 + request.messages.len().saturating_sub(1) as u64;
    (counter.0 + known_chars + rest + separators).div_ceil(4)
}

/// The length of `value` as JSON.
pub(crate) fn json_len(value: &impl serde::Serialize) -> u64 {
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).ok();
    counter.0
}

/// What a compaction summarises and keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selection {
    /// The summary of the checkpoint history starts with, if any.
    pub previous_summary: Option<String>,
    /// Older record, to be summarised.
    pub head: String,
    /// Newest record, kept verbatim in the checkpoint.
    pub recent: String,
}

impl Selection {
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_empty() && self.previous_summary.is_none()
    }
}

/// Serializes projected `history` and splits off the newest `keep_tokens` (at character granularity).
pub(crate) fn select(history: &[MessageWithParts], keep_tokens: u64) -> Selection {
    let mut selection = Selection::default();
    let mut entries: Vec<String> = Vec::with_capacity(history.len());
    let mut index = 0;
    while let Some(message) = history.get(index) {
        index += 1;
        if history::is_compaction(message) {
            if let Some(summary) = history.get(index).filter(|next| history::is_summary(next)) {
                selection.previous_summary = Some(history::texts(summary));
                index += 1;
            }
            let recent = history::recent_context(message);
            if !recent.is_empty() {
                entries.push(recent);
            }
            continue;
        }
        let lines = record(message);
        if !lines.is_empty() {
            entries.push(lines.join("\n"));
        }
    }
    let budget = usize::try_from(keep_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    let mut kept = 0;
    let mut recent: Vec<String> = Vec::new();
    let mut split = entries.len();
    while split > 0 && kept < budget {
        let entry = &entries[split - 1];
        let room = budget - kept;
        if entry.len() <= room {
            kept += entry.len();
            recent.push(entry.clone());
            split -= 1;
        } else {
            let start = char_boundary(entry, entry.len() - room);
            recent.push(entry[start..].to_owned());
            entries[split - 1].truncate(start);
            break;
        }
    }
    recent.reverse();
    selection.recent = recent.join("\n\n");
    selection.head = entries[..split].iter().filter(|e| !e.is_empty()).cloned().collect::<Vec<_>>().join("\n\n");
    selection
}

/// What `experimental.session.compacting` hooks leave for the summary prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionPrompt {
    /// Extra context, appended to the instructions in order (blank entries are skipped).
    pub context: Vec<String>,
    /// Replaces the instructions (the previous summary, the template and `context`) when set. The
    /// conversation history to summarise is still appended: without it there is nothing to summarise.
    pub prompt: Option<String>,
}

/// The single user message of the summary request: the instructions (or the plugins' replacement),
/// the plugins' context, then the conversation history.
pub(crate) fn summary_prompt(selection: &Selection, plugins: &CompactionPrompt) -> String {
    let history = format!("<conversation-history>\n{}\n</conversation-history>", selection.head);
    if let Some(prompt) = &plugins.prompt {
        return format!("{prompt}\n\n{history}");
    }
    let mut instructions = default_instructions(selection);
    for context in plugins.context.iter().filter(|context| !context.trim().is_empty()) {
        instructions.push_str("\n\n");
        instructions.push_str(context);
    }
    format!("{instructions}\n\n{history}")
}

/// The anchored-summary instructions: create or update, then the template.
fn default_instructions(selection: &Selection) -> String {
    let intro = match &selection.previous_summary {
        None => "Create a new anchored summary from the conversation history.".to_owned(),
        Some(previous) => format!(
            "Update the anchored summary below using the conversation history above.\n\
             Preserve still-true details, remove stale details, and merge in the new facts.\n\
             <previous-summary>\n{previous}\n</previous-summary>"
        ),
    };
    format!("{intro}\n\n{SUMMARY_TEMPLATE}")
}

const SUMMARY_TEMPLATE: &str = "Write the summary in Markdown with exactly these sections:

## Objective
What the user wants overall, in one or two sentences.

## Important Details
- Constraints, decisions, preferences and facts that must not be lost.

## Work State
### Completed
- What is done.
### Active
- What is in progress.
### Blocked
- What is waiting, and on what.

## Next Move
The single next step.

## Relevant Files
- Paths with a few words on why each matters.

Rules: keep every section (write \"None\" when empty); use terse bullets; preserve exact file paths, \
commands, identifiers and error messages; do not mention that this is a summary or a compaction.";

/// The record lines of one message.
fn record(message: &MessageWithParts) -> Vec<String> {
    let mut lines = Vec::new();
    match &message.info {
        MessageInfo::System(system) => lines.push(format!("[System update]: {}", system.text)),
        MessageInfo::User(_) => {
            for part in &message.parts {
                match &part.kind {
                    PartKind::Text { text, synthetic: Some(true), .. } => {
                        lines.push(format!("[Synthetic context]: {text}"))
                    }
                    PartKind::Text { text, .. } => lines.push(format!("[User]: {text}")),
                    PartKind::File(file) => lines.push(format!(
                        "[Attached {}: {}]",
                        file.mime,
                        file.filename.as_deref().unwrap_or(&file.url)
                    )),
                    _ => {}
                }
            }
        }
        MessageInfo::Assistant(_) => {
            for part in &message.parts {
                match &part.kind {
                    PartKind::Text { text, .. } if !text.is_empty() => lines.push(format!("[Assistant]: {text}")),
                    PartKind::Reasoning { text, .. } if !text.is_empty() => {
                        lines.push(format!("[Assistant reasoning]: {text}"));
                    }
                    PartKind::Tool { tool, state, .. } => {
                        lines.push(format!("[Assistant tool call]: {tool}({})", state.input()));
                        match state {
                            ToolState::Completed { output, .. } => {
                                lines.push(format!("[Tool result]: {}", cut(output)));
                            }
                            ToolState::Error { error, .. } => lines.push(format!("[Tool error]: {}", cut(error))),
                            ToolState::Pending { .. } | ToolState::Running { .. } => {}
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    lines
}

fn cut(text: &str) -> String {
    if text.len() <= TOOL_OUTPUT_MAX_CHARS {
        return text.to_owned();
    }
    let end = char_boundary(text, TOOL_OUTPUT_MAX_CHARS);
    format!("{}\n[truncated]", &text[..end])
}

/// The largest char boundary at or below `index`.
fn char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use opencode_llm::Message;

    use super::*;

    #[test]
    fn the_trigger_reserves_the_larger_of_output_and_buffer() {
        let settings = CompactionSettings { auto: true, buffer: 100, keep_tokens: 10 };
        assert!(!settings.overflows(900, 1000, 50));
        assert!(settings.overflows(901, 1000, 50));
        assert!(settings.overflows(801, 1000, 200));
        assert!(!settings.overflows(1_000_000, 0, 0), "an unknown context limit never triggers");
    }

    #[test]
    fn the_estimate_is_a_quarter_of_the_json() {
        let request = LlmRequest::new("m").message(Message::user("x".repeat(400)));
        let json = serde_json::to_string(&request.messages).unwrap().len() as u64 + "[][]".len() as u64;
        assert_eq!(estimate_tokens(&request), json.div_ceil(4));
    }

    #[test]
    fn plugins_add_context_or_replace_the_instructions_but_the_history_stays() {
        let selection = Selection { head: "[User]: hi".into(), ..Selection::default() };
        let plain = summary_prompt(&selection, &CompactionPrompt::default());
        assert!(
            plain.starts_with("Create a new anchored summary")
                && plain.ends_with("[User]: hi\n</conversation-history>")
        );
        let added = CompactionPrompt { context: vec!["Keep ticket 7.".into(), " ".into()], prompt: None };
        let with_context = summary_prompt(&selection, &added);
        assert_eq!(
            with_context,
            plain.replace("\n\n<conversation-history>", "\n\nKeep ticket 7.\n\n<conversation-history>")
        );
        let replaced = CompactionPrompt { context: vec!["ignored".into()], prompt: Some("Summarise tersely.".into()) };
        assert_eq!(
            summary_prompt(&selection, &replaced),
            "Summarise tersely.\n\n<conversation-history>\n[User]: hi\n</conversation-history>"
        );
    }

    #[test]
    fn cutting_keeps_char_boundaries() {
        let long = "é".repeat(TOOL_OUTPUT_MAX_CHARS);
        assert!(cut(&long).ends_with("\n[truncated]"));
    }
}
