//! Replays every recorded cassette through the whole stack (mock server → transport → framing →
//! protocol). Each case in `tests/cases/**.json` names a cassette and, per interaction, the
//! canonical request that must encode to the recorded body and what the recorded response must
//! fold to. A message given as the string `"$previous"` is replaced by the previous step's folded
//! assistant message, so tool loops also prove that reasoning and signatures round-trip.

use std::path::Path;
use std::path::PathBuf;

use opencode_llm::LlmRequest;
use opencode_llm::LlmResponse;
use opencode_mock_provider::Cassette;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::canonical_json;
use pretty_assertions::assert_eq;
use serde::Deserialize;
use serde_json::Value;

use super::support;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// Path under the shared fixtures folder.
    cassette: String,
    provider: String,
    #[serde(default)]
    protocol: Option<String>,
    /// Base path under the mock when the provider's own base URL is a placeholder.
    #[serde(default)]
    base_path: Option<String>,
    steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    request: Value,
    expect: Expect,
}

/// What the folded response must contain; absent fields are not checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Value>,
    #[serde(default)]
    finish_reason: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    /// Expected error fields (`kind`, `status`, `code`, `retryable`) for sad paths.
    #[serde(default)]
    error: Option<Value>,
}

#[tokio::test]
async fn every_recorded_cassette_replays() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let cases_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut cases = Vec::new();
    collect_json(&cases_dir, &mut cases);
    cases.sort();
    assert!(!cases.is_empty(), "no cases under {}", cases_dir.display());
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(message) = run_case(&fixtures, case).await {
            failures.push(format!("{}:\n{message}", case.display()));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

/// Every cassette under `recordings/llm` has a case.
#[test]
fn every_llm_cassette_has_a_case() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let cases_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut cases = Vec::new();
    collect_json(&cases_dir, &mut cases);
    let covered: Vec<String> = cases
        .iter()
        .map(|path| {
            let case: Case = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            case.cassette
        })
        .collect();
    let mut cassettes = Vec::new();
    collect_json(&fixtures.join("recordings/llm"), &mut cassettes);
    let missing: Vec<String> = cassettes
        .iter()
        .map(|path| path.strip_prefix(&fixtures).unwrap().to_string_lossy().into_owned())
        .filter(|cassette| !covered.contains(cassette))
        .collect();
    assert!(missing.is_empty(), "cassettes without a case: {missing:#?}");
}

async fn run_case(fixtures: &Path, path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
    let case: Case = serde_json::from_str(&text).map_err(|err| format!("bad case file: {err}"))?;
    let cassette = Cassette::load(&fixtures.join(&case.cassette)).map_err(|err| format!("{err}"))?;
    if cassette.interactions.len() != case.steps.len() {
        return Err(format!("{} interactions but {} steps", cassette.interactions.len(), case.steps.len()));
    }
    let mock = MockProvider::start().await.map_err(|err| err.to_string())?;
    mock.push_all(cassette.responses());
    let route = support::mock_route(&mock, &case.provider, case.protocol.as_deref(), case.base_path.as_deref());
    let client = support::client();

    let mut previous: Option<LlmResponse> = None;
    for (index, (step, interaction)) in case.steps.iter().zip(&cassette.interactions).enumerate() {
        let request = build_request(&step.request, previous.as_ref())?;
        let prepared = client.prepare(&route, &request).map_err(|err| format!("step {index}: prepare: {err}"))?;

        let recorded: Value = serde_json::from_str(&interaction.request.body).map_err(|err| err.to_string())?;
        let ours = prepared.body_json().map_err(|err| err.to_string())?;
        if canonical_json(&ours) != canonical_json(&recorded) {
            assert_eq!(pretty(&ours), pretty(&recorded), "step {index}: request body differs from the recording");
        }
        let recorded_path = path_and_query(&interaction.request.url);
        let our_path = path_and_query(prepared.url.as_str()).replace("%7B", "{").replace("%7D", "}");
        if !our_path.ends_with(&recorded_path) {
            return Err(format!("step {index}: path `{our_path}` but the recording has `{recorded_path}`"));
        }

        let response = match client.generate(&route, &request).await {
            Ok(response) => response,
            Err(error) => LlmResponse::from_events(&[opencode_llm::LlmEvent::Error { error }]),
        };
        check(&step.expect, &response).map_err(|err| format!("step {index}: {err}"))?;
        previous = Some(response);
    }
    Ok(())
}

fn build_request(template: &Value, previous: Option<&LlmResponse>) -> Result<LlmRequest, String> {
    let mut value = template.clone();
    if let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) {
        for message in messages.iter_mut() {
            if message == "$previous" {
                let previous = previous.ok_or("`$previous` in the first step")?;
                *message = serde_json::to_value(&previous.message).map_err(|err| err.to_string())?;
            }
        }
    }
    serde_json::from_value(value).map_err(|err| format!("bad request in case: {err}"))
}

fn check(expect: &Expect, response: &LlmResponse) -> Result<(), String> {
    let actual = serde_json::json!({
        "text": response.text(),
        "reasoning": response.reasoning(),
        "tool_calls": response.tool_calls(),
        "finish_reason": response.finish_reason,
        "usage": response.usage,
        "error": response.error,
    });
    let expected = serde_json::json!({
        "text": expect.text,
        "reasoning": expect.reasoning,
        "tool_calls": expect.tool_calls,
        "finish_reason": expect.finish_reason,
        "usage": expect.usage,
        "error": expect.error,
    });
    for (field, want) in expected.as_object().into_iter().flatten() {
        if want.is_null() {
            continue;
        }
        let got = &actual[field];
        let matches = match (want, got) {
            // Error expectations list only the fields that matter.
            (Value::Object(want), Value::Object(got)) if field == "error" => {
                want.iter().all(|(key, value)| got.get(key) == Some(value))
            }
            _ => want == got,
        };
        if !matches {
            return Err(format!("{field}: expected {}, got {}", pretty(want), pretty(got)));
        }
    }
    if expect.error.is_none() && response.error.is_some() {
        return Err(format!("unexpected error: {}", pretty(&actual["error"])));
    }
    Ok(())
}

fn path_and_query(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.find('/').map_or_else(|| "/".to_owned(), |at| rest[at..].to_owned())
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_json(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "json") {
            out.push(path);
        }
    }
}
