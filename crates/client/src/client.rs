//! [`Client`]: one server, one directory, optional credentials; typed calls over reqwest.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;
use reqwest::RequestBuilder;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::json;

use crate::error::ClientError;
use crate::events::EventStream;
use crate::types::Agent;
use crate::types::CommandInfo;
use crate::types::Health;
use crate::types::Message;
use crate::types::PermissionReply;
use crate::types::PermissionRequest;
use crate::types::PromptBody;
use crate::types::ProviderEntry;
use crate::types::ProviderList;
use crate::types::Providers;
use crate::types::Session;

/// A client of one OpenCode-compatible server. Cheap to clone; clones share connections.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base: String,
    /// `Basic <base64(user:password)>`.
    authorization: Option<String>,
    /// Sent as `x-opencode-directory` (percent-encoded): the instance every call addresses.
    directory: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("base", &self.inner.base).field("directory", &self.inner.directory).finish()
    }
}

impl Client {
    /// A client of the server at `base_url` (`http://HOST:PORT`).
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        let base = base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) || base.len() <= "https://".len() {
            return Err(ClientError::BadUrl(base_url.to_owned()));
        }
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(|source| ClientError::Unreachable { url: base.clone(), source })?;
        Ok(Self { inner: Arc::new(Inner { http, base, authorization: None, directory: None }) })
    }

    /// Sends HTTP Basic credentials (the server's `OPENCODE_SERVER_PASSWORD`) with every call.
    pub fn with_password(self, username: &str, password: &str) -> Self {
        let token = STANDARD.encode(format!("{username}:{password}"));
        self.with(|inner| inner.authorization = Some(format!("Basic {token}")))
    }

    /// Addresses the instance of `directory` (its project, config and sessions).
    pub fn with_directory(self, directory: impl Into<String>) -> Self {
        let directory = directory.into();
        self.with(|inner| inner.directory = Some(directory))
    }

    fn with(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            http: self.inner.http.clone(),
            base: self.inner.base.clone(),
            authorization: self.inner.authorization.clone(),
            directory: self.inner.directory.clone(),
        };
        change(&mut inner);
        Self { inner: Arc::new(inner) }
    }

    /// The server's base URL.
    pub fn url(&self) -> &str {
        &self.inner.base
    }

    /// The directory every call addresses, if one was set.
    pub fn directory(&self) -> Option<&str> {
        self.inner.directory.as_deref()
    }

    pub async fn health(&self) -> Result<Health, ClientError> {
        self.get("/global/health").await
    }

    /// Sessions of the directory, most recently updated first.
    pub async fn sessions(&self) -> Result<Vec<Session>, ClientError> {
        self.get("/session").await
    }

    pub async fn session(&self, id: &str) -> Result<Session, ClientError> {
        self.get(&format!("/session/{id}")).await
    }

    pub async fn children(&self, id: &str) -> Result<Vec<Session>, ClientError> {
        self.get(&format!("/session/{id}/children")).await
    }

    pub async fn create_session(&self, title: Option<&str>) -> Result<Session, ClientError> {
        // OpenCode's server refuses `null` where a field is optional: absent fields are left out.
        let body = title.map_or_else(|| json!({}), |title| json!({ "title": title }));
        self.send(Method::POST, "/session", Some(&body)).await
    }

    pub async fn rename_session(&self, id: &str, title: &str) -> Result<Session, ClientError> {
        self.send(Method::PATCH, &format!("/session/{id}"), Some(&json!({ "title": title }))).await
    }

    pub async fn delete_session(&self, id: &str) -> Result<bool, ClientError> {
        self.send(Method::DELETE, &format!("/session/{id}"), None::<&()>).await
    }

    /// The session's transcript, oldest first.
    pub async fn messages(&self, id: &str) -> Result<Vec<Message>, ClientError> {
        self.get(&format!("/session/{id}/message")).await
    }

    /// Admits a text prompt and returns at once; progress arrives on the event stream.
    pub async fn prompt_async(&self, id: &str, text: &str) -> Result<(), ClientError> {
        self.prompt_async_with(id, &PromptBody::text(text)).await
    }

    pub async fn prompt_async_with(&self, id: &str, body: &PromptBody) -> Result<(), ClientError> {
        let path = format!("/session/{id}/prompt_async");
        self.call(Method::POST, &path, Some(body)).await.map(drop)
    }

    /// Admits a prompt and waits for the answer (the assistant message of the turn).
    pub async fn prompt(&self, id: &str, body: &PromptBody) -> Result<Message, ClientError> {
        self.send(Method::POST, &format!("/session/{id}/message"), Some(body)).await
    }

    /// Interrupts the session's running turn (a no-op when idle).
    pub async fn abort(&self, id: &str) -> Result<bool, ClientError> {
        self.send(Method::POST, &format!("/session/{id}/abort"), None::<&()>).await
    }

    /// Stages the removal of `message_id` and everything after it (`/undo`).
    pub async fn revert(&self, id: &str, message_id: &str) -> Result<Session, ClientError> {
        self.send(Method::POST, &format!("/session/{id}/revert"), Some(&json!({ "messageID": message_id }))).await
    }

    /// Restores what the last revert staged (`/redo`).
    pub async fn unrevert(&self, id: &str) -> Result<Session, ClientError> {
        self.send(Method::POST, &format!("/session/{id}/unrevert"), None::<&()>).await
    }

    /// Publishes a read-only transcript of the session; its link (`/share`).
    pub async fn share(&self, id: &str) -> Result<Option<String>, ClientError> {
        let session: Session = self.send(Method::POST, &format!("/session/{id}/share"), None::<&Value>).await?;
        Ok(session.share_url())
    }

    /// Withdraws the session's shared transcript (`/unshare`).
    pub async fn unshare(&self, id: &str) -> Result<(), ClientError> {
        let _session: Session = self.send(Method::DELETE, &format!("/session/{id}/share"), None::<&Value>).await?;
        Ok(())
    }

    /// Every provider the server knows, with whether it is connected (what `/connect` offers).
    pub async fn all_providers(&self) -> Result<Vec<ProviderEntry>, ClientError> {
        let list: ProviderList = self.get("/provider").await?;
        Ok(list
            .all
            .into_iter()
            .map(|provider| ProviderEntry {
                connected: list.connected.contains(&provider.id),
                id: provider.id,
                name: provider.name,
            })
            .collect())
    }

    /// Stores an API key for `provider` on the server (`PUT /auth/{provider}`): its models can be
    /// used from the next prompt on.
    pub async fn set_api_key(&self, provider: &str, key: &str) -> Result<(), ClientError> {
        let body = json!({ "type": "api", "key": key });
        let _stored: bool = self.send(Method::PUT, &format!("/auth/{provider}"), Some(&body)).await?;
        Ok(())
    }

    /// Compacts the session's history (`/compact`).
    pub async fn compact(&self, id: &str, provider_id: &str, model_id: &str) -> Result<bool, ClientError> {
        let body = json!({ "providerID": provider_id, "modelID": model_id });
        self.send(Method::POST, &format!("/session/{id}/summarize"), Some(&body)).await
    }

    /// Runs a shell command in the session's directory, recorded in the transcript (`!command`).
    pub async fn shell(&self, id: &str, agent: &str, command: &str) -> Result<Value, ClientError> {
        let body = json!({ "agent": agent, "command": command });
        self.send(Method::POST, &format!("/session/{id}/shell"), Some(&body)).await
    }

    /// Pending permission requests of the directory's sessions.
    pub async fn permissions(&self) -> Result<Vec<PermissionRequest>, ClientError> {
        self.get("/permission").await
    }

    /// Answers a permission request; a rejection may carry a message for the model.
    pub async fn reply_permission(
        &self,
        request_id: &str,
        reply: PermissionReply,
        message: Option<&str>,
    ) -> Result<bool, ClientError> {
        let mut body = json!({ "reply": reply });
        if let Some(message) = message {
            body["message"] = json!(message);
        }
        self.send(Method::POST, &format!("/permission/{request_id}/reply"), Some(&body)).await
    }

    pub async fn agents(&self) -> Result<Vec<Agent>, ClientError> {
        self.get("/agent").await
    }

    pub async fn providers(&self) -> Result<Providers, ClientError> {
        self.get("/config/providers").await
    }

    pub async fn commands(&self) -> Result<Vec<CommandInfo>, ClientError> {
        self.get("/command").await
    }

    /// Runs configured command `name` with `arguments` in the session (its template expanded into
    /// a prompt) and waits for the reply; `model` is `provider/model`.
    pub async fn command(
        &self,
        id: &str,
        name: &str,
        arguments: &str,
        agent: Option<&str>,
        model: Option<&str>,
    ) -> Result<Value, ClientError> {
        let mut body = json!({ "command": name, "arguments": arguments });
        if let Some(agent) = agent {
            body["agent"] = json!(agent);
        }
        if let Some(model) = model {
            body["model"] = json!(model);
        }
        self.send(Method::POST, &format!("/session/{id}/command"), Some(&body)).await
    }

    /// Files of the directory whose path matches `query` (fuzzy; `.gitignore` respected).
    pub async fn find_files(&self, query: &str) -> Result<Vec<String>, ClientError> {
        self.get(&format!("/find/file?query={}", encode(query))).await
    }

    /// The directory's event stream (`/event`), reconnecting by itself.
    pub fn events(&self) -> EventStream {
        EventStream::open(self.clone(), "/event")
    }

    /// Every directory's events (`/global/event`), each with its directory.
    pub fn global_events(&self) -> EventStream {
        EventStream::open(self.clone(), "/global/event")
    }

    pub(crate) async fn stream(&self, path: &str) -> Result<reqwest::Response, ClientError> {
        let request = self.request(Method::GET, path).header(reqwest::header::ACCEPT, "text/event-stream");
        self.checked(Method::GET, path, request).await
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send(Method::GET, path, None::<&()>).await
    }

    async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&(impl Serialize + ?Sized)>,
    ) -> Result<T, ClientError> {
        let response = self.call(method.clone(), path, body).await?;
        let text = response.text().await.map_err(|source| self.unreachable(source))?;
        serde_json::from_str(&text).map_err(|err| ClientError::Decode {
            method: method.to_string(),
            path: path.to_owned(),
            detail: format!("{err} in {}", preview(&text)),
        })
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&(impl Serialize + ?Sized)>,
    ) -> Result<reqwest::Response, ClientError> {
        let mut request = self.request(method.clone(), path);
        if let Some(body) = body {
            request = request.json(body);
        }
        self.checked(method, path, request).await
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let mut request = self.inner.http.request(method, format!("{}{path}", self.inner.base));
        if let Some(authorization) = &self.inner.authorization {
            request = request.header(reqwest::header::AUTHORIZATION, authorization);
        }
        if let Some(directory) = &self.inner.directory {
            request = request.header("x-opencode-directory", encode(directory));
        }
        request
    }

    /// Sends; an error status becomes [`ClientError::Api`] with the server's message.
    async fn checked(
        &self,
        method: Method,
        path: &str,
        request: RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        let response = request.send().await.map_err(|source| self.unreachable(source))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().await.unwrap_or_default();
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let name = body.get("name").and_then(Value::as_str).map(str::to_owned);
        let message = body
            .pointer("/data/message")
            .or_else(|| body.get("message"))
            .and_then(Value::as_str)
            .map_or_else(|| preview(&text), str::to_owned);
        Err(ClientError::Api {
            method: method.to_string(),
            path: path.to_owned(),
            status: status.as_u16(),
            name,
            message,
        })
    }

    fn unreachable(&self, source: reqwest::Error) -> ClientError {
        ClientError::Unreachable { url: self.inner.base.clone(), source }
    }
}

/// Percent-encodes everything but unreserved characters and `/`.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The start of a body, for error messages.
fn preview(text: &str) -> String {
    let cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() { format!("{cut}…") } else { cut }
}
