//! The Rust plugin API: dispatch order, readiness, failures, contributions and unloading.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use opencode_llm::LlmRequest;
use opencode_plugin_host::ChatHeadersOutput;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginError;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::PluginSource;
use opencode_plugin_host::PluginState;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::SystemOutput;
use opencode_plugin_host::hook;
use opencode_system_context::ContextSource;
use opencode_system_context::Loaded;
use opencode_system_context::SourceKey;
use opencode_system_context::SystemContext;
use opencode_system_context::SystemContextRegistry;
use pretty_assertions::assert_eq;

use super::support::Recorder;
use super::support::chat_input;

async fn headers(host: &PluginHost) -> ChatHeadersOutput {
    let mut output = ChatHeadersOutput::default();
    let failures = host.trigger::<hook::ChatHeaders>(&chat_input(), &mut output).await;
    assert_eq!(failures, vec![]);
    output
}

#[tokio::test]
async fn hooks_run_in_registration_order_whatever_order_plugins_become_ready() {
    let slow = Arc::new(Recorder { namespace: "slow", delay: Duration::from_millis(150), fail: None });
    let host = PluginHost::builder()
        .plugin(slow, Requirement::Required)
        .plugin(Recorder::new("fast"), Requirement::Required)
        .build();
    // Before readiness no plugin is active: sessions must await `ready` first.
    assert_eq!(headers(&host).await.headers.get("x-order"), None);
    let report = host.ready().await.unwrap();
    assert_eq!(report.ready().collect::<Vec<_>>(), vec!["slow", "fast"]);
    assert_eq!(headers(&host).await.headers["x-order"], "slow,fast");
}

#[tokio::test]
async fn a_failed_optional_plugin_is_reported_and_the_others_continue() {
    let broken = Arc::new(Recorder { namespace: "broken", delay: Duration::ZERO, fail: Some("no license") });
    let host = PluginHost::builder()
        .plugin(broken, Requirement::Optional)
        .plugin(Recorder::new("fine"), Requirement::Required)
        .build();
    let report = host.ready().await.unwrap();
    let problems: Vec<_> = report.problems().map(|status| (status.name.as_str(), status.state.clone())).collect();
    assert_eq!(problems, vec![("broken", PluginState::Failed("no license".into()))]);
    assert_eq!(headers(&host).await.headers["x-order"], "fine");
}

#[tokio::test]
async fn a_failed_required_plugin_fails_readiness_with_its_name_and_error() {
    let broken = Arc::new(Recorder { namespace: "broken", delay: Duration::ZERO, fail: Some("no license") });
    let host = PluginHost::builder().plugin(broken, Requirement::Required).build();
    let err = host.ready().await.unwrap_err();
    assert_eq!(err, PluginError::RequiredFailed { plugin: "broken".into(), reason: "no license".into() });
    assert_eq!(err.to_string(), "required plugin `broken` failed to start: no license");
}

#[tokio::test]
async fn a_plugin_that_never_becomes_ready_times_out() {
    let stuck = Arc::new(Recorder { namespace: "stuck", delay: Duration::from_secs(3600), fail: None });
    let host =
        PluginHost::builder().plugin(stuck, Requirement::Optional).start_timeout(Duration::from_millis(50)).build();
    let report = host.ready().await.unwrap();
    assert_eq!(report.plugins[0].state, PluginState::Failed("not ready within 50 ms".into()));
    assert_eq!(host.namespaces(), Vec::<String>::new());
}

#[tokio::test]
async fn a_second_plugin_with_the_same_namespace_is_refused() {
    let host = PluginHost::builder()
        .plugin(Recorder::new("twin"), Requirement::Optional)
        .plugin(Recorder::new("twin"), Requirement::Optional)
        .build();
    let report = host.ready().await.unwrap();
    assert_eq!(report.plugins[1].state, PluginState::Failed("plugin namespace `twin` is already taken".into()));
    assert_eq!(headers(&host).await.headers["x-order"], "twin");
}

