//! Which webhook events call on the agent, and for what.

use serde_json::Value;

/// Who wrote an issue, a pull request or a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    pub login: String,
    /// GitHub's account type: `User`, `Bot` or `Organization`.
    pub kind: String,
}

impl Author {
    fn of(user: &Value) -> Self {
        Self { login: text(&user["login"]), kind: text(&user["type"]) }
    }

    /// Bots never call on the agent (its own comments included), so no two agents answer each other.
    pub fn is_bot(&self) -> bool {
        self.kind == "Bot" || self.login.ends_with("[bot]")
    }
}

/// An issue or a pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub author: Author,
    pub pull_request: bool,
    /// A pull request's head commit, when the payload has it (a review reports on it).
    pub head_sha: Option<String>,
}

impl Thread {
    fn of(item: &Value, pull_request: bool) -> Self {
        Self {
            number: item["number"].as_u64().unwrap_or_default(),
            title: text(&item["title"]),
            body: text(&item["body"]),
            author: Author::of(&item["user"]),
            pull_request,
            head_sha: item["head"]["sha"].as_str().map(str::to_owned),
        }
    }
}

/// What the agent is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// A comment on an issue or a pull request mentioned the agent; `request` is the comment's text.
    Comment { thread: Thread, comment_id: u64, author: Author, request: String },
    /// A review comment on a pull request's diff mentioned the agent.
    ReviewComment {
        thread: Thread,
        comment_id: u64,
        author: Author,
        request: String,
        path: String,
        line: Option<u64>,
        diff_hunk: String,
    },
    /// An issue was opened (or edited, reopened): the agent answers it.
    Issue { thread: Thread, request: Option<String> },
    /// A pull request was opened or updated: the agent reviews it.
    PullRequest { thread: Thread, request: Option<String> },
    /// `workflow_dispatch` or `schedule`: the configured prompt, no thread.
    Manual { request: String },
}

impl Trigger {
    /// The issue or pull request the agent reports on, if any.
    pub fn thread(&self) -> Option<&Thread> {
        match self {
            Self::Comment { thread, .. }
            | Self::ReviewComment { thread, .. }
            | Self::Issue { thread, .. }
            | Self::PullRequest { thread, .. } => Some(thread),
            Self::Manual { .. } => None,
        }
    }
}

/// Whether an event calls on the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(clippy::large_enum_variant, reason = "one decision per run; boxing would only obscure matching")]
pub enum Decision {
    Run(Trigger),
    /// Not for the agent; why, in a few words (printed in the workflow's log).
    Ignore(String),
}

/// Decides what the event `name` with `payload` (the webhook body) asks of the agent. `mentions`
/// call on it in comments; `prompt` is the workflow's own prompt input, required for manual and
/// scheduled runs and optional elsewhere (it then leads the thread's text).
pub fn decide(name: &str, payload: &Value, mentions: &[String], prompt: Option<&str>) -> Result<Decision, String> {
    let action = payload["action"].as_str().unwrap_or_default();
    let prompt = prompt.map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned);
    let ignore = |why: String| Ok(Decision::Ignore(why));
    match name {
        "issue_comment" | "pull_request_review_comment" => {
            if action != "created" {
                return ignore(format!("a comment was {action}, not created"));
            }
            let comment = &payload["comment"];
            let author = Author::of(&comment["user"]);
            if author.is_bot() {
                return ignore(format!("the comment is by a bot ({})", author.login));
            }
            let body = text(&comment["body"]);
            let Some(request) = mentioned(&body, mentions) else {
                return ignore(format!("the comment does not mention {}", mentions.join(" or ")));
            };
            let request = prompt.unwrap_or(request);
            let comment_id = comment["id"].as_u64().unwrap_or_default();
            Ok(Decision::Run(if name == "issue_comment" {
                let issue = &payload["issue"];
                let thread = Thread::of(issue, !issue["pull_request"].is_null());
                Trigger::Comment { thread, comment_id, author, request }
            } else {
                Trigger::ReviewComment {
                    thread: Thread::of(&payload["pull_request"], true),
                    comment_id,
                    author,
                    request,
                    path: text(&comment["path"]),
                    line: comment["line"].as_u64().or_else(|| comment["original_line"].as_u64()),
                    diff_hunk: text(&comment["diff_hunk"]),
                }
            }))
        }
        "issues" => match action {
            "opened" | "edited" | "reopened" => {
                let thread = Thread::of(&payload["issue"], false);
                if thread.author.is_bot() {
                    return ignore(format!("the issue is by a bot ({})", thread.author.login));
                }
                Ok(Decision::Run(Trigger::Issue { thread, request: prompt }))
            }
            other => ignore(format!("an issue was {other}")),
        },
        "pull_request" | "pull_request_target" => match action {
            "opened" | "synchronize" | "reopened" | "ready_for_review" => {
                let thread = Thread::of(&payload["pull_request"], true);
                if thread.author.is_bot() {
                    return ignore(format!("the pull request is by a bot ({})", thread.author.login));
                }
                Ok(Decision::Run(Trigger::PullRequest { thread, request: prompt }))
            }
            other => ignore(format!("a pull request was {other}")),
        },
        "workflow_dispatch" | "schedule" => match prompt {
            Some(request) => Ok(Decision::Run(Trigger::Manual { request })),
            None => Err(format!("a {name} run needs a prompt: set the action's `prompt` input")),
        },
        other => ignore(format!("the {other} event is not one the agent handles")),
    }
}

/// The request a comment makes of the agent: its text without the first mention, if it mentions
/// the agent. A mention counts as a whole word (`/oc` does not match `/occur`), anywhere in the
/// comment, but not inside quoted lines (a reply quoting an earlier request does not call again).
pub fn mentioned(body: &str, mentions: &[String]) -> Option<String> {
    let unquoted: Vec<&str> = body.lines().filter(|line| !line.trim_start().starts_with('>')).collect();
    let text = unquoted.join("\n");
    for mention in mentions {
        let mut from = 0;
        while let Some(found) = text[from..].find(mention.as_str()) {
            let start = from + found;
            let end = start + mention.len();
            let before = text[..start].chars().next_back();
            let after = text[end..].chars().next();
            let word_start = before.is_none_or(|c| c.is_whitespace() || c == '(');
            let word_end = after.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
            if word_start && word_end {
                let request = format!("{}{}", &text[..start], &text[end..]);
                return Some(request.trim().to_owned());
            }
            from = end;
        }
    }
    None
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}
