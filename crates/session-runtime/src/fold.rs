//! The fold of one provider stream into parts: a pure, store-free state machine. Each [`LlmEvent`]
//! updates the attempt's parts and tells the runner what to do with them ([`Step`]): stage a part's
//! new state, publish a live delta, finish a text, or record a tool call before it runs. The runner
//! does the I/O; everything here is unit-tested without a store or a provider.

use std::collections::HashMap;

use opencode_llm::FinishReason;
use opencode_llm::LlmError;
use opencode_llm::LlmEvent;
use opencode_llm::Usage;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::PartTime;
use opencode_session_store::ToolEndTime;
use opencode_session_store::ToolStartTime;
use opencode_session_store::ToolState;
use serde_json::Value;
use serde_json::json;

use crate::events::DeltaKind;
use crate::records::new_part;
use crate::records::now_ms;
use crate::tools::ToolInvocation;

/// What one streamed attempt produced.
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    /// Output (text, reasoning or a tool call) began: the attempt can no longer be retried.
    pub(crate) output_started: bool,
    pub(crate) local_calls: usize,
    /// The user declined one of the calls: no further provider turn (OpenCode halts the loop too).
    pub(crate) declined: bool,
    pub(crate) usage: Option<Usage>,
    pub(crate) finish: Option<FinishReason>,
    pub(crate) error: Option<LlmError>,
    pub(crate) interrupted: bool,
}

/// What the runner does after one event.
#[derive(Debug)]
pub(crate) enum Step {
    /// Stage the part's new state (writes of one part coalesce).
    Stage(Part),
    /// Publish a live delta of the part, then stage it.
    Delta { part: Part, kind: DeltaKind, text: String },
    /// Publish a live delta of a tool call's input (not stored until the call is complete).
    InputDelta { part: Part, text: String },
    /// A text part ended: plugins may settle its text, then it is staged.
    TextEnded(Part),
    /// A tool call: its running part is written durably before anything runs it (a crash from
    /// there on fails it, never re-runs it); `call` is what to run locally (`None` when the
    /// provider executed it).
    Call { part: Part, call: Option<ToolInvocation> },
}

/// The fold of one attempt's stream.
pub(crate) struct StreamFold {
    parts: Parts,
    pub(crate) out: Streamed,
}

impl StreamFold {
    pub(crate) fn new(session_id: &str, message_id: &str) -> Self {
        Self { parts: Parts::new(session_id, message_id), out: Streamed::default() }
    }

    /// Folds one event in.
    pub(crate) fn apply(&mut self, event: LlmEvent) -> Option<Step> {
        let parts = &mut self.parts;
        match event {
            LlmEvent::StepStart { .. } | LlmEvent::ToolInputEnd { .. } => None,
            LlmEvent::TextStart { id } => Some(Step::Stage(parts.open_text(&id, false))),
            LlmEvent::ReasoningStart { id } => Some(Step::Stage(parts.open_text(&id, true))),
            LlmEvent::TextDelta { id, text } | LlmEvent::ReasoningDelta { id, text } => {
                self.out.output_started = true;
                parts.append(&id, &text).map(|(part, kind)| Step::Delta { part, kind, text })
            }
            LlmEvent::TextEnd { id, provider_metadata } => {
                let metadata = provider_metadata.map(|m| json!({"providerMetadata": m}));
                parts.close(&id, metadata).map(Step::TextEnded)
            }
            LlmEvent::ReasoningEnd { id, signature, encrypted, provider_metadata } => {
                let metadata =
                    json!({"signature": signature, "encrypted": encrypted, "providerMetadata": provider_metadata});
                parts.close(&id, Some(metadata)).map(Step::Stage)
            }
            LlmEvent::ToolInputStart { id, name } => {
                self.out.output_started = true;
                Some(Step::Stage(parts.pending_tool(&id, &name)))
            }
            LlmEvent::ToolInputDelta { id, text } => {
                parts.tool_input(&id, &text).map(|part| Step::InputDelta { part, text })
            }
            LlmEvent::ToolCall { id, name, input, provider_executed, provider_metadata } => {
                self.out.output_started = true;
                let mut metadata = serde_json::Map::new();
                if provider_executed {
                    metadata.insert("providerExecuted".into(), Value::Bool(true));
                }
                if let Some(provider_metadata) = provider_metadata {
                    metadata.insert("providerMetadata".into(), Value::Object(provider_metadata));
                }
                let metadata = (!metadata.is_empty()).then_some(Value::Object(metadata));
                let part = parts.running_tool(&id, &name, input.clone(), metadata);
                let call = (!provider_executed).then(|| ToolInvocation { call_id: id, name, input });
                self.out.local_calls += usize::from(call.is_some());
                Some(Step::Call { part, call })
            }
            LlmEvent::ToolResult { id, name: _, result } => parts.provider_result(&id, &result).map(Step::Stage),
            LlmEvent::StepFinish { usage, .. } => {
                if usage.is_some() {
                    self.out.usage = usage;
                }
                None
            }
            LlmEvent::Finish { reason, usage, .. } => {
                self.out.finish = Some(reason);
                if usage.is_some() {
                    self.out.usage = usage;
                }
                None
            }
            LlmEvent::Error { error } => {
                self.out.error = Some(error);
                None
            }
        }
    }

