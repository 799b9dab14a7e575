//! The historian: turns the oldest raw history into compartments, out of band (never inside a
//! transform pass; the pass only reads what the historian published).
//!
//! This build's historian is deterministic: a compartment is the digest of a run of whole user
//! turns (`U:` the user's words, `A:` the start of the answer, `TC:` each tool call, `TR:` its
//! result's size or error), so it keeps requests, decisions and tool trail while shedding tool
//! output bodies, which stay reachable through `ctx_search` and `ctx_expand`.

use crate::render::tokens;
use crate::state::SessionState;
use crate::store::Compartment;

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
    Compartment { sequence, start, end, title, content: lines.join("\n") }
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

    #[test]
    fn clipping_respects_character_boundaries() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
    }
}
