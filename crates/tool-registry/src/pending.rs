//! Pending requests to the user: permission asks and questions, answered `once`, `always`,
//! `reject` (optionally with feedback) or with answers.
//!
//! A request records the effective agent of the provider turn that issued the call, and the ruleset
//! it is evaluated under stays that agent's until it settles: a later agent switch never changes it.
//! Durability is a seam: [`PendingStore`] is implemented by the session store (a row per request);
//! [`MemoryPendingStore`] serves tests and embedders without a database.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::RwLock;

use indexmap::IndexMap;
use opencode_config::PermissionAction;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::error::PermissionFailure;
use crate::error::ToolError;
use crate::permission::Rule;
use crate::permission::Ruleset;
use crate::permission_hook::PermissionHook;
use crate::permission_hook::PermissionQuery;
use opencode_config::id::IdKind;

/// What a tool asks permission for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionAsk {
    /// The permission key (`edit`, `bash`, `external_directory`, ...).
    pub permission: String,
    /// What is being done, matched against rule patterns (a path, a command).
    pub patterns: Vec<String>,
    /// The patterns an `always` reply approves for the rest of this instance.
    pub always: Vec<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// The tool call a request belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef {
    pub message_id: String,
    pub call_id: String,
}

/// One question of the `question` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Question {
    /// The full question.
    pub question: String,
    /// A very short label (at most 30 characters).
    pub header: String,
    /// The choices.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiple: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    /// One to five words.
    pub label: String,
    pub description: String,
}

/// What the user is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PendingKind {
    Permission(PermissionAsk),
    Question { questions: Vec<Question> },
}

/// A durable pending request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRequest {
    pub id: String,
    pub session_id: String,
    /// The effective agent of the provider turn that issued the call.
    pub agent: String,
    pub kind: PendingKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolRef>,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Once,
    Always,
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    Answer {
        answers: Vec<Vec<String>>,
    },
}

/// Published when a request is asked or settled.
#[derive(Debug, Clone, PartialEq)]
pub enum PendingEvent {
    Asked(PendingRequest),
    Replied { id: String, session_id: String, reply: Reply },
}

/// Durable storage of pending requests. Implementations must make `insert` durable before returning.
pub trait PendingStore: Send + Sync {
    fn insert(&self, request: &PendingRequest) -> Result<(), String>;
    /// Records the reply; the request is no longer pending.
    fn resolve(&self, id: &str, reply: &Reply) -> Result<(), String>;
    /// Requests still pending, oldest first, for one session or all.
    fn pending(&self, session_id: Option<&str>) -> Vec<PendingRequest>;
    /// The `always` approvals saved earlier in `scope` (a project), oldest first: loaded once, when
    /// [`Permissions::scoped`] first opens the scope. Saving them is the store's part of recording an
    /// `always` reply.
    fn approvals(&self, _scope: &str) -> Vec<Rule> {
        Vec::new()
    }
}

/// In-memory [`PendingStore`].
#[derive(Debug, Default)]
pub struct MemoryPendingStore {
    requests: Mutex<IndexMap<String, PendingRequest>>,
}

/// A reply that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("no pending request `{0}`")]
    NotFound(String),
    #[error("cannot record the reply to `{id}`: {reason}")]
    Store { id: String, reason: String },
}

impl ReplyError {
    pub fn hint(&self) -> &'static str {
        match self {
            Self::NotFound(_) => "the request was already answered or its call ended; list pending requests again",
            Self::Store { .. } => "check the session database",
        }
    }
}

/// The permission and question service: pending requests, replies, and the rules `always` replies
/// added. One service can hand out [`Permissions::scoped`] views (one per project) that share its
/// pending requests, replies and events but keep their own approvals, so that what was approved in
/// one project never applies in another.
pub struct Permissions {
    hub: Arc<Hub>,
    /// Rules added by `always` replies in this scope; evaluated after every agent's ruleset.
    approved: Approved,
}

