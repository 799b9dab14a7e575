//! The historian: turns the oldest raw history into compartments, out of band (never inside a
//! transform pass; the pass only reads what the historian published).
//!
//! This build's historian is deterministic: a compartment is the digest of a run of whole user
//! turns (`U:` the user's words, `A:` the start of the answer, `TC:` each tool call, `TR:` its
//! result's size or error), so it keeps requests, decisions and tool trail while shedding tool
//! output bodies, which stay reachable through `ctx_search` and `ctx_expand`.
//!
//! When the host offers a side model, the historian asks the small model instead ([`prompt`],
//! [`parse`]): the same digest lines with their message numbers go in, compartments with a title
//! and a summary come out. An answer that does not parse or breaks the rules (contiguous ranges
//! from the job's start, each ending just before a user message) is not used: the digest is.

use crate::render::tokens;
use crate::state::SessionState;
use crate::store::Compartment;

/// The importance of a compartment nobody judged (the digest), and of a model answer without one.
pub const DEFAULT_IMPORTANCE: u8 = 50;

/// At most this many estimated tokens of raw history go into one compartment.
const CHUNK_TOKENS: u64 = 6_000;
const USER_CHARS: usize = 600;
const ANSWER_CHARS: usize = 240;
const CALL_CHARS: usize = 160;

/// The raw range `[start, end)` the historian may summarise now: from the end of the last
/// compartment to the start of the protected tail (the last `protected_turns` user turns), ending
/// just before a user message so tool call/result pairs are never split.
pub fn eligible(state: &SessionState, covered: usize, protected_turns: usize) -> Option<(usize, usize)> {
    let turns: Vec<usize> = state.user_turns().collect();
    let protected_start = *turns.get(turns.len().checked_sub(protected_turns.max(1))?)?;
    (protected_start > covered).then_some((covered, protected_start))
}

/// Estimated raw tokens of `[start, end)`.
pub fn range_tokens(state: &SessionState, start: usize, end: usize) -> u64 {
    state.marks[start..end].iter().map(|mark| mark.tokens).sum()
}

/// Digests raw rows (ordinal, role, stored text) into compartments numbered from `next_sequence`,
/// each a run of whole user turns of at most [`CHUNK_TOKENS`] raw tokens (a longer turn is one
/// compartment of its own).
pub fn digest(rows: &[(usize, String, String)], next_sequence: u32) -> Vec<Compartment> {
    let mut compartments = Vec::new();
    let mut current: Vec<&(usize, String, String)> = Vec::new();
    let mut size = 0;
    for row in rows {
        let starts_turn = row.1 == "user";
        if starts_turn && !current.is_empty() && size + tokens(&row.2) > CHUNK_TOKENS {
            compartments.push(compartment(&current, next_sequence + compartments.len() as u32));
            current.clear();
            size = 0;
        }
        size += tokens(&row.2);
        current.push(row);
    }
    if !current.is_empty() {
        compartments.push(compartment(&current, next_sequence + compartments.len() as u32));
    }
    compartments
}

/// The small model's instructions.
pub const SYSTEM: &str = "You are the historian of a coding session. You compress a range of its raw \
history into compartments: runs of whole user turns, each summarised for the agent that will \
continue the session without seeing the original. Keep every decision, constraint, value, name, \
file path, command, error and its fix that may matter later, in the latest version when something \
changed; drop chatter and the bodies of tool outputs. Write in the first person as the agent. \
Answer with XML only: <compartments><compartment start=\"FIRST\" end=\"LAST\" title=\"a short title\" \
importance=\"N\">summary</compartment>...</compartments>. FIRST and LAST are the message numbers shown in \
brackets. N, from 1 to 100, is how long the compartment stays worth reading in full: 85-100 for rules \
and decisions that hold for good, 60-84 for months, 30-59 for weeks, 10-29 for days, below 10 for \
chatter. \
The first compartment starts at the first message given; each next one starts right after the \
previous one ends; each ends on the message just before a user message (U:) or on the last message \
given. You may stop before the end of the input.";

