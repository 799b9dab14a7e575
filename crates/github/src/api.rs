//! The few REST calls the agent makes: read a thread's comments, post a comment (or a reply to a
//! review comment) and update it in place, read a pull request, open one, report a check run. The
//! base is `GITHUB_API_URL` as Actions sets it, so GitHub Enterprise Server and tests work the same
//! way. A small client of our own rather than a general GitHub crate: seven calls do not need one,
//! and the rate-limit waits are ours to choose.

use std::time::Duration;

use serde_json::Value;
use serde_json::json;

use crate::prompt::Comment;

/// A failed call, in one line: the method, the path and GitHub's own message.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("GitHub {method} {path} failed: {status} {message}")]
    Status { method: &'static str, path: String, status: u16, message: String },
    #[error("GitHub {method} {path} failed: {0}", .source)]
    Transport { method: &'static str, path: String, source: reqwest::Error },
}

impl GithubError {
    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Status { status: 401 | 403, .. } => {
                "check the token's permissions: contents, issues and pull-requests need write access"
            }
            Self::Status { status: 404, .. } => "check GITHUB_REPOSITORY and that the token can see the repository",
            _ => "check GITHUB_API_URL and the network; the run can be retried",
        }
    }
}

/// How often a call is tried again after GitHub asked the client to slow down.
const RATE_LIMIT_RETRIES: u32 = 3;
/// The longest single wait for a rate limit; a longer one fails the call (the job would only idle).
const LONGEST_WAIT: Duration = Duration::from_secs(300);
/// GitHub's advice when a secondary rate limit names no time: wait at least a minute.
const SECONDARY_WAIT: Duration = Duration::from_secs(60);

/// A pull request's branches, as far as handing changes back needs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    /// The branch the changes are on, and the repository that holds it (`owner/name`; a fork's
    /// differs from the base repository).
    pub head_ref: String,
    pub head_repository: String,
    pub base_ref: String,
}

/// A repository's API, with a token.
#[derive(Debug, Clone)]
pub struct Github {
    http: reqwest::Client,
    api: String,
    repository: String,
    token: String,
}

impl Github {
    /// `api` is the API base (`https://api.github.com`), `repository` is `owner/name`.
    pub fn new(api: &str, repository: &str, token: &str) -> Self {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("opencode/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Self {
            http,
            api: api.trim_end_matches('/').to_owned(),
            repository: repository.to_owned(),
            token: token.to_owned(),
        }
    }

    /// The comments of issue or pull request `number`, oldest first (at most 100: the newest
    /// conversation a prompt can hold).
    pub async fn comments(&self, number: u64) -> Result<Vec<Comment>, GithubError> {
        let path = format!("/repos/{}/issues/{number}/comments?per_page=100", self.repository);
        let listed = self.call("GET", reqwest::Method::GET, &path, None).await?;
        Ok(listed
            .as_array()
            .into_iter()
            .flatten()
            .map(|comment| Comment {
                id: comment["id"].as_u64().unwrap_or_default(),
                author: comment["user"]["login"].as_str().unwrap_or_default().to_owned(),
                body: comment["body"].as_str().unwrap_or_default().to_owned(),
            })
            .collect())
    }

    /// Posts a comment on issue or pull request `number`; returns its id.
    pub async fn comment(&self, number: u64, body: &str) -> Result<u64, GithubError> {
        let path = format!("/repos/{}/issues/{number}/comments", self.repository);
        let created = self.call("POST", reqwest::Method::POST, &path, Some(json!({ "body": body }))).await?;
        Ok(created["id"].as_u64().unwrap_or_default())
    }

    /// Replies in the thread of review comment `comment` on pull request `number`; returns its id.
    pub async fn reply_to_review_comment(&self, number: u64, comment: u64, body: &str) -> Result<u64, GithubError> {
        let path = format!("/repos/{}/pulls/{number}/comments/{comment}/replies", self.repository);
        let created = self.call("POST", reqwest::Method::POST, &path, Some(json!({ "body": body }))).await?;
        Ok(created["id"].as_u64().unwrap_or_default())
    }

