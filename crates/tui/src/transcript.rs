//! A session's messages as wrapped, styled lines. Each message is rendered once per (revision, width,
//! options) and cached, so a frame costs only the visible rows plus a sum of cached heights.

use std::collections::HashMap;

use opencode_client::Message;
use opencode_client::MessageInfo;
use opencode_client::Part;
use opencode_client::PartKind;
use opencode_client::Role;
use opencode_client::ToolState;
use opencode_client::ToolStatus;
use ratatui::style::Modifier;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::text::Span;
use serde_json::Value;

use crate::markdown;
use crate::theme::Theme;
use crate::wrap::fit;
use crate::wrap::wrap;

/// Lines of command output shown under a `bash` call.
const OUTPUT_PREVIEW: usize = 5;
/// Lines of a diff shown under an edit.
const DIFF_PREVIEW: usize = 16;

/// Width from which edit diffs show side by side (as OpenCode's `diff_style: auto` does).
pub const SPLIT_DIFF_MIN_WIDTH: u16 = 120;

/// How messages are shown (changing one re-renders every message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    pub thinking: bool,
    /// The width to lay edit diffs out side by side in; `None` shows them unified.
    pub split_diffs: Option<u16>,
    /// `tui.json` `diff_style: "stacked"`: diffs are always unified, however wide the terminal.
    pub stacked_diffs: bool,
}

#[derive(Default)]
pub struct Transcript {
    cache: HashMap<String, Cached>,
}

struct Cached {
    key: (u64, u16, Options),
    lines: Vec<Line<'static>>,
}

impl Transcript {
    /// The wrapped lines of `message` at `revision` (bumped whenever the message changes).
    pub fn lines(
        &mut self,
        message: &Message,
        revision: u64,
        width: u16,
        options: Options,
        theme: &Theme,
    ) -> &[Line<'static>] {
        let split = !options.stacked_diffs && width >= SPLIT_DIFF_MIN_WIDTH;
        let options = Options { split_diffs: split.then_some(width), ..options };
        let key = (revision, width, options);
        let cached = self.cache.entry(message.info.id.clone()).or_insert_with(|| Cached { key, lines: Vec::new() });
        if cached.key != key || cached.lines.is_empty() {
            cached.key = key;
            cached.lines =
                render(message, options, theme).iter().flat_map(|line| wrap(line, usize::from(width))).collect();
        }
        &cached.lines
    }

    /// Forgets messages that are gone (a session switch, a removal).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.cache.retain(|id, _| keep(id));
    }
}

/// One message, unwrapped, with a blank line after it.
pub fn render(message: &Message, options: Options, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = match message.info.role {
        Role::User => user(message, theme),
        Role::Assistant => assistant(message, options, theme),
        Role::Other => Vec::new(),
    };
    if !lines.is_empty() {
        lines.push(Line::default());
    }
    lines
}

fn user(message: &Message, theme: &Theme) -> Vec<Line<'static>> {
    let bar = Span::styled("┃ ", theme.accent());
    let mut lines = Vec::new();
    for part in &message.parts {
        match &part.kind {
            PartKind::Text { text, synthetic } if synthetic != &Some(true) => {
                lines.extend(text.lines().map(|l| Line::from(vec![bar.clone(), Span::raw(l.to_owned())])));
            }
            PartKind::File { filename, url, .. } => {
                let name = filename.clone().unwrap_or_else(|| url.clone());
                lines.push(Line::from(vec![bar.clone(), Span::styled(format!("[file] {name}"), theme.muted())]));
            }
            _ => {}
        }
    }
    lines
}

fn assistant(message: &Message, options: Options, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for part in &message.parts {
        part_lines(part, options, theme, &mut lines);
    }
    if let Some(error) = &message.info.error {
        lines.push(Line::from(Span::styled(format!("error: {}", error.message()), theme.error())));
    }
    // One footer per turn: steps that ended in tool calls continue in the next message.
    let continues = message.info.extra.get("finish").and_then(Value::as_str) == Some("tool-calls");
    if message.info.time.completed.is_some() && !continues {
        lines.push(footer(&message.info, theme));
    }
    lines
}

