//! The transform pass and the operations around it (historian runs, agent tools, status, flush),
//! over one `context.db`. Synchronous: callers on async threads run it on a blocking thread.
//!
//! A pass either **defers** (replays every committed decision, so all bytes before the new tail
//! are exactly those of the previous request) or **executes** (commits queued and heuristic drops,
//! moves the compartment boundary, re-renders m[1] or folds m[0]). It executes only when that is
//! free or forced: the provider cache is already dead (first render, model switch, idle past the
//! cache lifetime, history rewritten under us), `/ctx-flush` asked, or usage crossed the execute
//! threshold at a turn start (or the 85% force line anywhere).
//!
//! The cache has two lifetimes: m[0]'s breakpoint (and the system prompt and tools before it)
//! asks for the baseline lifetime (an hour by default), everything after it for the provider's
//! default (five minutes). After a pause between the two, only what follows m[0] is dead: the
//! pass executes SOFT for free and keeps m[0], whose prefix is still cached.

use std::collections::HashMap;
use std::collections::HashSet;
use std::hash::DefaultHasher;
use std::hash::Hash;
use std::hash::Hasher;

use opencode_llm::CacheHint;
use opencode_llm::ContentPart;
use opencode_llm::Message;
use opencode_llm::Role;
use opencode_llm::ToolResultValue;

use crate::compressor;
use crate::config::BLOCK_PERCENTAGE;
use crate::config::FORCE_PERCENTAGE;
use crate::config::MagicContextConfig;
use crate::error::Error;
use crate::error::Result;
use crate::historian;
use crate::render;
use crate::state::MessageMark;
use crate::state::SessionState;
use crate::state::Tag;
use crate::state::TagKind;
use crate::store::DecisionRow;
use crate::store::RawRow;
use crate::store::SearchHit;
use crate::store::Store;

/// Tokens a message costs beyond its parts (role, framing).
const MESSAGE_OVERHEAD: u64 = 4;
/// Nudges start this many percentage points below the execute threshold.
pub const NUDGE_BAND: f64 = 10.0;
/// Tokens of growth between two nudges.
pub const NUDGE_INTERVAL: u64 = 10_000;
/// Percent of the window a reclaiming pass brings usage down to.
const RECLAIM_TARGET: u64 = 40;
/// Usage (percent) from which a pass that busts for free (dead cache, flush) also reclaims.
const RECLAIM_WHEN_FREE: f64 = 50.0;

/// How much of the provider's cache is already gone when a pass starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expired {
    /// Everything, m[0] included (`first_render`, `history_rewritten`, `model_switch`,
    /// `ttl_expired`): a HARD fold costs nothing extra.
    All(&'static str),
    /// What follows m[0] (`tail_expired`: idle past the default lifetime, within the baseline's):
    /// a SOFT pass costs nothing extra, a HARD one would.
    AfterBaseline,
}

impl Expired {
    fn reason(self) -> &'static str {
        match self {
            Self::All(reason) => reason,
            Self::AfterBaseline => "tail_expired",
        }
    }
}

/// Who is asking for a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassInput {
    pub session_id: String,
    /// The project directory (memories are per project).
    pub project: String,
    /// `provider/model`.
    pub model_key: String,
    /// Now, in milliseconds (wall clock, or a simulated one).
    pub now_ms: u64,
    /// The usable window of the model in tokens, when the host knows it; otherwise the
    /// configured `context_limit`.
    pub window: Option<u64>,
}

/// What a pass decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Replayed committed state only.
    Defer,
    /// Committed pending work.
    Execute,
}

/// Which history slot a pass re-rendered (the bust taxonomy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Materialized {
    /// SOFT+: both slots replayed byte-identical.
    None,
    /// SOFT: m[1] re-rendered, m[0] byte-identical.
    Soft,
    /// HARD: m[0] folded (the cache was already dead, or m[0]'s content truly changed).
    Hard,
}

impl Materialized {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Soft => "soft",
            Self::Hard => "hard",
        }
    }
}

/// The outcome of one pass, for callers and for bust attribution.
#[derive(Debug, Clone, PartialEq)]
pub struct PassReport {
    pub decision: Decision,
    pub materialized: Materialized,
    /// Why the pass executed (`ttl_expired`, `tail_expired`, `model_switch`, `first_render`,
    /// `history_rewritten`, `flush`, `pressure`, `emergency`) or, for a HARD fold on a live cache, why m[0] changed.
    /// Empty on a defer pass.
    pub reason: String,
    /// Estimated prompt tokens of the transformed messages (plus the configured overhead).
    pub usage_tokens: u64,
    pub dropped_now: usize,
    /// The historian has enough eligible history to run (out of band).
    pub historian_due: bool,
    /// Usage is past the block line: the caller should wait for the historian and pass again.
    pub block: bool,
}

/// `/ctx-status`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub usage_tokens: u64,
    pub usage_percentage: f64,
    pub tags: usize,
    pub dropped: usize,
    pub pending: usize,
    pub compartments: usize,
    pub boundary: usize,
    pub m0_tokens: u64,
    pub m1_tokens: u64,
    /// When the session's last request was sent, and how long the provider keeps its cache:
    /// the tail after m[0], and m[0] with what precedes it.
    pub last_request_ms: Option<u64>,
    pub ttl_ms: u64,
    pub baseline_ttl_ms: u64,
    /// The latest executing pass: (pass, slot re-rendered `none`/`soft`/`hard`, its cause).
    pub last_execute: Option<(u64, String, String)>,
    /// Calls made on the small model for this session.
    pub side_calls: crate::store::SideTotals,
}