    /// Text and reasoning blocks the stream never closed, closed now.
    pub(crate) fn unfinished(&mut self) -> Vec<Part> {
        self.parts.unfinished()
    }

    /// Tool parts that never became a call, and provider-executed calls without a result, failed
    /// with `reason` (local calls settle in their own tasks).
    pub(crate) fn unsettled_tools(&mut self, reason: &str) -> Vec<Part> {
        self.parts.unsettled_tools(reason)
    }
}

/// The parts of one streamed attempt, by provider block id.
struct Parts {
    session_id: String,
    message_id: String,
    texts: HashMap<String, Part>,
    tools: HashMap<String, Part>,
    /// Tool call ids in arrival order (to settle leftovers deterministically).
    tool_order: Vec<String>,
}

impl Parts {
    fn new(session_id: &str, message_id: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            message_id: message_id.to_owned(),
            texts: HashMap::new(),
            tools: HashMap::new(),
            tool_order: Vec::new(),
        }
    }

    fn open_text(&mut self, id: &str, reasoning: bool) -> Part {
        let time = PartTime { start: now_ms(), end: None };
        let kind = if reasoning {
            PartKind::Reasoning { text: String::new(), metadata: None, time }
        } else {
            PartKind::Text { text: String::new(), synthetic: None, ignored: None, time: Some(time), metadata: None }
        };
        let part = new_part(&self.session_id, &self.message_id, kind);
        self.texts.insert(id.to_owned(), part.clone());
        part
    }

    fn append(&mut self, id: &str, delta: &str) -> Option<(Part, DeltaKind)> {
        if !self.texts.contains_key(id) {
            // A delta without its start (some providers skip it): open the block implicitly.
            self.open_text(id, false);
        }
        let part = self.texts.get_mut(id)?;
        let kind = match &mut part.kind {
            PartKind::Text { text, .. } => {
                text.push_str(delta);
                DeltaKind::Text
            }
            PartKind::Reasoning { text, .. } => {
                text.push_str(delta);
                DeltaKind::Reasoning
            }
            _ => return None,
        };
        Some((part.clone(), kind))
    }

    fn close(&mut self, id: &str, metadata: Option<Value>) -> Option<Part> {
        let mut part = self.texts.remove(id)?;
        let end = Some(now_ms());
        match &mut part.kind {
            PartKind::Text { time, metadata: slot, .. } => {
                if let Some(time) = time {
                    time.end = end;
                }
                *slot = metadata;
            }
            PartKind::Reasoning { time, metadata: slot, .. } => {
                time.end = end;
                *slot = metadata;
            }
            _ => {}
        }
        Some(part)
    }

    /// Text and reasoning blocks the stream never closed.
    fn unfinished(&mut self) -> Vec<Part> {
        let mut ids: Vec<String> = self.texts.keys().cloned().collect();
        ids.sort();
        ids.into_iter().filter_map(|id| self.close(&id, None)).collect()
    }

    fn pending_tool(&mut self, id: &str, name: &str) -> Part {
        let kind = PartKind::Tool {
            call_id: id.to_owned(),
            tool: name.to_owned(),
            state: ToolState::Pending { input: json!({}), raw: String::new() },
            metadata: None,
        };
        let part = new_part(&self.session_id, &self.message_id, kind);
        self.tool_order.push(id.to_owned());
        self.tools.insert(id.to_owned(), part.clone());
        part
    }

    fn tool_input(&mut self, id: &str, delta: &str) -> Option<Part> {
        let part = self.tools.get_mut(id)?;
        if let PartKind::Tool { state: ToolState::Pending { raw, .. }, .. } = &mut part.kind {
            raw.push_str(delta);
        }
        Some(part.clone())
    }

    fn running_tool(&mut self, id: &str, name: &str, input: Value, metadata: Option<Value>) -> Part {
        let state = ToolState::Running { input, title: None, metadata: None, time: ToolStartTime { start: now_ms() } };
        let kind = PartKind::Tool { call_id: id.to_owned(), tool: name.to_owned(), state, metadata };
        let part = match self.tools.get_mut(id) {
            Some(existing) => {
                existing.kind = kind;
                existing.clone()
            }
            None => {
                self.tool_order.push(id.to_owned());
                let part = new_part(&self.session_id, &self.message_id, kind);
                self.tools.insert(id.to_owned(), part.clone());
                part
            }
        };
        // Local calls settle in their own task; only provider-executed ones are tracked further here.
        part
    }

    fn provider_result(&mut self, id: &str, result: &opencode_llm::ToolResultValue) -> Option<Part> {
        let part = self.tools.get_mut(id)?;
        if let PartKind::Tool { state, metadata, .. } = &mut part.kind {
            let start = match state {
                ToolState::Running { time, .. } => time.start,
                _ => now_ms(),
            };
            let mut meta = metadata.clone().unwrap_or_else(|| json!({}));
            if let Some(map) = meta.as_object_mut() {
                map.insert("result".into(), serde_json::to_value(result).unwrap_or(Value::Null));
            }
            let time = ToolEndTime { start, end: now_ms(), compacted: None };
            *state = if result.is_error() {
                ToolState::Error { input: state.input().clone(), error: result.to_text(), metadata: None, time }
            } else {
                ToolState::Completed {
                    input: state.input().clone(),
                    output: result.to_text(),
                    title: String::new(),
                    metadata: json!({}),
                    time,
                    attachments: None,
                }
            };
            *metadata = Some(meta);
        }
        Some(part.clone())
    }

    /// Tool parts that never became a call (input started, no call) or a provider-executed call
    /// without result, failed with `reason`. Local calls settle in their own tasks.
    fn unsettled_tools(&mut self, reason: &str) -> Vec<Part> {
        let mut out = Vec::new();
        for id in &self.tool_order {
            let Some(part) = self.tools.get_mut(id) else { continue };
            let PartKind::Tool { state, metadata, .. } = &mut part.kind else { continue };
            let provider = metadata.as_ref().and_then(|m| m.get("providerExecuted")).is_some();
            let unsettled = match state {
                ToolState::Pending { .. } => true,
                ToolState::Running { .. } => provider,
                _ => false,
            };
            if unsettled {
                let start = match state {
                    ToolState::Running { time, .. } => time.start,
                    _ => now_ms(),
                };
                *state = ToolState::Error {
                    input: state.input().clone(),
                    error: reason.to_owned(),
                    metadata: None,
                    time: ToolEndTime { start, end: now_ms(), compacted: None },
                };
                out.push(part.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use opencode_llm::ToolResultValue;

    use super::*;

    fn fold_all(events: Vec<LlmEvent>) -> (StreamFold, Vec<Step>) {
        let mut fold = StreamFold::new("ses_1", "msg_1");
        let steps = events.into_iter().filter_map(|event| fold.apply(event)).collect();
        (fold, steps)
    }

    fn text_of(part: &Part) -> &str {
        match &part.kind {
            PartKind::Text { text, .. } | PartKind::Reasoning { text, .. } => text,
            other => panic!("not a text part: {other:?}"),
        }
    }

    fn state_of(part: &Part) -> &ToolState {
        match &part.kind {
            PartKind::Tool { state, .. } => state,
            other => panic!("not a tool part: {other:?}"),
        }
    }

    fn delta(id: &str, text: &str) -> LlmEvent {
        LlmEvent::TextDelta { id: id.into(), text: text.into() }
    }

    #[test]
    fn text_deltas_accumulate_into_one_part_that_ends_with_its_metadata() {
        let (fold, steps) = fold_all(vec![
            LlmEvent::TextStart { id: "t".into() },
            delta("t", "Hel"),
            delta("t", "lo"),
            LlmEvent::TextEnd { id: "t".into(), provider_metadata: None },
        ]);
        let [Step::Stage(open), Step::Delta { .. }, Step::Delta { part, kind, text }, Step::TextEnded(done)] =
            steps.as_slice()
        else {
            panic!("{steps:?}")
        };
        assert_eq!((text_of(open), text_of(part), *kind, text.as_str()), ("", "Hello", DeltaKind::Text, "lo"));
        assert_eq!((done.id.as_str(), text_of(done)), (open.id.as_str(), "Hello"));
        assert!(matches!(&done.kind, PartKind::Text { time: Some(PartTime { end: Some(_), .. }), .. }));
        assert!(fold.out.output_started);
    }

    #[test]
    fn a_delta_without_its_start_opens_the_block_and_an_unclosed_block_is_closed_at_the_end() {
        let (mut fold, steps) = fold_all(vec![delta("t", "orphan")]);
        assert!(matches!(&steps[..], [Step::Delta { part, .. }] if text_of(part) == "orphan"));
        let unfinished = fold.unfinished();
        assert_eq!(unfinished.len(), 1);
        assert_eq!(text_of(&unfinished[0]), "orphan");
        assert!(fold.unfinished().is_empty(), "closed once");
    }

    #[test]
    fn reasoning_is_its_own_part_and_starting_a_block_is_not_output() {
        let (fold, steps) =
            fold_all(vec![LlmEvent::ReasoningStart { id: "r".into() }, LlmEvent::TextStart { id: "t".into() }]);
        assert!(matches!(&steps[0], Step::Stage(part) if matches!(part.kind, PartKind::Reasoning { .. })));
        assert!(!fold.out.output_started, "an attempt that only opened blocks can still be retried");
    }

    #[test]
    fn a_local_call_is_recorded_running_and_handed_over_to_run_a_provider_call_is_not() {
        let (fold, steps) = fold_all(vec![
            LlmEvent::ToolInputStart { id: "c1".into(), name: "bash".into() },
            LlmEvent::ToolInputDelta { id: "c1".into(), text: "{\"command\"".into() },
            LlmEvent::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                input: json!({"command": "ls"}),
                provider_executed: false,
                provider_metadata: None,
            },
            LlmEvent::ToolCall {
                id: "c2".into(),
                name: "web_search".into(),
                input: json!({}),
                provider_executed: true,
                provider_metadata: None,
            },
            LlmEvent::ToolResult {
                id: "c2".into(),
                name: "web_search".into(),
                result: ToolResultValue::Text("ok".into()),
            },
        ]);
        assert!(matches!(&steps[0], Step::Stage(part) if matches!(state_of(part), ToolState::Pending { .. })));
        assert!(
            matches!(&steps[1], Step::InputDelta { part, .. } if matches!(state_of(part), ToolState::Pending { raw, .. } if raw == "{\"command\""))
        );
        let Step::Call { part, call: Some(call) } = &steps[2] else { panic!("{:?}", steps[2]) };
        assert_eq!((call.call_id.as_str(), call.input.clone()), ("c1", json!({"command": "ls"})));
        assert_eq!(
            part.id,
            match &steps[0] {
                Step::Stage(pending) => pending.id.clone(),
                _ => unreachable!(),
            }
        );
        assert!(matches!(state_of(part), ToolState::Running { .. }));
        assert!(matches!(&steps[3], Step::Call { call: None, .. }));
        assert!(
            matches!(&steps[4], Step::Stage(part) if matches!(state_of(part), ToolState::Completed { output, .. } if output == "ok"))
        );
        assert_eq!(fold.out.local_calls, 1);
    }

    #[test]
    fn on_failure_calls_that_never_completed_are_failed_but_local_ones_are_left_to_their_tasks() {
        let (mut fold, _) = fold_all(vec![
            LlmEvent::ToolInputStart { id: "half".into(), name: "edit".into() },
            LlmEvent::ToolCall {
                id: "local".into(),
                name: "bash".into(),
                input: json!({}),
                provider_executed: false,
                provider_metadata: None,
            },
            LlmEvent::ToolCall {
                id: "remote".into(),
                name: "web_search".into(),
                input: json!({}),
                provider_executed: true,
                provider_metadata: None,
            },
        ]);
        let failed = fold.unsettled_tools("gone");
        let ids: Vec<&str> = failed
            .iter()
            .map(|part| match &part.kind {
                PartKind::Tool { call_id, state: ToolState::Error { error, .. }, .. } if error == "gone" => {
                    call_id.as_str()
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(ids, ["half", "remote"]);
    }

    #[test]
    fn usage_comes_from_the_last_report_and_errors_and_finish_are_kept() {
        let usage = |input| Some(Usage { input_tokens: input, ..Usage::default() });
        let (fold, steps) = fold_all(vec![
            LlmEvent::StepFinish { index: 0, reason: FinishReason::ToolCalls, usage: usage(10) },
            LlmEvent::Finish {
                reason: FinishReason::Stop,
                usage: None,
                response_id: None,
                model: None,
                provider_metadata: None,
            },
        ]);
        assert!(steps.is_empty());
        assert_eq!(fold.out.usage.map(|u| u.input_tokens), Some(10), "a finish without usage keeps the step's");
        assert_eq!(fold.out.finish, Some(FinishReason::Stop));
        let (failed, _) =
            fold_all(vec![LlmEvent::Error { error: LlmError::new(opencode_llm::ErrorKind::RateLimit, "slow down") }]);
        assert_eq!(failed.out.error.map(|e| e.message), Some("slow down".to_owned()));
    }
}
