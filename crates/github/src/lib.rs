//! GitHub for the agent, without the agent: which webhook events call on it (a comment that mentions
//! `/opencode` or `/oc`, an opened issue or pull request, a manual or scheduled run), the prompt a
//! thread makes, and the REST calls that report back (a comment updated in place while the agent
//! works; the branch, commit and pull request that hand changes back). Everything is testable without GitHub: events are GitHub's webhook payloads as Actions
//! writes them to `GITHUB_EVENT_PATH`, and the API base is `GITHUB_API_URL`.

mod api;
mod event;
mod git;
mod prompt;

pub use api::Github;
pub use api::GithubError;
pub use api::PullRequest;
pub use event::Author;
pub use event::Decision;
pub use event::Thread;
pub use event::Trigger;
pub use event::decide;
pub use event::mentioned;
pub use git::AGENT_EMAIL;
pub use git::AGENT_NAME;
pub use git::Git;
pub use git::GitError;
pub use prompt::Comment;
pub use prompt::prompt;

/// The mentions that call on the agent when none are configured.
pub const DEFAULT_MENTIONS: &[&str] = &["/opencode", "/oc"];
