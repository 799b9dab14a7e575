//! Decisions on GitHub's own webhook payloads (the examples GitHub's Octokit project publishes,
//! `@octokit/webhooks-examples` from npm), and the prompts they make.

use std::path::Path;

use opencode_github::Decision;
use opencode_github::Trigger;
use opencode_github::decide;
use opencode_github::mentioned;
use opencode_github::prompt;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

/// Every example payload of event `name`.
fn examples(name: &str) -> Option<Vec<Value>> {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let prefix = opencode_mock_provider::peer::npm_install(cache, "@octokit/webhooks-examples@7.6.1")?;
    let index = prefix.join("node_modules/@octokit/webhooks-examples/api.github.com/index.json");
    let all: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(index).unwrap()).unwrap();
    let event = all.into_iter().find(|event| event["name"] == name).expect("GitHub's examples have this event");
    Some(event["examples"].as_array().unwrap().clone())
}

fn mentions() -> Vec<String> {
    opencode_github::DEFAULT_MENTIONS.iter().map(|m| (*m).to_owned()).collect()
}

#[test]
fn comments_that_mention_the_agent_call_on_it_and_others_do_not() {
    let Some(payloads) = examples("issue_comment") else { return };
    let created: Vec<Value> = payloads.into_iter().filter(|p| p["action"] == "created").collect();
    assert!(!created.is_empty());
    for mut payload in created {
        // GitHub's own comments do not mention the agent.
        let decision = decide("issue_comment", &payload, &mentions(), None).unwrap();
        assert!(matches!(decision, Decision::Ignore(_)), "{decision:?}");

        payload["comment"]["body"] = json!("/oc why does the build fail on main?");
        payload["comment"]["user"]["type"] = json!("User");
        let Decision::Run(Trigger::Comment { thread, comment_id, request, .. }) =
            decide("issue_comment", &payload, &mentions(), None).unwrap()
        else {
            panic!("a mention calls on the agent")
        };
        assert_eq!(thread.number, payload["issue"]["number"].as_u64().unwrap());
        assert_eq!(thread.pull_request, !payload["issue"]["pull_request"].is_null());
        assert_eq!(comment_id, payload["comment"]["id"].as_u64().unwrap());
        assert_eq!(request, "why does the build fail on main?");

        payload["comment"]["user"]["type"] = json!("Bot");
        let decision = decide("issue_comment", &payload, &mentions(), None).unwrap();
        assert!(matches!(&decision, Decision::Ignore(why) if why.contains("bot")), "{decision:?}");
    }
}

#[test]
fn review_comments_carry_the_file_line_and_diff_hunk() {
    let Some(payloads) = examples("pull_request_review_comment") else { return };
    let mut seen = 0;
    for mut payload in payloads.into_iter().filter(|p| p["action"] == "created") {
        payload["comment"]["body"] = json!("/opencode make this a constant");
        payload["comment"]["user"]["type"] = json!("User");
        let decision = decide("pull_request_review_comment", &payload, &mentions(), None).unwrap();
        let Decision::Run(trigger @ Trigger::ReviewComment { .. }) = decision else { panic!("{decision:?}") };
        let Trigger::ReviewComment { thread, path, diff_hunk, .. } = &trigger else { unreachable!() };
        assert_eq!(thread.number, payload["pull_request"]["number"].as_u64().unwrap());
        assert_eq!(path, payload["comment"]["path"].as_str().unwrap());
        let text = prompt(&trigger, "octo/repo", &[], &[]);
        assert!(text.starts_with("make this a constant"), "{text}");
        assert!(text.contains(diff_hunk.as_str()) && text.contains(path.as_str()), "{text}");
        seen += 1;
    }
    assert!(seen > 0);
}

#[test]
fn opened_issues_and_pull_requests_are_answered_and_reviewed() {
    let Some(issues) = examples("issues") else { return };
    let Some(pulls) = examples("pull_request") else { return };
    for payload in issues.iter().filter(|p| p["action"] == "opened") {
        let decision = decide("issues", payload, &mentions(), None).unwrap();
        match decision {
            Decision::Run(Trigger::Issue { thread, request: None }) => {
                assert_eq!(thread.title, payload["issue"]["title"].as_str().unwrap());
            }
            Decision::Ignore(why) => assert!(why.contains("bot"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
    for payload in issues.iter().filter(|p| p["action"] == "closed") {
        assert!(matches!(decide("issues", payload, &mentions(), None).unwrap(), Decision::Ignore(_)));
    }
    let mut reviewed = 0;
    for payload in pulls.iter().filter(|p| p["action"] == "opened" || p["action"] == "synchronize") {
        if let Decision::Run(trigger @ Trigger::PullRequest { .. }) =
            decide("pull_request", payload, &mentions(), None).unwrap()
        {
            assert!(prompt(&trigger, "octo/repo", &[], &[]).starts_with("Review this pull request"));
            reviewed += 1;
        }
    }
    assert!(reviewed > 0);
}

#[test]
fn manual_runs_need_the_workflows_prompt() {
    let Some(payloads) = examples("workflow_dispatch") else { return };
    for payload in &payloads {
        let err = decide("workflow_dispatch", payload, &mentions(), None).unwrap_err();
        assert!(err.contains("prompt"), "{err}");
        let decision = decide("workflow_dispatch", payload, &mentions(), Some("update the changelog")).unwrap();
        assert_eq!(decision, Decision::Run(Trigger::Manual { request: "update the changelog".into() }));
    }
    let schedule = json!({"schedule": "0 3 * * 1"});
    assert!(matches!(decide("schedule", &schedule, &mentions(), Some("triage")).unwrap(), Decision::Run(_)));
    assert!(matches!(decide("release", &json!({}), &mentions(), None).unwrap(), Decision::Ignore(_)));
}

#[test]
fn a_mention_is_a_whole_word_outside_quotes() {
    let m = mentions();
    assert_eq!(mentioned("/oc fix it", &m).as_deref(), Some("fix it"));
    assert_eq!(mentioned("Could you (/opencode) look?", &m).as_deref(), Some("Could you () look?"));
    assert_eq!(mentioned("this may /occur", &m), None);
    assert_eq!(mentioned("path/oc is a dir", &m), None);
    assert_eq!(mentioned("> /oc fix it\n\nThanks, done.", &m), None);
    assert_eq!(mentioned("> earlier\n/oc now this", &m).as_deref(), Some("now this"));
}
