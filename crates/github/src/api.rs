//! The few REST calls the agent makes: read a thread's comments, post a comment (or a reply to a
//! review comment) and update it in place. The base is `GITHUB_API_URL` as Actions sets it, so GitHub
//! Enterprise Server and tests work the same way.

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

    async fn call(
        &self,
        name: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, GithubError> {
        let transport = |source| GithubError::Transport { method: name, path: path.to_owned(), source };
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.api))
            .bearer_auth(&self.token)
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28");
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            let message = value["message"].as_str().unwrap_or("no message").to_owned();
            return Err(GithubError::Status { method: name, path: path.to_owned(), status, message });
        }
        Ok(value)
    }
}