impl Status {
    /// `/ctx-status` at `now_ms`: the figures, one per line, with whether the cache is warm.
    pub fn report(&self, now_ms: u64) -> String {
        self.lines(Some(self.cache_state(now_ms))).join("\n")
    }

    /// The figures, one per line after the first (`- ` items), the cache line when given.
    fn lines(&self, cache: Option<String>) -> Vec<String> {
        let mut lines = vec![
            format!("context {} tokens ({:.1}% of the window)", self.usage_tokens, self.usage_percentage),
            format!("- tags: {} ({} dropped, {} queued)", self.tags, self.dropped, self.pending),
            format!(
                "- history: {} compartments covering {} messages; m[0] {} tokens, m[1] {} tokens",
                self.compartments, self.boundary, self.m0_tokens, self.m1_tokens
            ),
        ];
        lines.extend(cache.map(|cache| format!("- {cache}")));
        lines.push(format!("- {}", self.last_rewrite()));
        let side = self.side_calls;
        if side.calls > 0 {
            lines.push(format!(
                "- {} small-model call(s) ({} tokens in, {} out, ${:.4})",
                side.calls, side.input_tokens, side.output_tokens, side.cost
            ));
        }
        lines
    }

    /// Whether the provider's prompt cache is still warm at `now_ms` (the TTL not yet past since
    /// the last request).
    fn cache_state(&self, now_ms: u64) -> String {
        match self.last_request_ms {
            None => "cache: no request sent yet".to_owned(),
            Some(last) => {
                let idle = now_ms.saturating_sub(last);
                let verdict = if idle > self.baseline_ttl_ms {
                    "expired"
                } else if idle > self.ttl_ms {
                    "warm up to m[0] only"
                } else {
                    "warm"
                };
                let (ttl, baseline) = (self.ttl_ms / 1000, self.baseline_ttl_ms / 1000);
                format!("cache: {verdict} (last request {} s ago, TTL {ttl} s, m[0] {baseline} s)", idle / 1000)
            }
        }
    }

    /// The latest prompt rewrite and its cause.
    fn last_rewrite(&self) -> String {
        match &self.last_execute {
            None => "no executing pass yet".to_owned(),
            Some((pass, slot, reason)) => {
                let kind = match slot.as_str() {
                    "hard" => "HARD (m[0] folded)",
                    "soft" => "SOFT (m[1] re-rendered)",
                    _ => "SOFT+ (slots replayed, drops committed)",
                };
                format!("last executing pass #{pass}: {kind}, cause {reason}")
            }
        }
    }
}

/// The figures without the cache line (which needs the time).
impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.lines(None).join("\n"))
    }
}

/// A historian run's input: raw rows `[start, end)` of a session, the next sequence number, and
/// the project's memories (so the model does not repeat known facts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorianJob {
    pub session_id: String,
    pub project: String,
    pub start: usize,
    pub end: usize,
    /// (ordinal, role, stored text).
    pub rows: Vec<(usize, String, String)>,
    pub next_sequence: u32,
    pub memories: Vec<crate::store::Memory>,
}

/// Magic Context over one database.
pub struct Engine {
    config: MagicContextConfig,
    store: Store,
    sessions: HashMap<String, SessionState>,
    /// Per session, the usage at the last nudge (nudges are rate-limited by growth).
    nudged: HashMap<String, u64>,
}

impl Engine {
    pub fn new(config: MagicContextConfig, store: Store) -> Self {
        Self { config, store, sessions: HashMap::new(), nudged: HashMap::new() }
    }

    /// A reminder to append to a tool's output (it is stored with the output, so it replays for
    /// free): when usage is within [`NUDGE_BAND`] points of the execute threshold or past it, at
    /// most once per [`NUDGE_INTERVAL`] tokens of growth, naming the largest old tool outputs the
    /// agent could drop with `ctx_reduce`.
    pub fn nudge(&mut self, session_id: &str) -> Result<Option<String>> {
        if !self.config.ctx_reduce_enabled {
            return Ok(None);
        }
        let Some(state) = self.state(session_id)? else { return Ok(None) };
        let usage = state.meta.last_usage_tokens;
        let percentage = self.percentage(&state, usage);
        let near = percentage + NUDGE_BAND >= f64::from(self.config.execute_threshold_percentage);
        let last = self.nudged.get(session_id).copied();
        if !near || last.is_some_and(|last| usage < last + NUDGE_INTERVAL) {
            return Ok(None);
        }
        let protected_from = self.protected_from(&state);
        let mut candidates: Vec<(u32, &Tag)> = state
            .tags
            .iter()
            .enumerate()
            .map(|(index, tag)| (index as u32 + 1, tag))
            .filter(|(number, tag)| {
                tag.kind == TagKind::Tool
                    && !tag.dropped
                    && *number < protected_from
                    && tag.ordinal >= state.meta.boundary
            })
            .collect();
        candidates.sort_by(|a, b| b.1.tokens.cmp(&a.1.tokens).then(a.0.cmp(&b.0)));
        let named: Vec<String> = candidates
            .iter()
            .take(5)
            .map(|(number, tag)| format!("§{number}§ {} ({} tokens)", tag.tool, tag.tokens))
            .collect();
        if named.is_empty() {
            return Ok(None);
        }
        self.nudged.insert(session_id.to_owned(), usage);
        Ok(Some(format!(
            "<system-reminder>Context is at {percentage:.0}% of the window. Older tool outputs you may no longer need: {}. \
             If you have acted on them, drop them with ctx_reduce (they stay reachable with ctx_search).</system-reminder>",
            named.join(", ")
        )))
    }

    pub fn config(&self) -> &MagicContextConfig {
        &self.config
    }