/// The request text for a job: every row's digest lines, each with its message number.
pub fn prompt(rows: &[(usize, String, String)]) -> String {
    let mut out = String::from("<new_messages>\n");
    for (ordinal, role, text) in rows {
        let mut lines = Vec::new();
        digest_message(role, text, &mut lines);
        for line in lines {
            out.push_str(&format!("[{ordinal}] {line}\n"));
        }
    }
    out.push_str("</new_messages>");
    out
}

/// Reads the small model's answer into compartments numbered from `next_sequence`, checking the
/// rules against the rows it was given; why not, in one line, when it breaks one.
pub fn parse(answer: &str, rows: &[(usize, String, String)], next_sequence: u32) -> Result<Vec<Compartment>, String> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else { return Err("no rows".into()) };
    let mut expected = first.0;
    let mut out = Vec::new();
    for block in answer.split("<compartment ").skip(1) {
        let (head, rest) = block.split_once('>').ok_or("an unclosed <compartment> tag")?;
        let body = rest.split("</compartment>").next().unwrap_or_default().trim();
        let start = attribute(head, "start")?;
        let end = attribute(head, "end")?;
        if start != expected || end < start || end > last.0 {
            return Err(format!("compartment {start}-{end} does not continue at {expected} within the input"));
        }
        let next_is_user = rows.iter().find(|row| row.0 == end + 1).is_none_or(|row| row.1 == "user");
        if !next_is_user {
            return Err(format!("compartment {start}-{end} does not end before a user message"));
        }
        if body.is_empty() {
            return Err(format!("compartment {start}-{end} is empty"));
        }
        let title = quoted(head, "title").unwrap_or_else(|| "untitled".into());
        let content = unescape(body);
        let importance = attribute(head, "importance").map_or(DEFAULT_IMPORTANCE, |value| value.clamp(1, 100) as u8);
        out.push(Compartment {
            sequence: next_sequence + out.len() as u32,
            start,
            end: end + 1,
            title: unescape(&title),
            content,
            importance,
        });
        expected = end + 1;
    }
    if out.is_empty() {
        return Err("no compartment in the answer".into());
    }
    Ok(out)
}

fn attribute(head: &str, name: &str) -> Result<usize, String> {
    let value = quoted(head, name).ok_or_else(|| format!("a compartment without `{name}`"))?;
    value.trim().parse().map_err(|_| format!("`{name}` is not a message number: {value}"))
}

fn quoted(head: &str, name: &str) -> Option<String> {
    let rest = head.split(&format!("{name}=\"")).nth(1)?;
    rest.split('"').next().map(str::to_owned)
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
}

fn compartment(rows: &[&(usize, String, String)], sequence: u32) -> Compartment {
    let start = rows.first().map_or(0, |row| row.0);
    let end = rows.last().map_or(0, |row| row.0 + 1);
    let mut lines = Vec::new();
    for (_, role, text) in rows {
        digest_message(role, text, &mut lines);
    }
    let title = rows
        .iter()
        .find(|row| row.1 == "user")
        .map(|row| clip(&one_line(&row.2), 60))
        .unwrap_or_else(|| "tool work".to_owned());
    Compartment { sequence, start, end, title, content: lines.join("\n"), importance: DEFAULT_IMPORTANCE }
}

