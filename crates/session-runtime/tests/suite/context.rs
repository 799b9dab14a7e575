//! System context at boundaries: a stable baseline (the provider-cache prefix) and exactly one
//! Mid-Conversation System Message after the settled tool results when AGENTS.md changes.

use opencode_llm::ToolDefinition;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::PromptRequest;
use opencode_session_store::MessageInfo;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::harness;
use super::support::history;
use super::support::requests;
use super::support::text;
use super::support::tool_call;
use super::support::transcript;

fn agents_editor() -> FnTools {
    FnTools::new().tool(ToolDefinition::new("edit_rules", "Rewrite AGENTS.md", json!({"type": "object"})), |_, ctx| {
        Box::pin(async move {
            std::fs::write(ctx.directory.join("AGENTS.md"), "Rule two: use tabs.").map_err(|e| e.to_string())?;
            Ok("rewritten".to_owned())
        })
    })
}

#[tokio::test]
async fn agents_md_edited_mid_loop_yields_one_system_message_after_the_tool_results() {
    let h = harness(agents_editor()).await;
    std::fs::write(h.project.path().join("AGENTS.md"), "Rule one: use spaces.").unwrap();
    h.mock.push_all([tool_call("call_1", "edit_rules", json!({})), text("Rules updated."), text("Still tabs.")]);
    let first = h.runtime.run(PromptRequest::text(&h.session.id, "Switch to tabs")).await.unwrap();
    assert_eq!(first.outcome, DrainOutcome::Completed);
    let second = h.runtime.run(PromptRequest::text(&h.session.id, "Which rule?")).await.unwrap();
    assert_eq!(second.outcome, DrainOutcome::Completed);

    let requests = requests(&h.mock);
    assert_eq!(requests.len(), 3);
    // The baseline (first system message) is byte-identical in every request of the epoch.
    assert!(requests[0][0]["content"].as_str().unwrap().contains("Rule one: use spaces."));
    assert_eq!(requests[1][0], requests[0][0]);
    assert_eq!(requests[2][0], requests[0][0]);
    // The compatible dialect lowers a Mid-Conversation System Message to a wrapped user message.
    let update = "user: <system-update>\nThese instructions replace all previously loaded ambient instructions.";
    let turn2 = transcript(&requests[1]);
    assert_eq!(turn2.len(), 5);
    assert_eq!(turn2[1..4], ["user: Switch to tabs", "assistant: edit_rules({})", "tool: rewritten"]);
    assert!(turn2[4].starts_with(update), "{}", turn2[4]);
    assert!(turn2[4].ends_with("Rule two: use tabs.\n</system-update>"), "{}", turn2[4]);
    // Durable, admitted once: the next turn replays it unchanged and adds no other.
    let turn3 = transcript(&requests[2]);
    assert_eq!(turn3.iter().filter(|m| m.contains("<system-update>")).count(), 1);
    assert_eq!(turn3[4], turn2[4]);
    let system: Vec<String> = history(&h.store, &h.session.id)
        .into_iter()
        .filter_map(|m| match m.info {
            MessageInfo::System(s) => Some(s.text),
            _ => None,
        })
        .collect();
    assert_eq!(system, [turn2[4].trim_start_matches("user: <system-update>\n").trim_end_matches("\n</system-update>")]);
}

#[tokio::test]
async fn an_unchanged_context_adds_no_system_message() {
    let h = harness(FnTools::new()).await;
    h.mock.push_all([text("One."), text("Two.")]);
    h.runtime.run(PromptRequest::text(&h.session.id, "a")).await.unwrap();
    h.runtime.run(PromptRequest::text(&h.session.id, "b")).await.unwrap();
    let requests = requests(&h.mock);
    assert_eq!(transcript(&requests[1])[1..], ["user: a", "assistant: One.", "user: b"]);
    assert_eq!(requests[1][0], requests[0][0]);
    let epochs = h.store.read(|r| r.active_epoch(&h.session.id)).unwrap().unwrap();
    assert_eq!(epochs.epoch, 1);
}