    /// One transform pass over the projected history (the host's messages, untransformed). On
    /// error the messages are left as they were and nothing is persisted.
    pub fn transform(&mut self, input: &PassInput, messages: &mut Vec<Message>) -> Result<PassReport> {
        let mut state = self.take_state(input)?;
        let outcome = self.pass(&mut state, input, messages);
        if outcome.is_ok() {
            self.sessions.insert(input.session_id.clone(), state);
        }
        outcome
    }

    /// Forgets cached state (the next pass reloads from the database, as after a restart).
    pub fn forget(&mut self) {
        self.sessions.clear();
    }

    fn take_state(&mut self, input: &PassInput) -> Result<SessionState> {
        if let Some(state) = self.sessions.remove(&input.session_id) {
            return Ok(state);
        }
        let loaded = self.store.load_session(&input.session_id)?;
        Ok(loaded.unwrap_or_else(|| SessionState::new(&input.session_id, &input.project)))
    }

    fn pass(&mut self, state: &mut SessionState, input: &PassInput, messages: &mut Vec<Message>) -> Result<PassReport> {
        let first = state.meta.passes == 0;
        state.meta.window = input.window.unwrap_or(0);
        let covered = self.store.compartments_end(&state.session_id)?;
        let change = sync_history(state, messages, covered);
        let rewritten = change == HistoryChange::Rewritten;
        let truncated = match change {
            HistoryChange::Tail(ordinal) => Some((ordinal, state.tags.len())),
            HistoryChange::Appended | HistoryChange::Rewritten => None,
        };
        let new_from = state.marks.len();
        let tags_from = state.tags.len();
        let raw = tag_new(state, messages, new_from);
        let expired = self.expired(state, input, first, rewritten);
        let flush = state.meta.flush_pending;
        let usage = self.usage(state);
        let percentage = self.percentage(state, usage);
        let at_turn_start = messages.last().is_some_and(|message| message.role == Role::User);
        let reason = execute_reason(
            expired.map(Expired::reason),
            flush,
            percentage,
            self.config.execute_threshold_percentage,
            at_turn_start,
        );
        let mut report = PassReport {
            decision: Decision::Defer,
            materialized: Materialized::None,
            reason: String::new(),
            usage_tokens: usage,
            dropped_now: 0,
            historian_due: false,
            block: false,
        };
        let mut newly_dropped = Vec::new();
        if let Some(reason) = reason {
            let (materialized, why, dropped) = self.execute(state, reason, expired, rewritten)?;
            (report.decision, report.materialized, report.reason) = (Decision::Execute, materialized, why);
            report.dropped_now = dropped.len();
            newly_dropped = dropped;
        }
        state.meta.model_key = input.model_key.clone();
        state.meta.last_request_ms = Some(input.now_ms);
        state.meta.passes += 1;
        report.usage_tokens = self.usage(state);
        state.meta.last_usage_tokens = report.usage_tokens;
        let decision = DecisionRow {
            pass: state.meta.passes,
            decision: if report.decision == Decision::Execute { "execute" } else { "defer" },
            materialized: report.materialized.as_str(),
            reason: &report.reason,
            usage_tokens: report.usage_tokens,
            dropped_count: report.dropped_now,
            at_ms: input.now_ms,
        };
        self.store.save_pass(state, &raw, truncated, tags_from, &newly_dropped, &decision)?;
        report.historian_due = self.historian_due(state, percentage)?;
        report.block = self.percentage(state, report.usage_tokens) >= BLOCK_PERCENTAGE && report.historian_due;
        let baseline_ttl = (self.config.baseline_cache_ttl_seconds > self.config.cache_ttl_seconds)
            .then(|| u32::try_from(self.config.baseline_cache_ttl_seconds).unwrap_or(u32::MAX));
        render_messages(state, messages, self.config.ctx_reduce_enabled, baseline_ttl);
        Ok(report)
    }

    /// An executing pass: commits drops, re-renders the slots, and reclaims when under pressure or
    /// when the bust is free anyway and usage is high. Returns what was re-rendered, the
    /// attributed reason and the newly dropped tags.
    ///
    /// When the cache is already gone the rewrite costs the same however the history is laid
    /// out, so the eligible raw history is folded into compartments first (the historian's
    /// digest: deterministic, no model call): this request and the ones after it carry less.
    fn execute(
        &mut self,
        state: &mut SessionState,
        reason: &str,
        expired: Option<Expired>,
        rewritten: bool,
    ) -> Result<(Materialized, String, Vec<u32>)> {
        let mut dropped = self.commit_drops(state);
        if expired.is_some() && !rewritten {
            self.fold_eligible(state)?;
        }
        let dead = matches!(expired, Some(Expired::All(_)));
        let (materialized, live_fold) = self.materialize(state, dead, rewritten)?;
        let pressed = reason == "pressure" || reason == "emergency";
        if pressed || self.percentage(state, self.usage(state)) >= RECLAIM_WHEN_FREE {
            dropped.extend(self.reclaim(state));
            dropped.sort_unstable();
        }
        state.meta.flush_pending = false;
        let why = match live_fold {
            Some(fold) => format!("{reason}+{fold}"),
            None => reason.to_owned(),
        };
        Ok((materialized, why, dropped))
    }

    /// How much of the provider's cache is already gone, if any: executing that far costs
    /// nothing extra.
    fn expired(&self, state: &SessionState, input: &PassInput, first: bool, rewritten: bool) -> Option<Expired> {
        if first {
            return Some(Expired::All("first_render"));
        }
        if rewritten {
            return Some(Expired::All("history_rewritten"));
        }
        if state.meta.model_key != input.model_key {
            return Some(Expired::All("model_switch"));
        }
        let idle = input.now_ms.saturating_sub(state.meta.last_request_ms?);
        if idle > self.config.ttl_ms().max(self.config.baseline_ttl_ms()) {
            Some(Expired::All("ttl_expired"))
        } else {
            (idle > self.config.ttl_ms()).then_some(Expired::AfterBaseline)
        }
    }

