//! Signing a manager's remote servers in, as OpenCode's `/mcp/{name}/auth…` routes do: start a
//! flow and hand the authorization URL to the client ([`McpManager::start_auth`]), finish it with
//! the code the client received ([`McpManager::finish_auth`]), or run the whole loopback flow and
//! wait for the browser ([`McpManager::authenticate`]). A finished sign-in reconnects the server
//! with its new tokens. [`McpManager::remove_auth`] forgets a server's stored credentials.
//!
//! Started flows are kept in memory, one per server (a new start replaces the previous one); the
//! PKCE verifier never leaves the process.

use std::time::Duration;

use crate::error::McpError;
use crate::manager::McpEvent;
use crate::manager::McpManager;
use crate::manager::ServerStatus;
use crate::oauth;
use crate::oauth::McpAuthStore;
use crate::oauth::OAuthTarget;
use crate::oauth::Started;

/// A started sign-in: where the user goes, and the `state` the redirect carries back. Both are
/// empty when the server needs no authorization (as OpenCode answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthStart {
    pub authorization_url: String,
    pub oauth_state: String,
}

impl McpManager {
    /// Starts the OAuth flow of remote server `name` without waiting for the browser.
    /// [`McpError::UnknownServer`] / [`McpError::OAuthUnsupported`] when it cannot apply.
    pub async fn start_auth(&self, name: &str) -> Result<AuthStart, McpError> {
        let (target, store) = self.oauth_target(name)?;
        let started = oauth::start(&target, &store).await;
        match self.note_registration(name, started)? {
            Started::NotRequired => {
                self.inner.forget_pending(name);
                Ok(AuthStart { authorization_url: String::new(), oauth_state: String::new() })
            }
            Started::Pending(pending) => {
                let start = AuthStart {
                    authorization_url: pending.authorization_url.clone(),
                    oauth_state: pending.state.clone(),
                };
                crate::manager::lock(&self.inner.pending).insert(name.to_owned(), *pending);
                Ok(start)
            }
        }
    }

    /// Finishes the flow [`McpManager::start_auth`] started for `name` with the authorization
    /// `code`: tokens are exchanged and stored, then the server connects with them. Returns its
    /// status after the connect.
    pub async fn finish_auth(&self, name: &str, code: &str) -> Result<ServerStatus, McpError> {
        let (_target, store) = self.oauth_target(name)?;
        let pending = crate::manager::lock(&self.inner.pending).remove(name).ok_or_else(|| {
            McpError::Auth(format!("no sign-in of {name} is in progress; start one with POST /mcp/{name}/auth"))
        })?;
        pending.finish(code, &store).await?;
        self.connect(name).await
    }

    /// Runs the whole flow for `name`: the authorization URL is announced as
    /// [`McpEvent::BrowserOpenFailed`] (no browser is opened here), the loopback callback is awaited
    /// within `timeout`, tokens are stored and the server connects. Returns its status.
    pub async fn authenticate(&self, name: &str, timeout: Duration) -> Result<ServerStatus, McpError> {
        let (target, store) = self.oauth_target(name)?;
        self.inner.forget_pending(name);
        let events = self.inner.events.clone();
        let authorized = oauth::authorize(&target, &store, timeout, |url| {
            tracing::info!(server = %name, %url, "waiting for the MCP sign-in in a browser");
            let _receivers = events.send(McpEvent::BrowserOpenFailed { server: name.to_owned(), url: url.to_owned() });
        })
        .await;
        match self.note_registration(name, authorized) {
            Ok(_) => self.connect(name).await,
            Err(McpError::NeedsClientRegistration) => Ok(self.status(name).unwrap_or(ServerStatus::NeedsAuth)),
            Err(err) => Err(err),
        }
    }

    /// Passes `outcome` on; an authorization server without dynamic registration (and no
    /// `clientId`) also becomes the server's status, `needs_client_registration`, as in OpenCode.
    fn note_registration<T>(&self, name: &str, outcome: Result<T, McpError>) -> Result<T, McpError> {
        if let Err(err @ McpError::NeedsClientRegistration) = &outcome {
            let error = format!("{err}; {}", err.hint());
            self.inner.set_status(name, ServerStatus::NeedsClientRegistration { error });
        }
        outcome
    }

    /// Removes server `name`'s stored OAuth credentials (and any sign-in in progress); `true` when
    /// there were some. The current connection stays until it is reconnected.
    pub fn remove_auth(&self, name: &str) -> Result<bool, McpError> {
        if !self.contains(name) {
            return Err(McpError::UnknownServer { name: name.to_owned() });
        }
        self.inner.forget_pending(name);
        match self.auth_store() {
            Some(store) => store.remove(name),
            None => Ok(false),
        }
    }

    /// The OAuth target of `name` and the store its tokens go to.
    fn oauth_target(&self, name: &str) -> Result<(OAuthTarget, McpAuthStore), McpError> {
        let entry = self.entry(name).ok_or_else(|| McpError::UnknownServer { name: name.to_owned() })?;
        let target = OAuthTarget::from_config(name, &entry)?;
        let store = self
            .auth_store()
            .cloned()
            .ok_or_else(|| McpError::Auth("this server keeps no MCP credentials (no mcp-auth.json)".into()))?;
        Ok((target, store))
    }
}
