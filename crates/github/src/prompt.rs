//! The prompt a trigger makes: the request first, then the thread it belongs to (title, body, the
//! conversation so far), and for a review comment the file, lines and diff hunk it points at.

use crate::event::Trigger;

/// One comment of a thread, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    pub id: u64,
    pub author: String,
    pub body: String,
}

/// The prompt for `trigger`, with `comments` the thread's conversation (oldest first; the
/// triggering comment and the agent's own progress comment are left out here).
pub fn prompt(trigger: &Trigger, repository: &str, comments: &[Comment], skip: &[u64]) -> String {
    let mut out = String::new();
    let request = match trigger {
        Trigger::Comment { request, .. } | Trigger::ReviewComment { request, .. } | Trigger::Manual { request } => {
            Some(request.as_str())
        }
        Trigger::Issue { request, .. } | Trigger::PullRequest { request, .. } => request.as_deref(),
    };
    match (trigger, request) {
        (_, Some(request)) if !request.is_empty() => out.push_str(request),
        (Trigger::PullRequest { .. }, _) => out.push_str(
            "Review this pull request: read its diff against the base branch, point out bugs, risks and \
             missing tests with file and line, and say whether it is ready to merge.",
        ),
        (Trigger::Issue { .. }, _) => out.push_str(
            "Answer this issue: explain the cause if it reports a problem, or how to do what it asks, \
             pointing at the code involved.",
        ),
        _ => out.push_str("Summarise this thread and what is being asked."),
    }
    out.push_str("\n\n");
    if let Some(thread) = trigger.thread() {
        let kind = if thread.pull_request { "pull request" } else { "issue" };
        out.push_str(&format!(
            "<{tag} repository=\"{repository}\" number=\"{number}\" author=\"{author}\">\n<title>{title}</title>\n",
            tag = kind.replace(' ', "_"),
            number = thread.number,
            author = thread.author.login,
            title = thread.title.trim(),
        ));
        if !thread.body.trim().is_empty() {
            out.push_str(&format!("<body>\n{}\n</body>\n", thread.body.trim()));
        }
        let shown: Vec<&Comment> = comments.iter().filter(|c| !skip.contains(&c.id)).collect();
        if !shown.is_empty() {
            out.push_str("<comments>\n");
            for comment in shown {
                out.push_str(&format!(
                    "<comment author=\"{}\">\n{}\n</comment>\n",
                    comment.author,
                    comment.body.trim()
                ));
            }
            out.push_str("</comments>\n");
        }
        out.push_str(&format!("</{}>\n", kind.replace(' ', "_")));
    }
    if let Trigger::ReviewComment { path, line, diff_hunk, .. } = trigger {
        let line = line.map(|line| format!(" line=\"{line}\"")).unwrap_or_default();
        out.push_str(&format!(
            "\nThe comment is on {path}:\n<diff_hunk file=\"{path}\"{line}>\n{diff_hunk}\n</diff_hunk>\n"
        ));
    }
    out.trim_end().to_owned()
}
