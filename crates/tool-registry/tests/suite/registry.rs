//! Registration, definitions and settlement.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_config::ToolOutputConfig;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::Tool;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::ToolOutput;
use opencode_tool_registry::TypedTool;
use opencode_tool_registry::typed;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::support::Env;

/// Echoes `times` copies of `text`, or fails the way it is told to.
struct Echo;

#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    /// Text to repeat.
    text: String,
    #[serde(default)]
    times: Option<usize>,
    #[serde(default)]
    fail: Option<String>,
    #[serde(default)]
    structured: bool,
}

impl TypedTool for Echo {
    type Input = EchoInput;
    const NAME: &'static str = "echo";

    fn description(&self) -> String {
        "Echo text".into()
    }

    fn run<'a>(&'a self, input: EchoInput, _ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            match input.fail.as_deref() {
                Some("model") => return Err(ToolError::model("no match for `x`")),
                Some("fatal") => return Err(ToolError::fatal("database is gone")),
                _ => {}
            }
            let text = input.text.repeat(input.times.unwrap_or(1));
            if input.structured {
                return Ok(ToolOutput::structured(json!({ "items": vec![text; 1] })));
            }
            Ok(ToolOutput::text(text).with_title("echoed"))
        })
    }
}

/// A tool that never finishes.
struct Hang;

impl Tool for Hang {
    fn name(&self) -> &str {
        "hang"
    }
    fn description(&self) -> String {
        "never returns".into()
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn execute<'a>(&'a self, _: serde_json::Value, _: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(std::future::pending())
    }
}

fn call(name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall { call_id: "call_1".into(), name: name.into(), input }
}

#[tokio::test]
async fn schema_comes_from_the_input_type() {
    let env = Env::new();
    env.registry.register(typed(Echo)).unwrap();
    let definitions = env.registry.definitions(&env.agent("build"));
    assert_eq!(definitions.len(), 1);
    assert_eq!(definitions[0].name, "echo");
    assert_eq!(definitions[0].input_schema["properties"]["text"]["description"], "Text to repeat.");
    assert_eq!(definitions[0].input_schema["required"], json!(["text"]));
}

#[tokio::test]
async fn later_registration_wins_until_removed() {
    let env = Env::new();
    env.registry.register(typed(Echo)).unwrap();
    let hang = env.registry.register(Arc::new(RenamedHang)).unwrap();
    assert_eq!(env.registry.get("echo").unwrap().description(), "never returns");
    assert!(env.registry.unregister(hang));
    assert_eq!(env.registry.get("echo").unwrap().description(), "Echo text");
    assert_eq!(env.registry.names(), vec!["echo".to_owned()]);
}

struct RenamedHang;
impl Tool for RenamedHang {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> String {
        Hang.description()
    }
    fn parameters(&self) -> serde_json::Value {
        Hang.parameters()
    }
    fn execute<'a>(
        &'a self,
        input: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Hang.execute(input, ctx)
    }
}

#[tokio::test]
async fn invalid_names_are_refused() {
    struct Bad;
    impl Tool for Bad {
        fn name(&self) -> &str {
            "9 lives"
        }
        fn description(&self) -> String {
            String::new()
        }
        fn parameters(&self) -> serde_json::Value {
            json!({})
        }
        fn execute<'a>(
            &'a self,
            _: serde_json::Value,
            _: &'a ToolContext,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::default()) })
        }
    }
    let env = Env::new();
    let err = env.registry.register(Arc::new(Bad)).unwrap_err();
    assert!(err.to_string().contains("invalid tool name `9 lives`"));
}

#[tokio::test]
async fn model_errors_settle_and_fatal_errors_do_not() {
    let env = Env::new();
    env.registry.register(typed(Echo)).unwrap();
    let ctx = env.ctx("build");
    let settled = env.registry.execute(&call("echo", json!({"text": "a", "fail": "model"})), &ctx).await.unwrap();
    assert_eq!(settled.status, SettlementStatus::Error);
    assert_eq!(settled.text, "no match for `x`");
    let fatal = env.registry.execute(&call("echo", json!({"text": "a", "fail": "fatal"})), &ctx).await.unwrap_err();
    assert_eq!(fatal, ToolError::fatal("database is gone"));
    let bad = env.registry.execute(&call("echo", json!({"txt": 1})), &ctx).await.unwrap();
    assert_eq!(bad.status, SettlementStatus::Error);
    assert!(
        bad.text.starts_with("The echo tool was called with invalid arguments: missing field `text`"),
        "{}",
        bad.text
    );
    let unknown = env.registry.execute(&call("nope", json!({})), &ctx).await.unwrap();
    assert_eq!(unknown.text, "Model tried to call unavailable tool 'nope'. Available tools: echo.");
}

#[tokio::test]
async fn large_output_is_bounded_before_settlement() {
    let env = Env::with_limits(ToolOutputConfig { max_lines: 50, max_bytes: 4096 });
    env.registry.register(typed(Echo)).unwrap();
    let settled = env
        .registry
        .execute(&call("echo", json!({"text": "line\n", "times": 10_000})), &env.ctx("build"))
        .await
        .unwrap();
    assert_eq!(settled.status, SettlementStatus::Completed);
    assert_eq!(settled.title.as_deref(), Some("echoed"));
    assert!(settled.truncated);
    assert!(settled.text.len() <= 4096 && settled.text.lines().count() <= 50);
    let path = settled.managed_path.unwrap();
    assert!(path.starts_with(env.data.join("tool-output")));
    assert_eq!(std::fs::read_to_string(path).unwrap().len(), 50_000);
}

#[tokio::test]
async fn structured_only_results_keep_their_value_and_show_a_bounded_json_preview() {
    let env = Env::with_limits(ToolOutputConfig { max_lines: 20, max_bytes: 2048 });
    env.registry.register(typed(Echo)).unwrap();
    let settled = env
        .registry
        .execute(&call("echo", json!({"text": "0123456789", "times": 1000, "structured": true})), &env.ctx("build"))
        .await
        .unwrap();
    assert_eq!(settled.structured, Some(json!({"items": ["0123456789".repeat(1000)]})));
    assert!(settled.truncated);
    assert!(settled.text.starts_with("{\n  \"items\": ["));
    assert!(settled.text.len() <= 2048);
    let small =
        env.registry.execute(&call("echo", json!({"text": "x", "structured": true})), &env.ctx("build")).await.unwrap();
    assert_eq!(small.text, "{\n  \"items\": [\n    \"x\"\n  ]\n}");
}

#[tokio::test]
async fn cancellation_settles_as_interrupted() {
    let env = Env::new();
    env.registry.register(Arc::new(Hang)).unwrap();
    let ctx = env.ctx("build");
    ctx.cancel.cancel();
    let settled = env.registry.execute(&call("hang", json!({})), &ctx).await.unwrap();
    assert_eq!(settled.status, SettlementStatus::Interrupted);
}

#[tokio::test]
async fn tools_denied_by_star_are_hidden_and_refused() {
    let env = Env::new();
    env.registry.register(typed(Echo)).unwrap();
    assert!(env.registry.definitions(&env.agent("title")).is_empty());
    let settled = env.registry.execute(&call("echo", json!({"text": "a"})), &env.ctx("title")).await.unwrap();
    assert_eq!(settled.status, SettlementStatus::Error);
    assert!(settled.text.starts_with("Model tried to call unavailable tool 'echo'"));
}