    /// Digests the history the historian may summarise now into compartments, in the pass.
    fn fold_eligible(&mut self, state: &SessionState) -> Result<()> {
        let Some(job) = self.job_for(state)? else { return Ok(()) };
        let compartments = historian::digest(&job.rows, job.next_sequence);
        let at_ms = state.meta.last_request_ms.unwrap_or_default();
        self.store.publish_compartments(&job.session_id, &compartments, &[], &job.project, at_ms)
    }

    /// Estimated tokens of what the next request carries: overhead, both slots, the raw tail
    /// with committed drops replayed.
    fn usage(&self, state: &SessionState) -> u64 {
        let boundary = state.meta.boundary.min(state.marks.len());
        let tail: u64 = state.marks[boundary..].iter().map(|mark| mark.tokens).sum();
        let saved: u64 = state
            .tags
            .iter()
            .enumerate()
            .filter(|(_, tag)| tag.dropped && tag.ordinal >= boundary)
            .map(|(index, tag)| tag.tokens.saturating_sub(placeholder_tokens(index as u32 + 1)))
            .sum();
        let slots = render::tokens(&state.meta.m0) + render::tokens(&state.meta.m1);
        self.config.overhead_tokens + slots + tail - saved
    }

    /// The session's window: what the host said on the last pass, else the configured one.
    fn window(&self, state: &SessionState) -> u64 {
        if state.meta.window > 0 { state.meta.window } else { self.config.context_limit }
    }

    fn percentage(&self, state: &SessionState, tokens: u64) -> f64 {
        tokens as f64 * 100.0 / self.window(state) as f64
    }

    /// Commits queued drops and the heuristic ones (old and superseded tool outputs). Protected
    /// tags (the newest ones) are never dropped; their queued drops wait.
    fn commit_drops(&mut self, state: &mut SessionState) -> Vec<u32> {
        let protected_from = self.protected_from(state);
        let mut due = std::mem::take(&mut state.pending);
        state.pending = due.split_off(&protected_from);
        let heuristic = heuristic_drops(state, protected_from, self.config.auto_drop_tool_age);
        let mut dropped = Vec::new();
        for number in due.into_iter().chain(heuristic) {
            if drop_tag(state, number) {
                dropped.push(number);
            }
        }
        dropped.sort_unstable();
        dropped
    }

    /// The first protected tag. The protected tail is the newest `protected_tags` tags, cut short
    /// once it holds the token floor (5% of the window, 2,000 to 64,000 tokens) and at least
    /// three tags, so a few huge newest outputs cannot pin a full window.
    fn protected_from(&self, state: &SessionState) -> u32 {
        let floor = (self.window(state) / 20).clamp(2_000, 64_000);
        let mut tokens = 0;
        let mut first = state.tags.len() as u32 + 1;
        for (count, tag) in state.tags.iter().rev().enumerate() {
            if count as u32 >= self.config.protected_tags || (count >= 3 && tokens >= floor) {
                break;
            }
            tokens += tag.tokens;
            first -= 1;
        }
        first
    }

    /// Drops the oldest unprotected tool outputs still sent until usage is down to the reclaim
    /// target. A pass that busts anyway reclaims well below the threshold, so the next forced
    /// bust is many turns away instead of one.
    fn reclaim(&self, state: &mut SessionState) -> Vec<u32> {
        let target = self.window(state) * RECLAIM_TARGET / 100;
        let protected_from = self.protected_from(state);
        let boundary = state.meta.boundary;
        let mut usage = self.usage(state);
        let mut dropped = Vec::new();
        for number in 1..protected_from {
            if usage <= target {
                break;
            }
            let tag = &state.tags[number as usize - 1];
            if tag.kind != TagKind::Tool || tag.ordinal < boundary {
                continue;
            }
            let saved = tag.tokens.saturating_sub(placeholder_tokens(number));
            if drop_tag(state, number) {
                usage -= saved;
                dropped.push(number);
            }
        }
        dropped
    }

    /// Re-renders the slots on an executing pass: HARD (fold m[0]) when the cache is dead anyway,
    /// when m[0]'s content truly changed (a memory was archived: `m0_changed`), or, as a pressure
    /// backstop, when m[1] outgrew half of m[0] (`m1_refold`; m[1] renders compartments in full,
    /// undecayed); otherwise SOFT (m[1] only). New compartments alone never fold m[0]. Returns
    /// why a fold on a live cache happened.
    fn materialize(
        &mut self,
        state: &mut SessionState,
        dead: bool,
        rewritten: bool,
    ) -> Result<(Materialized, Option<&'static str>)> {
        // A rewritten history invalidates the ordinals compartments cover (the save clears them).
        let compartments = if rewritten { Vec::new() } else { self.store.compartments(&state.session_id)? };
        let memories = self.store.memories(&state.project)?;
        let epoch = self.store.memory_epoch(&state.project)?;
        let notes = self.store.notes(&state.session_id)?;
        let newest_seq = compartments.last().map_or(0, |compartment| compartment.sequence);
        let newest_memory = memories.last().map_or(0, |memory| memory.id);
        let soft_m1 = {
            let new_compartments: Vec<_> =
                compartments.iter().filter(|c| c.sequence > state.meta.m0_seq).cloned().collect();
            let new_memories: Vec<_> = memories.iter().filter(|m| m.id > state.meta.m0_memory_id).cloned().collect();
            render::m1(&new_compartments, &new_memories, &notes)
        };
        let m0_changed = epoch != state.meta.memory_epoch || state.meta.m0.is_empty();
        let m1_outgrown = render::tokens(&soft_m1) > 4_000 + render::tokens(&state.meta.m0) * 50 / 100;
        let hard = dead || m0_changed || m1_outgrown;
        let live_fold = match (dead, m0_changed, m1_outgrown) {
            (true, _, _) => None,
            (false, true, _) => Some("m0_changed"),
            (false, false, true) => Some("m1_refold"),
            (false, false, false) => None,
        };
        if hard {
            let budget = (self.window(state) as f64 * self.config.history_budget_percentage) as u64;
            state.meta.m0 = render::m0(&compartments, &memories, budget);
            state.meta.m1 = render::m1(&[], &[], &notes);
            state.meta.m0_seq = newest_seq;
            state.meta.m0_memory_id = newest_memory;
            state.meta.memory_epoch = epoch;
        } else {
            state.meta.m1 = soft_m1;
        }
        state.meta.m1_seq = newest_seq;
        state.meta.m1_memory_id = newest_memory;
        let covered = compartments.last().map_or(0, |compartment| compartment.end);
        state.meta.boundary = covered.min(state.marks.len());
        Ok((if hard { Materialized::Hard } else { Materialized::Soft }, live_fold))
    }