/// What every view of one service shares.
struct Hub {
    store: Arc<dyn PendingStore>,
    waiting: Mutex<HashMap<String, Waiter>>,
    events: broadcast::Sender<PendingEvent>,
    /// The approvals of each scope opened so far (loaded from the store once).
    scopes: Mutex<HashMap<String, Approved>>,
    /// Decides what the rules leave at `ask` before the user is asked (`permission.ask`).
    hook: RwLock<Option<Arc<dyn PermissionHook>>>,
}

type Approved = Arc<Mutex<Ruleset>>;

struct Waiter {
    request: PendingRequest,
    ruleset: Ruleset,
    /// The approvals of the view that asked: an `always` reply adds to them.
    approved: Approved,
    reply: oneshot::Sender<Reply>,
}

impl std::fmt::Debug for Permissions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permissions").field("approved", &*lock(&self.approved)).finish_non_exhaustive()
    }
}

impl Permissions {
    pub fn new(store: Arc<dyn PendingStore>) -> Self {
        let (events, _) = broadcast::channel(256);
        let hub = Hub {
            store,
            waiting: Mutex::new(HashMap::new()),
            events,
            scopes: Mutex::new(HashMap::new()),
            hook: RwLock::new(None),
        };
        Self { hub: Arc::new(hub), approved: Approved::default() }
    }

    /// The view of this service for `scope` (a project id): the same pending requests, replies and
    /// events, with the scope's own approvals, loaded from the store the first time the scope is
    /// opened and shared by every later view of it.
    pub fn scoped(&self, scope: &str) -> Arc<Permissions> {
        let mut scopes = lock(&self.hub.scopes);
        let approved = scopes
            .entry(scope.to_owned())
            .or_insert_with(|| Arc::new(Mutex::new(Ruleset(self.hub.store.approvals(scope)))))
            .clone();
        Arc::new(Self { hub: Arc::clone(&self.hub), approved })
    }

    /// The rules `always` replies approved in this view's scope, oldest first.
    pub fn approved(&self) -> Ruleset {
        lock(&self.approved).clone()
    }

    /// Installs the `permission.ask` hook (replacing any earlier one) on every view of this service:
    /// from now on it decides the requests the rules leave at `ask`, before the user is asked.
    pub fn set_hook(&self, hook: Arc<dyn PermissionHook>) {
        *self.hub.hook.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(hook);
    }

    pub fn in_memory() -> Self {
        Self::new(Arc::new(MemoryPendingStore::default()))
    }

    pub fn subscribe(&self) -> broadcast::Receiver<PendingEvent> {
        self.hub.events.subscribe()
    }

    /// What the rules say about `ask` for an agent, without asking anyone: deny if any pattern is
    /// denied, allow if all are allowed, else ask.
    pub fn evaluate(&self, ruleset: &Ruleset, ask: &PermissionAsk) -> PermissionAction {
        let approved = lock(&self.approved);
        evaluate_all(ruleset, &approved, ask)
    }

    /// Checks a permission for a call issued under `agent`; waits for the user when the rules say ask.
    pub async fn ask(
        &self,
        session_id: &str,
        agent: &Agent,
        tool: Option<ToolRef>,
        ask: PermissionAsk,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        match self.evaluate(&agent.permission, &ask) {
            PermissionAction::Allow => return Ok(()),
            PermissionAction::Deny => return Err(denied(&agent.permission, &ask)),
            PermissionAction::Ask => {}
        }
        let hook = self.hub.hook.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if let Some(hook) = hook {
            let query = PermissionQuery { session_id, agent: &agent.name, tool: tool.as_ref(), ask: &ask };
            match hook.decide(query).await {
                PermissionAction::Allow => return Ok(()),
                PermissionAction::Deny => return Err(denied_by_hook()),
                PermissionAction::Ask => {}
            }
        }
        let kind = PendingKind::Permission(ask);
        match self.wait(session_id, agent, tool, kind, cancel).await? {
            Reply::Once | Reply::Always | Reply::Answer { .. } => Ok(()),
            Reply::Reject { message } => Err(rejected(message)),
        }
    }