fn digest_message(role: &str, text: &str, lines: &mut Vec<String>) {
    match role {
        "user" => lines.push(format!("U: {}", clip(&one_line(text), USER_CHARS))),
        "assistant" => {
            let (calls, words): (Vec<&str>, Vec<&str>) = text.lines().partition(|line| line.starts_with("TC: "));
            let words = one_line(&words.join(" "));
            if !words.is_empty() {
                lines.push(format!("A: {}", clip(&words, ANSWER_CHARS)));
            }
            lines.extend(calls.into_iter().map(|call| clip(call, CALL_CHARS)));
        }
        "tool" => {
            for result in text.split("\u{1e}") {
                let first = result.lines().next().unwrap_or_default();
                let count = result.lines().count();
                if first.contains("error") || first.contains("Error") {
                    lines.push(format!("TR: {}", clip(first, CALL_CHARS)));
                } else {
                    lines.push(format!("TR: {count} lines"));
                }
            }
        }
        _ => {}
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `max` characters, on a character boundary, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ordinal: usize, role: &str, text: &str) -> (usize, String, String) {
        (ordinal, role.to_owned(), text.to_owned())
    }

    #[test]
    fn a_turn_becomes_request_answer_and_tool_trail() {
        let rows = vec![
            row(0, "user", "Fix the   login bug.\nThe staging port is 5433."),
            row(1, "assistant", "Reading the handler.\nTC: read {\"path\":\"src/login.rs\"}"),
            row(2, "tool", "fn login() {}\nline 2\nline 3"),
            row(3, "assistant", "Done."),
        ];
        let compartments = digest(&rows, 1);
        assert_eq!(
            compartments,
            vec![Compartment {
                sequence: 1,
                start: 0,
                end: 4,
                title: "Fix the login bug. The staging port is 5433.".into(),
                content: "U: Fix the login bug. The staging port is 5433.\nA: Reading the handler.\nTC: read {\"path\":\"src/login.rs\"}\nTR: 3 lines\nA: Done.".into(),
                importance: 50,
            }]
        );
    }

    #[test]
    fn big_runs_split_at_user_turns_only() {
        let big = "x".repeat(30_000);
        let rows = vec![row(0, "user", "one"), row(1, "tool", &big), row(2, "user", "two"), row(3, "tool", &big)];
        let compartments = digest(&rows, 7);
        let ranges: Vec<(u32, usize, usize)> = compartments.iter().map(|c| (c.sequence, c.start, c.end)).collect();
        assert_eq!(ranges, vec![(7, 0, 2), (8, 2, 4)]);
    }

    fn job() -> Vec<(usize, String, String)> {
        vec![
            row(4, "user", "Rename the handler."),
            row(5, "assistant", "TC: edit {}"),
            row(6, "tool", "Edit applied."),
            row(7, "user", "Now run the tests."),
            row(8, "assistant", "All pass."),
        ]
    }

    #[test]
    fn the_prompt_numbers_every_digest_line() {
        assert_eq!(
            prompt(&job()[..3]),
            "<new_messages>\n[4] U: Rename the handler.\n[5] TC: edit {}\n[6] TR: 1 lines\n</new_messages>"
        );
    }

    #[test]
    fn a_good_answer_becomes_numbered_compartments() {
        let answer = "<compartments><compartment start=\"4\" end=\"6\" title=\"Rename\" importance=\"90\">I renamed the handler &amp; callers.</compartment>\n\
                      <compartment start=\"7\" end=\"8\" title=\"Tests\">Tests pass.</compartment></compartments>";
        let parsed = parse(answer, &job(), 3).unwrap();
        assert_eq!(
            parsed,
            vec![
                Compartment {
                    sequence: 3,
                    start: 4,
                    end: 7,
                    title: "Rename".into(),
                    content: "I renamed the handler & callers.".into(),
                    importance: 90,
                },
                Compartment {
                    sequence: 4,
                    start: 7,
                    end: 9,
                    title: "Tests".into(),
                    content: "Tests pass.".into(),
                    importance: 50,
                },
            ]
        );
    }

    #[test]
    fn answers_that_break_the_rules_are_refused_with_the_reason() {
        let gap = "<compartment start=\"5\" end=\"6\" title=\"x\">y</compartment>";
        assert_eq!(parse(gap, &job(), 1).unwrap_err(), "compartment 5-6 does not continue at 4 within the input");
        let split = "<compartment start=\"4\" end=\"5\" title=\"x\">y</compartment>";
        assert_eq!(parse(split, &job(), 1).unwrap_err(), "compartment 4-5 does not end before a user message");
        assert_eq!(parse("I could not do it.", &job(), 1).unwrap_err(), "no compartment in the answer");
    }

    #[test]
    fn clipping_respects_character_boundaries() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
    }
}