fn part_lines(part: &Part, options: Options, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    match &part.kind {
        PartKind::Text { text, .. } if !text.trim().is_empty() => {
            lines.extend(markdown::render(text.trim_end(), theme))
        }
        PartKind::Reasoning { text } if options.thinking && !text.trim().is_empty() => {
            let style = theme.muted().add_modifier(Modifier::ITALIC);
            lines.push(Line::from(Span::styled("Thinking:", style)));
            lines.extend(text.trim().lines().map(|l| Line::from(Span::styled(l.to_owned(), style))));
        }
        PartKind::Tool { tool, state, .. } => tool_lines(tool, state, options, theme, lines),
        PartKind::Retry { attempt, error } => {
            let message = error.pointer("/data/message").and_then(Value::as_str).unwrap_or("provider error");
            lines.push(Line::from(Span::styled(format!("retrying (attempt {attempt}): {message}"), theme.warning())));
        }
        PartKind::Compaction { .. } => lines.push(Line::from(Span::styled("── history compacted ──", theme.muted()))),
        PartKind::Subtask { description, agent, .. } => {
            lines.push(Line::from(Span::styled(format!("◉ {agent}: {description}"), theme.accent())));
        }
        _ => {}
    }
}

/// A tool call: a title line with its status, then what it did.
fn tool_lines(tool: &str, state: &ToolState, options: Options, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    let input = |key: &str| state.input.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let title = match tool {
        "bash" => format!("$ {}", input("command")),
        "read" => format!("→ Read {}", input("filePath")),
        "write" => format!("← Write {}", input("filePath")),
        "edit" => format!("← Edit {}", input("filePath")),
        "apply_patch" => "← Patch".to_owned(),
        "list" => format!("→ List {}", input("path")),
        "glob" => format!("✱ Glob \"{}\"", input("pattern")),
        "grep" => format!("✱ Grep \"{}\"", input("pattern")),
        "webfetch" => format!("% Fetch {}", input("url")),
        "task" => format!("◉ Task {}", input("description")),
        "todowrite" => "☐ Todo".to_owned(),
        other => format!("⚙ {}", state.title.clone().unwrap_or_else(|| other.to_owned())),
    };
    let (mark, style) = match state.status {
        ToolStatus::Pending | ToolStatus::Running => (" …", theme.muted()),
        ToolStatus::Completed => ("", Style::default()),
        ToolStatus::Error => (" ✗", theme.error()),
    };
    lines.push(Line::from(vec![Span::styled(title, style.add_modifier(Modifier::BOLD)), Span::styled(mark, style)]));
    if let Some(error) = &state.error {
        lines.push(Line::from(Span::styled(format!("  {}", first_line(error)), theme.error())));
        return;
    }
    let metadata = state.metadata.as_ref();
    match tool {
        "bash" => {
            // `metadata.output` is what the command printed (live while it runs), without the
            // status footer the model reads.
            let shown = metadata.and_then(|m| m.get("output")).and_then(Value::as_str);
            let output = shown.or(state.output.as_deref()).unwrap_or("");
            if state.status == ToolStatus::Running {
                tail(output, OUTPUT_PREVIEW, theme, lines);
            } else {
                preview(output, OUTPUT_PREVIEW, theme.muted(), theme, lines);
            }
        }
        "edit" | "write" | "apply_patch" => {
            if let Some(diff) = metadata.and_then(|m| m.get("diff")).and_then(Value::as_str) {
                match options.split_diffs {
                    Some(width) => split_diff_lines(diff, width, theme, lines),
                    None => diff_lines(diff, theme, lines),
                }
            } else if tool == "write" {
                // A written file has no diff: what it holds now, coloured by its extension.
                content_lines(&input("filePath"), &input("content"), theme, lines);
            }
        }
        "todowrite" => {
            let todos = metadata.and_then(|m| m.get("todos")).or_else(|| state.input.get("todos"));
            for todo in todos.and_then(Value::as_array).into_iter().flatten() {
                let done = todo.get("status").and_then(Value::as_str) == Some("completed");
                let content = todo.get("content").and_then(Value::as_str).unwrap_or("");
                let (mark, style) = if done { ("[x]", theme.muted()) } else { ("[ ]", Style::default()) };
                lines.push(Line::from(Span::styled(format!("  {mark} {content}"), style)));
            }
        }
        _ => {}
    }
}

/// The first lines of a file's `content` (coloured as its extension's language where the lexer
/// knows it), then how many more there are.
fn content_lines(path: &str, content: &str, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    let language = std::path::Path::new(path).extension().and_then(|ext| ext.to_str()).unwrap_or("");
    let all: Vec<&str> = content.trim_end().lines().collect();
    for line in all.iter().take(DIFF_PREVIEW) {
        let mut spans = vec![Span::raw("  ")];
        match crate::highlight::line(language, line, theme) {
            Some(coloured) => spans.extend(coloured),
            None => spans.push(Span::raw((*line).to_owned())),
        }
        lines.push(Line::from(spans));
    }
    if all.len() > DIFF_PREVIEW {
        lines.push(Line::from(Span::styled(format!("  … {} more lines", all.len() - DIFF_PREVIEW), theme.muted())));
    }
}