    /// Asks the user questions; returns one list of chosen labels per question.
    pub async fn question(
        &self,
        session_id: &str,
        agent: &Agent,
        tool: Option<ToolRef>,
        questions: Vec<Question>,
        cancel: &CancellationToken,
    ) -> Result<Vec<Vec<String>>, ToolError> {
        match self.wait(session_id, agent, tool, PendingKind::Question { questions }, cancel).await? {
            Reply::Answer { answers } => Ok(answers),
            Reply::Reject { .. } => Err(ToolError::Permission {
                message: "The user dismissed this question".to_owned(),
                kind: PermissionFailure::Rejected,
            }),
            Reply::Once | Reply::Always => Ok(Vec::new()),
        }
    }

    /// Pending requests, oldest first.
    pub fn pending(&self, session_id: Option<&str>) -> Vec<PendingRequest> {
        self.hub.store.pending(session_id)
    }

    /// Applies the user's reply (through any view: the request knows the view that asked). `always`
    /// approves the request's `always` patterns in the asking view's scope and settles other pending
    /// requests of the session that the rules now allow; `reject` also rejects the session's other
    /// pending requests.
    pub fn reply(&self, id: &str, reply: Reply) -> Result<(), ReplyError> {
        let waiter = lock(&self.hub.waiting).remove(id);
        let Some(waiter) = waiter else {
            // A durable request whose call is gone (e.g. after a restart): record the reply only.
            if self.hub.store.pending(None).iter().any(|request| request.id == id) {
                return self.settle_stored(id, &reply);
            }
            return Err(ReplyError::NotFound(id.to_owned()));
        };
        let session_id = waiter.request.session_id.clone();
        if reply == Reply::Always
            && let PendingKind::Permission(ask) = &waiter.request.kind
        {
            let mut approved = lock(&waiter.approved);
            for pattern in &ask.always {
                approved.push(Rule::new(&ask.permission, pattern, PermissionAction::Allow));
            }
        }
        let others = self.cascade(&session_id, &reply);
        self.settle(waiter, reply)?;
        for (waiter, reply) in others {
            self.settle(waiter, reply)?;
        }
        Ok(())
    }

    fn cascade(&self, session_id: &str, reply: &Reply) -> Vec<(Waiter, Reply)> {
        let mut waiting = lock(&self.hub.waiting);
        let ids: Vec<String> = waiting
            .iter()
            .filter(|(_, waiter)| waiter.request.session_id == session_id)
            .filter(|(_, waiter)| match (reply, &waiter.request.kind) {
                (Reply::Reject { .. }, _) => true,
                (Reply::Always, PendingKind::Permission(ask)) => {
                    evaluate_all(&waiter.ruleset, &lock(&waiter.approved), ask) == PermissionAction::Allow
                }
                _ => false,
            })
            .map(|(id, _)| id.clone())
            .collect();
        let follow = match reply {
            Reply::Reject { .. } => Reply::Reject { message: None },
            _ => Reply::Once,
        };
        ids.iter().filter_map(|id| waiting.remove(id)).map(|waiter| (waiter, follow.clone())).collect()
    }

    fn settle(&self, waiter: Waiter, reply: Reply) -> Result<(), ReplyError> {
        self.settle_stored(&waiter.request.id, &reply)?;
        // The caller may have stopped waiting (interrupted); nothing else to do then.
        if waiter.reply.send(reply).is_err() {
            tracing::debug!(id = %waiter.request.id, "reply to a request nobody awaits");
        }
        Ok(())
    }

    fn settle_stored(&self, id: &str, reply: &Reply) -> Result<(), ReplyError> {
        let store = &self.hub.store;
        let session_id = store.pending(None).into_iter().find(|r| r.id == id).map(|r| r.session_id);
        store.resolve(id, reply).map_err(|reason| ReplyError::Store { id: id.to_owned(), reason })?;
        if let Some(session_id) = session_id {
            // No subscriber is fine: events are advisory.
            let _ = self.hub.events.send(PendingEvent::Replied { id: id.to_owned(), session_id, reply: reply.clone() });
        }
        Ok(())
    }

