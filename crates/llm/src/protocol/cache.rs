//! Prompt-cache breakpoint planning for protocols with explicit breakpoints (Anthropic Messages,
//! Bedrock Converse).
//!
//! Hints set on parts are always kept. With [`CachePolicy::Auto`] the planner adds one on the last
//! tool, the last system part and the last part of the latest user or tool message. The prefix order
//! is tools, then system, then messages. Past [`MAX_BREAKPOINTS`], automatic breakpoints give way to
//! hints set on parts (a plugin that marks its own stable blocks knows where its prefix ends), the
//! earliest first: a later breakpoint's prefix contains an earlier one's, while the latest turn's
//! breakpoint is what lets the next request read the conversation. Hints set on parts beyond the
//! limit are dropped from the end.
//!
//! Anthropic requires longer lifetimes first: a one-hour breakpoint may not follow a five-minute
//! one. So a breakpoint before a longer-lived one takes its lifetime (the longer entry covers the
//! shorter one's prefix anyway; only its write price changes).

use crate::CacheHint;
use crate::CachePolicy;
use crate::LlmRequest;
use crate::Role;

/// Providers accept at most four breakpoints per request.
pub const MAX_BREAKPOINTS: usize = 4;

/// Where breakpoints go, index-aligned with the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CachePlan {
    pub tools: Vec<Option<CacheHint>>,
    pub system: Vec<Option<CacheHint>>,
    /// Per message, per content part.
    pub messages: Vec<Vec<Option<CacheHint>>>,
}

impl CachePlan {
    pub fn for_request(request: &LlmRequest) -> Self {
        let mut plan = Self {
            tools: request.tools.iter().map(|tool| tool.cache.clone()).collect(),
            system: request.system.iter().map(|part| part.cache.clone()).collect(),
            messages: request
                .messages
                .iter()
                .map(|message| message.content.iter().map(|part| part.cache_hint().cloned()).collect())
                .collect(),
        };
        plan.cap(MAX_BREAKPOINTS);
        if request.cache == CachePolicy::Auto {
            let explicit = plan.count();
            plan.add_automatic(request, MAX_BREAKPOINTS.saturating_sub(explicit));
        }
        plan.order_lifetimes();
        plan
    }

    /// Raises each breakpoint's lifetime to the longest of those after it.
    fn order_lifetimes(&mut self) {
        let mut longest: Option<u32> = None;
        let slots = self.tools.iter_mut().chain(self.system.iter_mut()).chain(self.messages.iter_mut().flatten());
        let mut slots: Vec<&mut CacheHint> = slots.filter_map(Option::as_mut).collect();
        for hint in slots.iter_mut().rev() {
            match (hint.ttl_seconds, longest) {
                (Some(own), Some(later)) if own >= later => longest = Some(own),
                (_, Some(later)) => hint.ttl_seconds = Some(later),
                (own, None) => longest = own,
            }
        }
    }

    pub fn tool(&self, index: usize) -> Option<&CacheHint> {
        self.tools.get(index).and_then(Option::as_ref)
    }

    pub fn system(&self, index: usize) -> Option<&CacheHint> {
        self.system.get(index).and_then(Option::as_ref)
    }

    pub fn part(&self, message: usize, part: usize) -> Option<&CacheHint> {
        self.messages.get(message).and_then(|parts| parts.get(part)).and_then(Option::as_ref)
    }

    fn count(&self) -> usize {
        let slots = self.tools.iter().chain(self.system.iter()).chain(self.messages.iter().flatten());
        slots.filter(|slot| slot.is_some()).count()
    }

    /// Adds the automatic breakpoints (last tool, last system part, latest turn) into at most
    /// `room` free slots, latest first.
    fn add_automatic(&mut self, request: &LlmRequest, room: usize) {
        let latest_turn = request.messages.iter().rposition(|message| matches!(message.role, Role::User | Role::Tool));
        let turn = latest_turn.and_then(|index| self.messages[index].last_mut());
        let system = self.system.last_mut();
        let tool = self.tools.last_mut();
        let mut left = room;
        for slot in [turn, system, tool].into_iter().flatten() {
            if slot.is_some() {
                continue;
            }
            if left == 0 {
                tracing::debug!("automatic prompt-cache breakpoint left out: the provider limit is reached");
                continue;
            }
            *slot = Some(CacheHint::default());
            left -= 1;
        }
    }

