//! The historian: turns the oldest raw history into compartments, out of band (never inside a
//! transform pass; the pass only reads what the historian published).
//!
//! This build's historian is deterministic: a compartment is the digest of a run of whole user
//! turns (`U:` the user's words, `A:` the start of the answer, `TC:` each tool call, `TR:` its
//! result's size or error), so it keeps requests, decisions and tool trail while shedding tool
//! output bodies, which stay reachable through `ctx_search` and `ctx_expand`.
//!
//! Every compartment is kept in four versions, most detailed first (p1 everything, p2 condensed,
//! p3 the requests and their outcome, p4 anchors only); the decay curve picks one per compartment
//! when m[0] is rendered, so old history fades without another model call.
//!
//! When the host offers a side model, the historian asks the small model instead ([`prompt`],
//! [`parse`]): the same digest lines with their message numbers go in, with the project's
//! memories so known facts are not repeated; compartments with their four versions, and durable
//! facts in five categories, come out. The facts become project memories. An answer that does not
//! parse or breaks the rules (contiguous ranges from the job's start, each ending just before a
//! user message) is not used: the digest is.

use crate::render::tokens;
use crate::state::SessionState;
use crate::store::Compartment;
use crate::store::Memory;
use crate::store::Versions;

/// The importance of a compartment nobody judged (the digest), and of a model answer without one.
pub const DEFAULT_IMPORTANCE: u8 = 50;

/// At most this many estimated tokens of raw history go into one compartment.
const CHUNK_TOKENS: u64 = 6_000;
const USER_CHARS: usize = 600;
const ANSWER_CHARS: usize = 240;
const CALL_CHARS: usize = 160;
/// The condensed version is cut here, the outcome version there.
pub(crate) const CONDENSED_CHARS: usize = 1_200;
pub(crate) const OUTCOME_CHARS: usize = 420;
/// At most this many anchors in a p4.
const ANCHORS: usize = 8;

/// The fact categories a historian answer may promote to project memories.
pub const FACT_CATEGORIES: [&str; 5] = ["PROJECT_RULES", "ARCHITECTURE", "CONSTRAINTS", "CONFIG_VALUES", "NAMING"];

/// What the small model made of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub compartments: Vec<Compartment>,
    /// (category, fact), each to become a project memory.
    pub facts: Vec<(String, String)>,
}

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
Answer with XML only:\n\
<compartments>\n\
<compartment start=\"FIRST\" end=\"LAST\" title=\"a short title\" importance=\"N\">\n\
<p1>the full account: the user's words verbatim on U: lines, every anchor (paths, names, values, commit hashes)</p1>\n\
<p2>condensed: the same facts in about a third of the words</p2>\n\
<p3>the outcome and the key decision, one or two sentences</p3>\n\
<p4>anchors only (paths, names), or empty</p4>\n\
</compartment>\n\
</compartments>\n\
<facts><PROJECT_RULES>* ...</PROJECT_RULES><ARCHITECTURE/><CONSTRAINTS/><CONFIG_VALUES/><NAMING/></facts>\n\
FIRST and LAST are the message numbers shown in brackets. N, from 1 to 100, is how long the \
compartment stays worth reading in full: 85-100 for rules and decisions that hold for good, 60-84 \
for months, 30-59 for weeks, 10-29 for days, below 10 for chatter. \
The first compartment starts at the first message given; each next one starts right after the \
previous one ends; each ends on the message just before a user message (U:) or on the last message \
given. You may stop before the end of the input. \
Facts are durable truths about the project (rules the user set, architecture, constraints, \
configuration values, naming), one per `* ` line, in their latest version; leave out what \
<project_memory> already says and anything true of this session only.";

/// The request text for a job: the project's memories, then every row's digest lines, each with
/// its message number.
pub fn prompt(rows: &[(usize, String, String)], memories: &[Memory]) -> String {
    let mut out = String::from("<project_memory>\n");
    for memory in memories {
        out.push_str(&format!("* [{}] {}\n", memory.category, one_line(&memory.content)));
    }
    out.push_str("</project_memory>\n<new_messages>\n");
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

/// Reads the small model's answer into compartments numbered from `next_sequence` and facts,
/// checking the rules against the rows it was given; why not, in one line, when it breaks one.
/// Lenient where it costs nothing: a tier closed by the wrong tag still counts, a missing tier
/// falls back to the one above it (p4 to nothing), and a compartment written as plain text
/// instead of tiers is read as a digest.
pub fn parse(answer: &str, rows: &[(usize, String, String)], next_sequence: u32) -> Result<Answer, String> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else { return Err("no rows".into()) };
    let mut expected = first.0;
    let mut compartments = Vec::new();
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
        let versions = tiers(body).ok_or_else(|| format!("compartment {start}-{end} is empty"))?;
        let title = quoted(head, "title").unwrap_or_else(|| "untitled".into());
        let importance = attribute(head, "importance").map_or(DEFAULT_IMPORTANCE, |value| value.clamp(1, 100) as u8);
        compartments.push(Compartment {
            sequence: next_sequence + compartments.len() as u32,
            start,
            end: end + 1,
            title: unescape(&title),
            versions,
            importance,
            depth: 0,
        });
        expected = end + 1;
    }
    if compartments.is_empty() {
        return Err("no compartment in the answer".into());
    }
    Ok(Answer { compartments, facts: facts(answer) })
}