    fn historian_due(&self, state: &SessionState, percentage: f64) -> Result<bool> {
        let covered = self.covered(state)?;
        let Some((start, end)) = historian::eligible(state, covered, self.config.protected_user_turns) else {
            return Ok(false);
        };
        let budget =
            (self.window(state) * u64::from(self.config.execute_threshold_percentage) / 2000).clamp(2_000, 50_000);
        let eligible = historian::range_tokens(state, start, end);
        Ok(eligible >= budget || (percentage >= 80.0 && eligible > 0))
    }

    fn covered(&self, state: &SessionState) -> Result<usize> {
        Ok(self.store.compartments_end(&state.session_id)?.min(state.marks.len()))
    }

    /// Runs the historian for a session if it has eligible history: digests it into compartments
    /// and publishes them; the next executing pass shows them. Returns how many it published.
    pub fn run_historian(&mut self, session_id: &str, now_ms: u64) -> Result<usize> {
        let Some(job) = self.historian_job(session_id)? else { return Ok(0) };
        let answer = historian::Answer { compartments: historian::digest(&job.rows, job.next_sequence), facts: vec![] };
        self.publish_historian(&job, &answer, now_ms)
    }

    /// What the historian may summarise now (the raw rows outside the protected tail after the
    /// last compartment), if anything.
    pub fn historian_job(&mut self, session_id: &str) -> Result<Option<HistorianJob>> {
        let Some(state) = self.state(session_id)? else { return Ok(None) };
        self.job_for(&state)
    }

    /// The historian's job in `state` (the session's state as this pass sees it).
    fn job_for(&self, state: &SessionState) -> Result<Option<HistorianJob>> {
        let Some((start, end)) = historian::eligible(state, self.covered(state)?, self.config.protected_user_turns)
        else {
            return Ok(None);
        };
        let session_id = state.session_id.clone();
        let next_sequence = self.store.next_sequence(&session_id)?;
        let rows = self.store.raw_range(&session_id, start, end)?;
        let memories = self.store.memories(&state.project)?;
        Ok(Some(HistorianJob { session_id, project: state.project.clone(), start, end, rows, next_sequence, memories }))
    }

    /// Publishes a job's compartments, and its facts as project memories, unless the job went
    /// stale while it ran (another run published first, or the host changed those messages
    /// meanwhile): then nothing. Then lets the compressor merge what is archived. Returns how
    /// many compartments it published.
    pub fn publish_historian(&mut self, job: &HistorianJob, answer: &historian::Answer, now_ms: u64) -> Result<usize> {
        if self.store.compartments_end(&job.session_id)? != job.start
            || self.store.raw_range(&job.session_id, job.start, job.end)? != job.rows
        {
            return Ok(0);
        }
        self.store.publish_compartments(&job.session_id, &answer.compartments, &answer.facts, &job.project, now_ms)?;
        self.compress(&job.session_id, now_ms)?;
        Ok(answer.compartments.len())
    }

    /// Records a call the plugin made on the small model for a session.
    pub fn record_side_call(&mut self, session_id: &str, call: &crate::store::SideCall, now_ms: u64) -> Result<()> {
        self.store.record_side_call(session_id, call, now_ms)
    }

    /// One compressor merge, when the session's archived compartments allow one.
    fn compress(&mut self, session_id: &str, now_ms: u64) -> Result<()> {
        let Some(state) = self.state(session_id)? else { return Ok(()) };
        let budget = (self.window(&state) as f64 * self.config.history_budget_percentage) as u64;
        let compartments = self.store.compartments(session_id)?;
        if let Some(merged) = compressor::plan(&compartments, budget, state.meta.m0_seq) {
            self.store.merge_compartments(session_id, &merged, now_ms)?;
        }
        Ok(())
    }

    fn state(&mut self, session_id: &str) -> Result<Option<SessionState>> {
        if let Some(state) = self.sessions.get(session_id) {
            return Ok(Some(state.clone()));
        }
        self.store.load_session(session_id)
    }