    fn cap(&mut self, max: usize) {
        let mut kept = 0;
        let slots = self.tools.iter_mut().chain(self.system.iter_mut()).chain(self.messages.iter_mut().flatten());
        for slot in slots {
            if slot.is_some() {
                if kept == max {
                    tracing::warn!("dropping a prompt-cache breakpoint beyond the provider limit of {max}");
                    *slot = None;
                } else {
                    kept += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContentPart;
    use crate::Message;
    use crate::ToolDefinition;

    #[test]
    fn auto_policy_marks_last_tool_system_and_latest_turn() {
        let request = LlmRequest::new("m")
            .system("a")
            .system("b")
            .tool(ToolDefinition::new("t1", "", serde_json::json!({})))
            .tool(ToolDefinition::new("t2", "", serde_json::json!({})))
            .message(Message::user("first"))
            .message(Message::assistant(vec![]))
            .message(Message::user("second"));
        let plan = CachePlan::for_request(&request);
        assert_eq!(plan.tools, vec![None, Some(CacheHint::default())]);
        assert_eq!(plan.system, vec![None, Some(CacheHint::default())]);
        assert!(plan.part(0, 0).is_none());
        assert!(plan.part(2, 0).is_some());
    }

    #[test]
    fn a_breakpoint_before_a_longer_lived_one_takes_its_lifetime() {
        let hour = Some(CacheHint { ttl_seconds: Some(3600) });
        let mut baseline = Message::user("baseline");
        if let ContentPart::Text { cache, .. } = &mut baseline.content[0] {
            cache.clone_from(&hour);
        }
        let request = LlmRequest::new("m")
            .system("s")
            .tool(ToolDefinition::new("t", "", serde_json::json!({})))
            .message(baseline)
            .message(Message::user("latest"));
        let plan = CachePlan::for_request(&request);
        assert_eq!((plan.tool(0), plan.system(0)), (hour.as_ref(), hour.as_ref()));
        assert_eq!(plan.part(0, 0), hour.as_ref());
        assert_eq!(plan.part(1, 0), Some(&CacheHint::default()), "a later breakpoint keeps its shorter lifetime");
    }

    #[test]
    fn automatic_breakpoints_give_way_to_hints_on_parts_earliest_first() {
        let mut stable = Message::user("stable history");
        stable.content.push(ContentPart::Text {
            text: "delta".into(),
            cache: Some(CacheHint::default()),
            provider_metadata: None,
        });
        if let ContentPart::Text { cache, .. } = &mut stable.content[0] {
            *cache = Some(CacheHint::default());
        }
        let request = LlmRequest::new("m")
            .system("s")
            .tool(ToolDefinition::new("t", "", serde_json::json!({})))
            .message(stable)
            .message(Message::user("latest"));
        let plan = CachePlan::for_request(&request);
        assert_eq!(plan.tools, vec![None]);
        assert!(plan.system(0).is_some());
        assert!(plan.part(0, 0).is_some() && plan.part(0, 1).is_some());
        assert!(plan.part(1, 0).is_some());
    }

    #[test]
    fn breakpoints_beyond_four_are_dropped_from_the_end() {
        let mut request = LlmRequest::new("m");
        request.cache = CachePolicy::Manual;
        for i in 0..6 {
            let mut part = crate::SystemPart::text(format!("s{i}"));
            part.cache = Some(CacheHint::default());
            request.system.push(part);
        }
        let plan = CachePlan::for_request(&request);
        assert_eq!(plan.system.iter().filter(|hint| hint.is_some()).count(), 4);
        assert!(plan.system(3).is_some() && plan.system(4).is_none());
    }
}