/// The four versions in a compartment's body; `None` when it has no text at all.
fn tiers(body: &str) -> Option<Versions> {
    if !body.contains("<p1") {
        return (!body.is_empty()).then(|| versions(&unescape(body)));
    }
    let full = tier(body, 1).filter(|text| !text.is_empty())?;
    let condensed = tier(body, 2).filter(|text| !text.is_empty()).unwrap_or_else(|| full.clone());
    let outcome = tier(body, 3).filter(|text| !text.is_empty()).unwrap_or_else(|| condensed.clone());
    let anchor = tier(body, 4).unwrap_or_default();
    Some(Versions { full, condensed, outcome, anchor })
}

/// The text of `<pN>`: up to the next closing or opening tier tag, whichever it is (a `<p1>`
/// closed by `</p2>` still counts); `<pN/>` is empty.
fn tier(body: &str, n: u8) -> Option<String> {
    let after = body.split_once(&format!("<p{n}"))?.1;
    if after.starts_with("/>") {
        return Some(String::new());
    }
    let text = after.split_once('>')?.1;
    let end = [text.find("</p"), text.find("<p")].into_iter().flatten().min().unwrap_or(text.len());
    Some(unescape(text[..end].trim()))
}

/// The `* ` lines under each fact category of the answer's `<facts>`.
fn facts(answer: &str) -> Vec<(String, String)> {
    let Some(block) = answer.split_once("<facts>").map(|(_, rest)| rest.split("</facts>").next().unwrap_or(rest))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for category in FACT_CATEGORIES {
        let Some(section) = block.split_once(&format!("<{category}>")).map(|(_, rest)| rest) else { continue };
        let section = section.split(&format!("</{category}>")).next().unwrap_or(section);
        for line in section.lines() {
            let fact = line.trim().trim_start_matches(['*', '-']).trim();
            if !fact.is_empty() {
                out.push((category.to_owned(), unescape(fact)));
            }
        }
    }
    out
}

/// The four versions of a text in digest form (`U:`/`A:`/`TC:`/`TR:` lines): everything; without
/// tool result lines; the requests and the last answer; the paths its tool calls named. Also
/// what a compartment written before versions existed, or as plain text, is read as.
pub fn versions(text: &str) -> Versions {
    let condensed: Vec<&str> = text.lines().filter(|line| !line.starts_with("TR:")).collect();
    let mut outcome: Vec<&str> = text.lines().filter(|line| line.starts_with("U:")).collect();
    outcome.extend(text.lines().rev().find(|line| line.starts_with("A:")));
    let condensed = clip(&condensed.join("\n"), CONDENSED_CHARS);
    let outcome = match outcome.is_empty() {
        true => clip(&condensed, OUTCOME_CHARS),
        false => clip(&outcome.join("\n"), OUTCOME_CHARS),
    };
    Versions { full: text.to_owned(), condensed, outcome, anchor: anchors(text) }
}

