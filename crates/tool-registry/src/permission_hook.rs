//! The `permission.ask` seam: a [`PermissionHook`] decides a request the rules left at `ask`, before
//! the user is asked. The plugin host implements it; this crate knows nothing of plugins.
//!
//! The hook runs only for requests the rules would put to the user: a rule's `allow` or `deny` is
//! final, as in OpenCode (its `permission.ask` plugin hook runs where the user would be asked).

use futures_util::future::BoxFuture;
use opencode_config::PermissionAction;

use crate::pending::PermissionAsk;
use crate::pending::ToolRef;

/// Decides a permission request before the user is asked.
pub trait PermissionHook: Send + Sync {
    /// `Allow` grants the request and `Deny` refuses it without asking; `Ask` asks the user.
    fn decide<'a>(&'a self, request: PermissionQuery<'a>) -> BoxFuture<'a, PermissionAction>;
}

/// What a [`PermissionHook`] is asked about.
#[derive(Debug, Clone, Copy)]
pub struct PermissionQuery<'a> {
    pub session_id: &'a str,
    /// The effective agent of the provider turn that issued the call.
    pub agent: &'a str,
    /// The tool call asking, when a tool asks.
    pub tool: Option<&'a ToolRef>,
    pub ask: &'a PermissionAsk,
}