    /// `ctx_reduce`: queues drops of the given tags ("3-5,12") for the next executing pass.
    pub fn reduce(&mut self, session_id: &str, spec: &str, now_ms: u64) -> Result<String> {
        let tags = parse_ranges(spec)?;
        let Some(mut state) = self.state(session_id)? else {
            return Err(Error::Invalid("no tagged history in this session yet".into()));
        };
        let known = state.tags.len() as u32;
        if let Some(unknown) = tags.iter().find(|tag| **tag == 0 || **tag > known) {
            return Err(Error::Invalid(format!("no tag §{unknown}§ in this session (tags are 1..={known})")));
        }
        let fresh: Vec<u32> = tags
            .into_iter()
            .filter(|tag| !state.tags[*tag as usize - 1].dropped && !state.pending.contains(tag))
            .collect();
        self.store.queue_drops(session_id, &fresh, now_ms)?;
        state.pending.extend(fresh.iter().copied());
        if let Some(cached) = self.sessions.get_mut(session_id) {
            cached.pending = state.pending.clone();
        }
        Ok(format!("queued {} drop(s); they apply on the next cache-busting pass", fresh.len()))
    }

    /// `ctx_expand`: the stored raw text of messages `[start, end]`, capped at `max_chars`.
    pub fn expand(&self, session_id: &str, start: usize, end: usize, max_chars: usize) -> Result<String> {
        if end < start {
            return Err(Error::Invalid(format!("end {end} is before start {start}")));
        }
        let rows = self.store.raw_range(session_id, start, end + 1)?;
        if rows.is_empty() {
            return Err(Error::Invalid(format!("no messages {start}..={end} in this session")));
        }
        let mut out = String::new();
        for (ordinal, role, text) in rows {
            out.push_str(&format!("[{ordinal}] {role}: {}\n", text.replace('\u{1e}', "\n")));
            if out.len() > max_chars {
                let cut = (0..=max_chars).rev().find(|index| out.is_char_boundary(*index)).unwrap_or(0);
                out.truncate(cut);
                out.push_str("\n… (cut; expand a narrower range)");
                break;
            }
        }
        Ok(out)
    }

    /// `ctx_note`.
    pub fn add_note(&mut self, session_id: &str, content: &str, now_ms: u64) -> Result<i64> {
        self.store.add_note(session_id, content, now_ms)
    }

    pub fn notes(&self, session_id: &str) -> Result<Vec<(i64, String)>> {
        self.store.notes(session_id)
    }

    pub fn dismiss_note(&mut self, session_id: &str, id: i64) -> Result<bool> {
        self.store.dismiss_note(session_id, id)
    }

    /// `ctx_memory write`.
    pub fn write_memory(&mut self, project: &str, category: &str, content: &str, now_ms: u64) -> Result<(i64, bool)> {
        self.store.write_memory(project, category, content, now_ms)
    }

    /// `ctx_memory archive`.
    pub fn archive_memory(&mut self, project: &str, id: i64) -> Result<bool> {
        self.store.archive_memory(project, id)
    }

    pub fn memories(&self, project: &str) -> Result<Vec<crate::store::Memory>> {
        self.store.memories(project)
    }

    /// `ctx_search`.
    pub fn search(&self, session_id: &str, project: &str, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        self.store.search(session_id, project, query, limit)
    }

    /// `/ctx-status`.
    pub fn status(&mut self, session_id: &str) -> Result<Option<Status>> {
        let Some(state) = self.state(session_id)? else { return Ok(None) };
        let usage = state.meta.last_usage_tokens;
        Ok(Some(Status {
            usage_tokens: usage,
            usage_percentage: self.percentage(&state, usage),
            tags: state.tags.len(),
            dropped: state.tags.iter().filter(|tag| tag.dropped).count(),
            pending: state.pending.len(),
            compartments: self.store.compartments(session_id)?.len(),
            boundary: state.meta.boundary,
            m0_tokens: render::tokens(&state.meta.m0),
            m1_tokens: render::tokens(&state.meta.m1),
            last_request_ms: state.meta.last_request_ms,
            ttl_ms: self.config.ttl_ms(),
            baseline_ttl_ms: self.config.baseline_ttl_ms().max(self.config.ttl_ms()),
            last_execute: self.store.last_execute(session_id)?,
            side_calls: self.store.side_totals(session_id)?,
        }))
    }

    /// `/ctx-flush`: the next pass executes (a SOFT refresh unless the cache is dead anyway).
    pub fn flush(&mut self, session_id: &str) -> Result<bool> {
        if let Some(state) = self.sessions.get_mut(session_id) {
            state.meta.flush_pending = true;
        }
        self.store.request_flush(session_id)
    }
}

/// Why a pass executes, if it does.
fn execute_reason(
    dead: Option<&'static str>,
    flush: bool,
    percentage: f64,
    threshold: u8,
    at_turn_start: bool,
) -> Option<&'static str> {
    if let Some(reason) = dead {
        return Some(reason);
    }
    if percentage >= FORCE_PERCENTAGE {
        return Some("emergency");
    }
    if flush {
        return Some("flush");
    }
    // Mid tool loop the execute waits for the next turn start, so a multi-step turn keeps its cache.
    (percentage >= f64::from(threshold) && at_turn_start).then_some("pressure")
}

/// What changed in the host's history since the last pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HistoryChange {
    /// Only new messages at the end (or none).
    Appended,
    /// Messages from this ordinal on changed or went away, all of them still raw (a revert, a
    /// request-only message the host did not keep): they are forgotten and tagged again.
    Tail(usize),
    /// Something compartments or the slots stand for changed (the host compacted): start over.
    Rewritten,
}