/// The distinct paths named by the tool calls in digest lines, as `files: a, b`.
fn anchors(text: &str) -> String {
    let mut paths: Vec<&str> = Vec::new();
    for line in text.lines().filter(|line| line.starts_with("TC: ")) {
        for key in ["\"path\":\"", "\"filePath\":\"", "\"file_path\":\""] {
            for value in line.split(key).skip(1).filter_map(|rest| rest.split('"').next()) {
                if !value.is_empty() && !paths.contains(&value) && paths.len() < ANCHORS {
                    paths.push(value);
                }
            }
        }
    }
    if paths.is_empty() { String::new() } else { format!("files: {}", paths.join(", ")) }
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
    let versions = versions(&lines.join("\n"));
    Compartment { sequence, start, end, title, versions, importance: DEFAULT_IMPORTANCE, depth: 0 }
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
pub(crate) fn clip(text: &str, max: usize) -> String {
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
    fn a_turn_becomes_four_versions_from_everything_to_its_anchors() {
        let rows = vec![
            row(0, "user", "Fix the   login bug.\nThe staging port is 5433."),
            row(1, "assistant", "Reading the handler.\nTC: read {\"path\":\"src/login.rs\"}"),
            row(2, "tool", "fn login() {}\nline 2\nline 3"),
            row(3, "assistant", "Done.\nTC: edit {\"filePath\":\"src/login.rs\"}"),
        ];
        let compartments = digest(&rows, 1);
        assert_eq!(
            compartments,
            vec![Compartment {
                sequence: 1,
                start: 0,
                end: 4,
                title: "Fix the login bug. The staging port is 5433.".into(),
                versions: Versions {
                    full: "U: Fix the login bug. The staging port is 5433.\nA: Reading the handler.\nTC: read {\"path\":\"src/login.rs\"}\nTR: 3 lines\nA: Done.\nTC: edit {\"filePath\":\"src/login.rs\"}".into(),
                    condensed: "U: Fix the login bug. The staging port is 5433.\nA: Reading the handler.\nTC: read {\"path\":\"src/login.rs\"}\nA: Done.\nTC: edit {\"filePath\":\"src/login.rs\"}".into(),
                    outcome: "U: Fix the login bug. The staging port is 5433.\nA: Done.".into(),
                    anchor: "files: src/login.rs".into(),
                },
                importance: 50,
                depth: 0,
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
    fn the_prompt_lists_known_memories_and_numbers_every_digest_line() {
        let memory = Memory { id: 3, category: "NAMING".into(), content: "Handlers end in\n_handler.".into() };
        assert_eq!(
            prompt(&job()[..3], &[memory]),
            "<project_memory>\n* [NAMING] Handlers end in _handler.\n</project_memory>\n\
             <new_messages>\n[4] U: Rename the handler.\n[5] TC: edit {}\n[6] TR: 1 lines\n</new_messages>"
        );
    }

    #[test]
    fn a_good_answer_becomes_numbered_compartments_and_facts() {
        let answer = "<compartments><compartment start=\"4\" end=\"6\" title=\"Rename\" importance=\"90\">\
                      <p1>I renamed the handler &amp; callers.</p1><p2>Renamed it.</p2><p3>Renamed.</p3><p4/></compartment>\n\
                      <compartment start=\"7\" end=\"8\" title=\"Tests\"><p1>Tests pass.</p2></compartment></compartments>\n\
                      <facts><PROJECT_RULES>\n* Run the tests before a commit.\n</PROJECT_RULES><ARCHITECTURE/>\
                      <NAMING>- Handlers end in _handler.</NAMING></facts>";
        let parsed = parse(answer, &job(), 3).unwrap();
        let versions = |full: &str, condensed: &str, outcome: &str| Versions {
            full: full.into(),
            condensed: condensed.into(),
            outcome: outcome.into(),
            anchor: String::new(),
        };
        assert_eq!(
            parsed.compartments,
            vec![
                Compartment {
                    sequence: 3,
                    start: 4,
                    end: 7,
                    title: "Rename".into(),
                    versions: versions("I renamed the handler & callers.", "Renamed it.", "Renamed."),
                    importance: 90,
                    depth: 0,
                },
                Compartment {
                    sequence: 4,
                    start: 7,
                    end: 9,
                    title: "Tests".into(),
                    // A <p1> closed by </p2> still counts; missing tiers fall back to the one above.
                    versions: versions("Tests pass.", "Tests pass.", "Tests pass."),
                    importance: 50,
                    depth: 0,
                },
            ]
        );
        assert_eq!(
            parsed.facts,
            vec![
                ("PROJECT_RULES".to_owned(), "Run the tests before a commit.".to_owned()),
                ("NAMING".to_owned(), "Handlers end in _handler.".to_owned()),
            ]
        );
    }

    #[test]
    fn a_compartment_in_plain_text_is_read_as_a_digest() {
        let answer = "<compartment start=\"4\" end=\"8\" title=\"t\">U: Rename it.\nA: Renamed.</compartment>";
        let parsed = parse(answer, &job(), 1).unwrap();
        assert_eq!(parsed.compartments[0].versions, versions("U: Rename it.\nA: Renamed."));
        assert!(parsed.facts.is_empty());
    }

    #[test]
    fn answers_that_break_the_rules_are_refused_with_the_reason() {
        let gap = "<compartment start=\"5\" end=\"6\" title=\"x\">y</compartment>";
        assert_eq!(parse(gap, &job(), 1).unwrap_err(), "compartment 5-6 does not continue at 4 within the input");
        let split = "<compartment start=\"4\" end=\"5\" title=\"x\">y</compartment>";
        assert_eq!(parse(split, &job(), 1).unwrap_err(), "compartment 4-5 does not end before a user message");
        let empty = "<compartment start=\"4\" end=\"6\" title=\"x\"><p1></p1></compartment>";
        assert_eq!(parse(empty, &job(), 1).unwrap_err(), "compartment 4-6 is empty");
        assert_eq!(parse("I could not do it.", &job(), 1).unwrap_err(), "no compartment in the answer");
    }

    #[test]
    fn clipping_respects_character_boundaries() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
    }
}