/// The first `limit` lines of `text`, then how many more there are.
fn preview(text: &str, limit: usize, style: Style, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    let all: Vec<&str> = text.trim_end().lines().collect();
    lines.extend(all.iter().take(limit).map(|l| Line::from(Span::styled(format!("  {l}"), style))));
    if all.len() > limit {
        lines.push(Line::from(Span::styled(format!("  … {} more lines", all.len() - limit), theme.muted())));
    }
}

/// The last `limit` lines of `text` (a running command's latest output), after how many came before.
fn tail(text: &str, limit: usize, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    let all: Vec<&str> = text.trim_end().lines().collect();
    let skipped = all.len().saturating_sub(limit);
    if skipped > 0 {
        lines.push(Line::from(Span::styled(format!("  … {skipped} earlier lines"), theme.muted())));
    }
    lines.extend(all[skipped..].iter().map(|l| Line::from(Span::styled(format!("  {l}"), theme.muted()))));
}

/// A unified diff's hunk headers and changed lines (file headers skipped).
fn changed_lines(diff: &str) -> Vec<&str> {
    diff.lines()
        .filter(|l| !l.starts_with("+++") && !l.starts_with("---") && !l.starts_with("Index:") && !l.starts_with("==="))
        .filter(|l| l.starts_with('+') || l.starts_with('-') || l.starts_with("@@"))
        .collect()
}

/// A unified diff's changed lines, coloured.
fn diff_lines(diff: &str, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    let changed = changed_lines(diff);
    for line in changed.iter().take(DIFF_PREVIEW) {
        let style = match line.chars().next() {
            Some('+') => theme.success(),
            Some('-') => theme.error(),
            _ => theme.muted(),
        };
        lines.push(Line::from(Span::styled(format!("  {line}"), style)));
    }
    if changed.len() > DIFF_PREVIEW {
        lines.push(Line::from(Span::styled(format!("  … {} more lines", changed.len() - DIFF_PREVIEW), theme.muted())));
    }
}

/// A diff side by side in `width` columns: each run of removed lines on the left beside the run of
/// added lines that replaced it, hunk headers across; lines cut to their column.
fn split_diff_lines(diff: &str, width: u16, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    let changed = changed_lines(diff);
    let column = usize::from(width).saturating_sub(6) / 2;
    let mut rows = Vec::new();
    let mut at = 0;
    while at < changed.len() {
        if changed[at].starts_with("@@") {
            rows.push(Line::from(Span::styled(format!("  {}", changed[at]), theme.muted())));
            at += 1;
            continue;
        }
        let removed: Vec<&str> = changed[at..].iter().take_while(|l| l.starts_with('-')).copied().collect();
        at += removed.len();
        let added: Vec<&str> = changed[at..].iter().take_while(|l| l.starts_with('+')).copied().collect();
        at += added.len();
        for row in 0..removed.len().max(added.len()) {
            let left = removed.get(row).map_or(String::new(), |l| fit(l, column));
            let right = added.get(row).map_or(String::new(), |l| fit(l, column));
            rows.push(Line::from(vec![
                Span::styled(format!("  {left:<column$}"), theme.error()),
                Span::styled(" │ ", theme.muted()),
                Span::styled(right, theme.success()),
            ]));
        }
    }
    let more = rows.len().saturating_sub(DIFF_PREVIEW);
    lines.extend(rows.into_iter().take(DIFF_PREVIEW));
    if more > 0 {
        lines.push(Line::from(Span::styled(format!("  … {more} more lines"), theme.muted())));
    }
}

/// `▣ agent · model · 2.4s`.
fn footer(info: &MessageInfo, theme: &Theme) -> Line<'static> {
    let mut parts = vec![info.agent.clone().unwrap_or_else(|| "assistant".to_owned())];
    if let Some(model) = &info.model_id {
        parts.push(model.clone());
    }
    if let Some(completed) = info.time.completed {
        let millis = completed.saturating_sub(info.time.created);
        parts.push(format!("{:.1}s", millis as f64 / 1000.0));
    }
    Line::from(Span::styled(format!("▣ {}", parts.join(" · ")), theme.muted()))
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").to_owned()
}