    async fn wait(
        &self,
        session_id: &str,
        agent: &Agent,
        tool: Option<ToolRef>,
        kind: PendingKind,
        cancel: &CancellationToken,
    ) -> Result<Reply, ToolError> {
        // OpenCode's ids (`per_…` for permission requests, `que_…` for questions): its clients keep
        // requests in arrays sorted by id and expect the format of its other ids.
        let kind_of_id = match kind {
            PendingKind::Permission(_) => IdKind::Permission,
            PendingKind::Question { .. } => IdKind::Question,
        };
        let request = PendingRequest {
            id: opencode_config::id::ascending(kind_of_id),
            session_id: session_id.to_owned(),
            agent: agent.name.clone(),
            kind,
            tool,
        };
        self.hub
            .store
            .insert(&request)
            .map_err(|reason| ToolError::fatal(format!("cannot record a pending request: {reason}")))?;
        let (sender, receiver) = oneshot::channel();
        let id = request.id.clone();
        let waiter = Waiter {
            request: request.clone(),
            ruleset: agent.permission.clone(),
            approved: Arc::clone(&self.approved),
            reply: sender,
        };
        lock(&self.hub.waiting).insert(id.clone(), waiter);
        let _ = self.hub.events.send(PendingEvent::Asked(request));
        tokio::select! {
            reply = receiver => reply.map_err(|_| ToolError::Interrupted),
            () = cancel.cancelled() => {
                if let Some(waiter) = lock(&self.hub.waiting).remove(&id)
                    && let Err(err) = self.hub.store.resolve(&waiter.request.id, &Reply::Reject { message: None })
                {
                    tracing::warn!(%id, %err, "cannot close an interrupted pending request");
                }
                Err(ToolError::Interrupted)
            }
        }
    }
}

impl PendingStore for MemoryPendingStore {
    fn insert(&self, request: &PendingRequest) -> Result<(), String> {
        lock(&self.requests).insert(request.id.clone(), request.clone());
        Ok(())
    }

    fn resolve(&self, id: &str, _reply: &Reply) -> Result<(), String> {
        lock(&self.requests).shift_remove(id);
        Ok(())
    }

    fn pending(&self, session_id: Option<&str>) -> Vec<PendingRequest> {
        lock(&self.requests)
            .values()
            .filter(|request| session_id.is_none_or(|id| request.session_id == id))
            .cloned()
            .collect()
    }
}

fn evaluate_all(ruleset: &Ruleset, approved: &Ruleset, ask: &PermissionAsk) -> PermissionAction {
    let mut all_allowed = true;
    for pattern in &ask.patterns {
        let action = approved
            .last_match(&ask.permission, pattern)
            .or_else(|| ruleset.last_match(&ask.permission, pattern))
            .map_or(PermissionAction::Ask, |rule| rule.action);
        match action {
            PermissionAction::Deny => return PermissionAction::Deny,
            PermissionAction::Ask => all_allowed = false,
            PermissionAction::Allow => {}
        }
    }
    if all_allowed { PermissionAction::Allow } else { PermissionAction::Ask }
}

fn denied(ruleset: &Ruleset, ask: &PermissionAsk) -> ToolError {
    let relevant: Vec<String> = ruleset
        .0
        .iter()
        .filter(|rule| crate::permission::wildcard(&ask.permission, &rule.permission))
        .map(|rule| format!("{} {} {:?}", rule.permission, rule.pattern, rule.action).to_lowercase())
        .collect();
    ToolError::Permission {
        message: format!(
            "The user has specified a rule which prevents you from using this specific tool call. \
             Here are some of the relevant rules: {}",
            relevant.join("; ")
        ),
        kind: PermissionFailure::Denied,
    }
}

fn denied_by_hook() -> ToolError {
    ToolError::Permission {
        message: "A plugin denied permission to use this specific tool call.".to_owned(),
        kind: PermissionFailure::Denied,
    }
}

fn rejected(message: Option<String>) -> ToolError {
    match message.filter(|message| !message.trim().is_empty()) {
        Some(feedback) => ToolError::Permission {
            message: format!(
                "The user rejected permission to use this specific tool call with the following feedback: {feedback}"
            ),
            kind: PermissionFailure::Corrected,
        },
        None => ToolError::Permission {
            message: "The user rejected permission to use this specific tool call.".to_owned(),
            kind: PermissionFailure::Rejected,
        },
    }
}

/// Locks, recovering from a poisoned lock (the data is a plain map; a panic elsewhere leaves it valid).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