#[tokio::test]
async fn without_plugins_every_hook_is_a_no_op() {
    let host = PluginHost::default();
    host.ready().await.unwrap();
    let mut request = LlmRequest::new("gpt-5").system("baseline");
    let before = request.clone();
    assert_eq!(host.apply_chat_params(&chat_input(), &mut request).await, vec![]);
    assert_eq!(host.apply_transforms(&chat_input(), &mut request).await, vec![]);
    assert_eq!(request, before);
    assert!(!host.implements(HookName::ChatParams));
}

/// Adds system text and a Context Source.
struct Notes {
    key: SourceKey,
}

impl ContextSource for Notes {
    type Value = String;
    fn key(&self) -> &SourceKey {
        &self.key
    }
    async fn load(&self) -> Loaded<String> {
        Loaded::Value("notes".into())
    }
    fn baseline(&self, value: &String) -> String {
        format!("Notes: {value}")
    }
    fn update(&self, _: &String, value: &String) -> String {
        format!("Notes now: {value}")
    }
}

struct NotesPlugin;

impl Plugin for NotesPlugin {
    fn namespace(&self) -> &str {
        "notes"
    }
    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::ChatSystemTransform])
    }
    fn start<'a>(&'a self, _: &'a opencode_plugin_host::StartContext) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    fn context_sources(&self) -> Vec<PluginSource> {
        let producer = || async { SystemContext::make(Notes { key: SourceKey::new("plugin.notes/notes").unwrap() }) };
        vec![PluginSource { name: "notes".into(), producer: Arc::new(producer) }]
    }
    fn chat_system_transform<'a>(&'a self, _: &'a ChatInput, output: &'a mut SystemOutput) -> HookFuture<'a> {
        output.system.push("Be brief.".into());
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn system_transform_appends_after_the_baseline_and_never_edits_it() {
    let host = PluginHost::builder().plugin(Arc::new(NotesPlugin), Requirement::Required).build();
    host.ready().await.unwrap();
    let mut request = LlmRequest::new("gpt-5").system("baseline one").system("baseline two");
    host.apply_transforms(&chat_input(), &mut request).await;
    let texts: Vec<&str> = request.system.iter().map(|part| part.text.as_str()).collect();
    assert_eq!(texts, vec!["baseline one", "baseline two", "Be brief."]);
}

#[tokio::test]
async fn context_sources_join_the_registry_and_leave_it_when_the_plugin_unloads() {
    let host = PluginHost::builder().plugin(Arc::new(NotesPlugin), Requirement::Required).build();
    host.ready().await.unwrap();
    let registry = SystemContextRegistry::new();
    assert_eq!(host.attach_context(&registry), vec![]);
    let keys: Vec<String> = registry.keys().iter().map(ToString::to_string).collect();
    assert_eq!(keys, vec!["plugin.notes/notes"]);
    let generation = registry.load().await.unwrap().initialize().await.unwrap();
    assert_eq!(generation.baseline.text, "Notes: notes");

    assert!(host.unload("notes").await);
    assert_eq!(registry.keys(), vec![]);
    assert!(!host.implements(HookName::ChatSystemTransform));
    // Reloading adds the sources again.
    host.load(Arc::new(NotesPlugin)).await.unwrap();
    assert_eq!(registry.keys().len(), 1);
}

/// Keeps the window itself; `failing` makes its start fail.
struct Manager {
    failing: bool,
}

impl Plugin for Manager {
    fn namespace(&self) -> &str {
        "manager"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::ChatMessagesTransform])
    }

    fn manages_context(&self) -> bool {
        true
    }

    fn start<'a>(&'a self, _ctx: &'a opencode_plugin_host::StartContext) -> BoxFuture<'a, Result<(), String>> {
        let failing = self.failing;
        Box::pin(async move { if failing { Err("no state".into()) } else { Ok(()) } })
    }
}

#[tokio::test]
async fn only_a_ready_plugin_that_says_so_manages_the_context_window() {
    let plain = PluginHost::builder().plugin(Recorder::new("plain"), Requirement::Optional).build();
    plain.ready().await.unwrap();
    assert!(!plain.manages_context());
    let managed = PluginHost::builder().plugin(Arc::new(Manager { failing: false }), Requirement::Optional).build();
    assert!(!managed.manages_context(), "not before it is ready");
    managed.ready().await.unwrap();
    assert!(managed.manages_context());
    assert!(managed.unload("manager").await);
    assert!(!managed.manages_context(), "not after it unloads");
    let failed = PluginHost::builder().plugin(Arc::new(Manager { failing: true }), Requirement::Optional).build();
    failed.ready().await.unwrap();
    assert!(!failed.manages_context(), "a plugin that failed to start leaves the window to the host");
}

