//! The provider auth plugins as `opencode-config`'s [`CredentialRefresher`]: the session runtime
//! asks for a provider's credentials before each turn and gets them refreshed (and saved) when
//! they expire within the margin.

use std::sync::Arc;

use opencode_config::AuthStore;
use opencode_config::CredentialRefresher;
use opencode_config::Env;
use opencode_config::RefreshError;
use opencode_config::RefreshFuture;

use super::AuthProvider;
use super::now_ms;

/// Refreshes stored sign-ins with the auth plugin of their provider.
#[derive(Clone)]
pub struct AuthRefresher {
    providers: Vec<Arc<dyn AuthProvider>>,
    /// One refresh at a time: a rotated refresh token must not be spent twice by concurrent turns
    /// (the second waits, then reads the first one's saved tokens).
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl AuthRefresher {
    pub fn new(providers: Vec<Arc<dyn AuthProvider>>) -> Self {
        Self { providers, lock: Arc::default() }
    }

    /// The built-in auth plugins ([`super::builtin_plugins`]) with the endpoint overrides of `env`.
    pub fn builtin(env: &Env) -> Self {
        Self::new(super::builtin_plugins(env).iter().filter_map(|plugin| plugin.auth()).collect())
    }

    async fn refresh(
        &self,
        provider: &str,
        store: &AuthStore,
    ) -> Result<Option<opencode_config::AuthInfo>, RefreshError> {
        // One line: a token endpoint's error body may span several.
        let fail = |reason: String| RefreshError {
            provider: provider.to_owned(),
            reason: reason.split_whitespace().collect::<Vec<_>>().join(" "),
        };
        let Some(auth) = self.providers.iter().find(|auth| auth.provider() == provider) else {
            return store.get(provider).map_err(|err| fail(err.to_string()));
        };
        let _one_at_a_time = self.lock.lock().await;
        match auth.credentials(store).await {
            Ok(info) => Ok(info),
            Err(err) => {
                // A token that has not expired yet still works: use it, and try again next turn.
                let stored = store.get(provider).ok().flatten().filter(|info| !info.expires_within(0, now_ms()));
                match stored {
                    Some(info) => {
                        tracing::warn!(provider, error = %err, "refreshing the sign-in failed; using the current token");
                        Ok(Some(info))
                    }
                    None => Err(fail(err.to_string())),
                }
            }
        }
    }
}

impl std::fmt::Debug for AuthRefresher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let providers: Vec<&str> = self.providers.iter().map(|auth| auth.provider()).collect();
        f.debug_struct("AuthRefresher").field("providers", &providers).finish()
    }
}

impl CredentialRefresher for AuthRefresher {
    fn fresh<'a>(&'a self, provider: &'a str, store: &'a AuthStore) -> RefreshFuture<'a> {
        Box::pin(self.refresh(provider, store))
    }
}