    /// Reports a finished review of commit `head_sha` as a check run named `name`, concluded
    /// `neutral` (a review informs; it does not block a merge); returns its id.
    pub async fn check_run(&self, name: &str, head_sha: &str, title: &str, summary: &str) -> Result<u64, GithubError> {
        let path = format!("/repos/{}/check-runs", self.repository);
        // GitHub caps a check run's summary at 65,535 characters.
        let summary: String = summary.chars().take(65_000).collect();
        let body = json!({
            "name": name, "head_sha": head_sha, "status": "completed", "conclusion": "neutral",
            "output": { "title": title, "summary": summary }
        });
        let created = self.call("POST", reqwest::Method::POST, &path, Some(body)).await?;
        Ok(created["id"].as_u64().unwrap_or_default())
    }

    /// Pull request `number`'s branches.
    pub async fn pull_request(&self, number: u64) -> Result<PullRequest, GithubError> {
        let path = format!("/repos/{}/pulls/{number}", self.repository);
        let pull = self.call("GET", reqwest::Method::GET, &path, None).await?;
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        Ok(PullRequest {
            number,
            head_ref: text(&pull["head"]["ref"]),
            head_repository: text(&pull["head"]["repo"]["full_name"]),
            base_ref: text(&pull["base"]["ref"]),
        })
    }

    /// Opens a pull request from branch `head` into `base`; returns its number.
    pub async fn open_pull_request(&self, head: &str, base: &str, title: &str, body: &str) -> Result<u64, GithubError> {
        let path = format!("/repos/{}/pulls", self.repository);
        let body = json!({ "title": title, "head": head, "base": base, "body": body });
        let created = self.call("POST", reqwest::Method::POST, &path, Some(body)).await?;
        Ok(created["number"].as_u64().unwrap_or_default())
    }

    /// Replaces the body of issue comment `id`.
    pub async fn update_comment(&self, id: u64, body: &str) -> Result<(), GithubError> {
        let path = format!("/repos/{}/issues/comments/{id}", self.repository);
        self.call("PATCH", reqwest::Method::PATCH, &path, Some(json!({ "body": body }))).await.map(drop)
    }

    /// Replaces the body of review comment `id`.
    pub async fn update_review_comment(&self, id: u64, body: &str) -> Result<(), GithubError> {
        let path = format!("/repos/{}/pulls/comments/{id}", self.repository);
        self.call("PATCH", reqwest::Method::PATCH, &path, Some(json!({ "body": body }))).await.map(drop)
    }

    /// One call, tried again (at most [`RATE_LIMIT_RETRIES`] times) when GitHub answers with a
    /// primary or secondary rate limit, after the wait it asks for.
    async fn call(
        &self,
        name: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, GithubError> {
        let mut tries = 0;
        loop {
            match self.send(name, method.clone(), path, body.as_ref()).await? {
                Answer::Done(value) => return Ok(value),
                Answer::Failed(error) => return Err(error),
                Answer::Limited { wait, error } => {
                    tries += 1;
                    if tries > RATE_LIMIT_RETRIES || wait > LONGEST_WAIT {
                        return Err(error);
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn send(
        &self,
        name: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, GithubError> {
        let transport = |source| GithubError::Transport { method: name, path: path.to_owned(), source };
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.api))
            .bearer_auth(&self.token)
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28");
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let limit = rate_limit_wait(status, response.headers());
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return Ok(Answer::Done(value));
        }
        let message = value["message"].as_str().unwrap_or("no message").to_owned();
        let secondary = matches!(status, 403 | 429) && message.to_lowercase().contains("secondary rate limit");
        let error = GithubError::Status { method: name, path: path.to_owned(), status, message };
        Ok(match limit.or(secondary.then_some(SECONDARY_WAIT)) {
            Some(wait) => Answer::Limited { wait, error },
            None => Answer::Failed(error),
        })
    }
}

enum Answer {
    Done(Value),
    Failed(GithubError),
    /// Rate-limited: the call may be tried again after `wait`.
    Limited {
        wait: Duration,
        error: GithubError,
    },
}

/// The wait a rate-limited answer asks for: `retry-after` seconds (secondary limits), or until
/// `x-ratelimit-reset` when no request is left (the primary limit).
fn rate_limit_wait(status: u16, headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if !matches!(status, 403 | 429) {
        return None;
    }
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<u64>().ok();
    if let Some(seconds) = number("retry-after") {
        return Some(Duration::from_secs(seconds));
    }
    if number("x-ratelimit-remaining") == Some(0) {
        let reset = number("x-ratelimit-reset")?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    None
}