/// Compares the known raw messages with the incoming ones and forgets what changed.
fn sync_history(state: &mut SessionState, messages: &[Message], covered: usize) -> HistoryChange {
    let known = state.marks.len();
    let differs = state.marks.iter().zip(messages).position(|(mark, message)| mark.fingerprint != fingerprint(message));
    let Some(first) = differs.or((messages.len() < known).then_some(messages.len())) else {
        return HistoryChange::Appended;
    };
    if first < covered.max(state.meta.boundary) {
        state.reset_history();
        return HistoryChange::Rewritten;
    }
    let kept_tags = state.marks[first].first_tag as usize - 1;
    state.marks.truncate(first);
    state.tags.truncate(kept_tags);
    state.pending.retain(|tag| (*tag as usize) <= kept_tags);
    HistoryChange::Tail(first)
}

/// Marks and tags the messages from `from` on; returns their durable rows.
fn tag_new<'a>(state: &mut SessionState, messages: &'a [Message], from: usize) -> Vec<RawRow<'a>> {
    let mut rows = Vec::new();
    for (ordinal, message) in messages.iter().enumerate().skip(from) {
        let calls = tool_inputs(messages, ordinal);
        let first_tag = state.tags.len() as u32 + 1;
        let mut tokens = MESSAGE_OVERHEAD;
        for (part, content) in message.content.iter().enumerate() {
            let size = part_tokens(content);
            tokens += size;
            if let Some(tag) = new_tag(message.role, content, ordinal, part, size, &calls) {
                state.tags.push(tag);
            }
        }
        let tag_count = state.tags.len() as u32 + 1 - first_tag;
        let user_turn = message.role == Role::User;
        state.marks.push(MessageMark { fingerprint: fingerprint(message), tokens, first_tag, tag_count, user_turn });
        rows.push(RawRow { ordinal, role: role_name(message.role), content: stored_text(message) });
    }
    rows
}

fn new_tag(
    role: Role,
    content: &ContentPart,
    ordinal: usize,
    part: usize,
    tokens: u64,
    calls: &HashMap<&str, u64>,
) -> Option<Tag> {
    match (role, content) {
        (Role::User | Role::Assistant, ContentPart::Text { .. }) => Some(Tag {
            ordinal,
            part,
            kind: TagKind::Message,
            tool: String::new(),
            dedup: None,
            tokens,
            dropped: false,
        }),
        (_, ContentPart::ToolResult { id, name, .. }) => Some(Tag {
            ordinal,
            part,
            kind: TagKind::Tool,
            tool: name.clone(),
            dedup: calls.get(id.as_str()).copied(),
            tokens,
            dropped: false,
        }),
        _ => None,
    }
}

/// For a tool-result message, each call id of the preceding assistant message with a hash of its
/// tool name and input (equal hashes are repeats of the same call).
fn tool_inputs(messages: &[Message], ordinal: usize) -> HashMap<&str, u64> {
    let mut calls = HashMap::new();
    let Some(previous) = ordinal.checked_sub(1).map(|index| &messages[index]) else { return calls };
    if messages[ordinal].role != Role::Tool || previous.role != Role::Assistant {
        return calls;
    }
    for part in &previous.content {
        if let ContentPart::ToolCall { id, name, input, .. } = part {
            let mut hasher = DefaultHasher::new();
            name.hash(&mut hasher);
            input.to_string().hash(&mut hasher);
            calls.insert(id.as_str(), hasher.finish());
        }
    }
    calls
}

/// Old tool outputs (older than `age` tags) and outputs superseded by a later identical call,
/// outside the protected tags.
fn heuristic_drops(state: &SessionState, protected_from: u32, age: u32) -> Vec<u32> {
    let newest = state.tags.len() as u32;
    let mut seen = HashSet::new();
    let mut drops = Vec::new();
    for number in (1..=newest).rev() {
        let tag = &state.tags[number as usize - 1];
        if tag.kind != TagKind::Tool || tag.dropped {
            continue;
        }
        let superseded = tag.dedup.is_some_and(|key| !seen.insert(key));
        if number < protected_from && (superseded || newest - number > age) {
            drops.push(number);
        }
    }
    drops
}

fn drop_tag(state: &mut SessionState, number: u32) -> bool {
    let Some(tag) = state.tags.get_mut(number as usize - 1) else { return false };
    let worth = tag.tokens > placeholder_tokens(number);
    if tag.dropped || !worth {
        return false;
    }
    tag.dropped = true;
    true
}

fn placeholder(number: u32) -> String {
    format!("[dropped §{number}§]")
}

fn placeholder_tokens(number: u32) -> u64 {
    render::tokens(&placeholder(number))
}

/// Replaces the raw messages by the request the provider sees: m[0], m[1], then the raw tail
/// after the boundary with tags and committed drops applied.
fn render_messages(state: &SessionState, messages: &mut Vec<Message>, tag_prefixes: bool, baseline_ttl: Option<u32>) {
    let boundary = state.meta.boundary.min(messages.len());
    messages.drain(..boundary);
    for (offset, message) in messages.iter_mut().enumerate() {
        let Some(mark) = state.marks.get(boundary + offset) else { break };
        let mut number = mark.first_tag;
        for part in &mut message.content {
            if !is_tagged(part, message.role) {
                continue;
            }
            let dropped = state.tags.get(number as usize - 1).is_some_and(|tag| tag.dropped);
            apply_tag(part, number, dropped, tag_prefixes);
            number += 1;
        }
    }
    messages.splice(0..0, [slot(&state.meta.m0, baseline_ttl), slot(&state.meta.m1, None)]);
}

/// A history slot with its breakpoint: `ttl_seconds` asks for a longer lifetime than the default.
fn slot(text: &str, ttl_seconds: Option<u32>) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentPart::Text {
            text: text.to_owned(),
            cache: Some(CacheHint { ttl_seconds }),
            provider_metadata: None,
        }],
    }
}

fn is_tagged(part: &ContentPart, role: Role) -> bool {
    matches!(
        (role, part),
        (Role::User | Role::Assistant, ContentPart::Text { .. }) | (_, ContentPart::ToolResult { .. })
    )
}