/// Shouts every finished text part.
struct Shout;

impl Plugin for Shout {
    fn namespace(&self) -> &str {
        "shout"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::TextComplete])
    }

    fn text_complete<'a>(
        &'a self,
        input: &'a opencode_plugin_host::TextCompleteInput,
        output: &'a mut opencode_plugin_host::TextCompleteOutput,
    ) -> HookFuture<'a> {
        output.text = format!("{} ({})", output.text.to_uppercase(), input.part_id);
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn text_complete_rewrites_a_finished_text_part() {
    let input = opencode_plugin_host::TextCompleteInput {
        session_id: "ses_1".into(),
        message_id: "msg_1".into(),
        part_id: "prt_1".into(),
    };
    let mut text = "done".to_owned();
    let idle = PluginHost::default();
    idle.ready().await.unwrap();
    assert!(idle.apply_text_complete(&input, &mut text).await.is_empty());
    assert_eq!(text, "done", "untouched without a plugin");
    let host = PluginHost::builder().plugin(Arc::new(Shout), Requirement::Required).build();
    host.ready().await.unwrap();
    assert!(host.apply_text_complete(&input, &mut text).await.is_empty());
    assert_eq!(text, "DONE (prt_1)");
    assert_eq!(HookName::parse("experimental.text.complete"), Some(HookName::TextComplete));
}

/// Offers `/echo` (answered as is) and `/ask` (a prompt for the model); `name` tells two apart.
struct Commands {
    name: &'static str,
}

impl Plugin for Commands {
    fn namespace(&self) -> &str {
        self.name
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([])
    }

    fn commands(&self) -> Vec<opencode_plugin_host::PluginCommand> {
        ["echo", "ask"]
            .map(|name| opencode_plugin_host::PluginCommand {
                name: name.into(),
                description: format!("{name} from {}", self.name),
                hint: Some("[text]".into()),
            })
            .into()
    }

    fn run_command<'a>(
        &'a self,
        name: &'a str,
        input: &'a opencode_plugin_host::CommandInput,
    ) -> opencode_plugin_host::commands::CommandFuture<'a> {
        Box::pin(async move {
            Ok(match name {
                "echo" => opencode_plugin_host::CommandOutcome::Reply(format!("{}: {}", self.name, input.arguments)),
                _ => opencode_plugin_host::CommandOutcome::Prompt(format!("Please {}", input.arguments)),
            })
        })
    }
}

#[tokio::test]
async fn ready_plugins_commands_are_listed_once_and_run_by_name() {
    let host = PluginHost::builder()
        .plugin(Arc::new(Commands { name: "first" }), Requirement::Optional)
        .plugin(Arc::new(Commands { name: "second" }), Requirement::Optional)
        .build();
    assert!(host.commands().is_empty(), "nothing before the plugins are ready");
    host.ready().await.unwrap();
    let listed: Vec<(String, String)> =
        host.commands().into_iter().map(|command| (command.name, command.description)).collect();
    let expected = [("echo", "echo from first"), ("ask", "ask from first")].map(|(a, b)| (a.to_owned(), b.to_owned()));
    assert_eq!(listed, expected, "a name taken by an earlier plugin is not listed twice");
    let input = opencode_plugin_host::CommandInput { session_id: "ses_1".into(), arguments: "hi".into() };
    let echoed = host.run_command("echo", &input).await;
    assert_eq!(echoed, Some(Ok(opencode_plugin_host::CommandOutcome::Reply("first: hi".into()))));
    let asked = host.run_command("ask", &input).await;
    assert_eq!(asked, Some(Ok(opencode_plugin_host::CommandOutcome::Prompt("Please hi".into()))));
    assert_eq!(host.run_command("missing", &input).await, None);
}