fn apply_tag(part: &mut ContentPart, number: u32, dropped: bool, prefixes: bool) {
    match part {
        ContentPart::Text { text, .. } if dropped => *text = placeholder(number),
        ContentPart::Text { text, .. } if prefixes => text.insert_str(0, &format!("§{number}§ ")),
        ContentPart::ToolResult { result, .. } if dropped => *result = ToolResultValue::Text(placeholder(number)),
        ContentPart::ToolResult { result: ToolResultValue::Text(text), .. } if prefixes => {
            text.insert_str(0, &format!("§{number}§ "));
        }
        _ => {}
    }
}

fn part_tokens(part: &ContentPart) -> u64 {
    match part {
        ContentPart::Text { text, .. } => render::tokens(text),
        ContentPart::ToolCall { name, input, .. } => render::tokens(name) + render::tokens(&input.to_string()),
        ContentPart::ToolResult { result, .. } => render::tokens(&result.to_text()),
        ContentPart::Reasoning { text, .. } => render::tokens(text),
        ContentPart::Media { .. } => 1_500,
    }
}

/// A cheap identity of a message: role, and per part its kind, length and edges (tool calls by
/// id and name: ids are unique within a history).
fn fingerprint(message: &Message) -> u64 {
    let mut hasher = DefaultHasher::new();
    role_name(message.role).hash(&mut hasher);
    for part in &message.content {
        match part {
            ContentPart::Text { text, .. } | ContentPart::Reasoning { text, .. } => hash_text(text, &mut hasher),
            ContentPart::ToolCall { id, name, .. } => (id, name).hash(&mut hasher),
            ContentPart::ToolResult { id, result: ToolResultValue::Text(text), .. } => {
                id.hash(&mut hasher);
                hash_text(text, &mut hasher);
            }
            ContentPart::ToolResult { id, result, .. } => {
                id.hash(&mut hasher);
                hash_text(&result.to_text(), &mut hasher);
            }
            ContentPart::Media { media_type, .. } => media_type.hash(&mut hasher),
        }
    }
    hasher.finish()
}

fn hash_text(text: &str, hasher: &mut DefaultHasher) {
    text.len().hash(hasher);
    edges(text).hash(hasher);
}

fn edges(text: &str) -> (&str, &str) {
    let head = (0..=text.len().min(64)).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    let tail = (text.len().saturating_sub(64)..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
    (&text[..head], &text[tail..])
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::System => "system",
    }
}

/// The text the historian, `ctx_expand` and `ctx_search` read for a message.
fn stored_text(message: &Message) -> String {
    let mut parts = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::Text { text, .. } => parts.push(text.clone()),
            ContentPart::ToolCall { name, input, .. } => parts.push(format!("TC: {name} {input}")),
            ContentPart::ToolResult { name, result, .. } => parts.push(format!("{name}: {}", result.to_text())),
            ContentPart::Media { media_type, .. } => parts.push(format!("[{media_type}]")),
            ContentPart::Reasoning { .. } => {}
        }
    }
    let separator = if message.role == Role::Tool { "\u{1e}" } else { "\n" };
    parts.join(separator)
}

/// `text` without `§N§` tags (and the space after one).
pub(crate) fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('§') {
        out.push_str(&rest[..start]);
        let after = &rest[start + '§'.len_utf8()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match after[digits..].strip_prefix('§') {
            Some(tail) if digits > 0 => rest = tail.strip_prefix(' ').unwrap_or(tail),
            _ => {
                out.push('§');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Parses "3-5,12" into tag numbers.
fn parse_ranges(spec: &str) -> Result<Vec<u32>> {
    let mut tags = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|item| !item.is_empty()) {
        let bad = || Error::Invalid(format!("cannot read `{item}`: write tags like 3-5,12"));
        let number = |text: &str| text.trim().trim_matches('§').parse::<u32>().map_err(|_| bad());
        match item.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (number(from)?, number(to)?);
                if to < from || to - from > 10_000 {
                    return Err(bad());
                }
                tags.extend(from..=to);
            }
            None => tags.push(number(item)?),
        }
    }
    if tags.is_empty() {
        return Err(Error::Invalid("no tags given: write tags like 3-5,12".into()));
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_stripped_and_other_section_signs_kept() {
        assert_eq!(strip_tags("§12§ Done. See §3§ and § 4 or §§."), "Done. See and § 4 or §§.");
        assert_eq!(strip_tags("no tags"), "no tags");
        assert_eq!(strip_tags("§7§"), "");
    }

    #[test]
    fn ranges_read_like_the_tool_description_says() {
        assert_eq!(parse_ranges("3-5, 12,§14§").unwrap(), vec![3, 4, 5, 12, 14]);
        assert_eq!(parse_ranges("x").unwrap_err().to_string(), "cannot read `x`: write tags like 3-5,12");
        assert!(parse_ranges("9-3").is_err());
        assert!(parse_ranges("").is_err());
    }

    #[test]
    fn an_execute_waits_for_the_turn_start_unless_forced() {
        assert_eq!(execute_reason(None, false, 70.0, 65, false), None);
        assert_eq!(execute_reason(None, false, 70.0, 65, true), Some("pressure"));
        assert_eq!(execute_reason(None, false, 86.0, 65, false), Some("emergency"));
        assert_eq!(execute_reason(Some("ttl_expired"), false, 10.0, 65, false), Some("ttl_expired"));
        assert_eq!(execute_reason(None, true, 10.0, 65, false), Some("flush"));
        assert_eq!(execute_reason(None, false, 10.0, 65, true), None);
    }
}
