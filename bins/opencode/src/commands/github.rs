//! `opencode github run`: the agent in a GitHub Actions job. Reads the event Actions hands the job
//! (`GITHUB_EVENT_NAME`, `GITHUB_EVENT_PATH`, `GITHUB_REPOSITORY`, `GITHUB_TOKEN`, `GITHUB_API_URL`,
//! `GITHUB_SERVER_URL`, `GITHUB_RUN_ID`), decides whether it calls on the agent, posts a progress
//! comment on the thread, runs one headless session with the thread as its prompt (what would ask
//! for permission is refused and reported in the log, as `opencode run` does), and replaces the
//! progress comment with the answer, or with the cause when the run failed. A pull request's review
//! is reported as a check run on its head commit instead.

use opencode_github::Decision;
use opencode_github::Github;
use opencode_github::GithubError;
use opencode_github::Trigger;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::ModelChoice;
use opencode_session_runtime::PromptRequest;
use opencode_session_store::NewSession;
use opencode_session_store::PartKind;
use opencode_session_store::Store;

use super::output::Printer;
use crate::cli::Format;
use crate::cli::GithubRunArgs;
use crate::context::Context;
use crate::error::CliError;

const ACTIONS_HINT: &str =
    "run it in a GitHub Actions job (the action sets these), or set them by hand to replay an event";

pub fn run(context: &Context, args: GithubRunArgs) -> Result<(), CliError> {
    let env = |name: &str| context.env.get(name).filter(|value| !value.is_empty()).map(str::to_owned);
    let required = |name: &str| env(name).ok_or_else(|| CliError::usage(format!("{name} is not set"), ACTIONS_HINT));
    let event = required("GITHUB_EVENT_NAME")?;
    let path = required("GITHUB_EVENT_PATH")?;
    let payload = std::fs::read_to_string(&path)
        .map_err(|err| CliError::Io(format!("cannot read the event {path}: {err}")))
        .and_then(|text| {
            serde_json::from_str(&text).map_err(|err| CliError::Io(format!("the event {path} is not JSON: {err}")))
        })?;
    let mentions: Vec<String> =
        args.mentions.split(',').map(|m| m.trim().to_owned()).filter(|m| !m.is_empty()).collect();
    let trigger = match opencode_github::decide(&event, &payload, &mentions, args.prompt.as_deref()) {
        Ok(Decision::Run(trigger)) => trigger,
        Ok(Decision::Ignore(why)) => {
            println!("nothing to do: {why}");
            return Ok(());
        }
        Err(message) => return Err(CliError::usage(message, "see the action's inputs in github/README.md")),
    };
    let repository = required("GITHUB_REPOSITORY")?;
    let token = env("GITHUB_TOKEN").ok_or_else(|| {
        CliError::usage(
            "GITHUB_TOKEN is not set",
            "pass the action's `github-token` input (the workflow token by default)",
        )
    })?;
    let api = env("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".to_owned());
    let server = env("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".to_owned());
    let run_link = env("GITHUB_RUN_ID").map(|id| format!("{server}/{repository}/actions/runs/{id}"));
    let github = Github::new(&api, &repository, &token);
    let model = args.model.as_deref().map(ModelChoice::parse).transpose()?;
    let store = context.store()?;
    let runtime = super::tokio_runtime()?;
    let result = runtime.block_on(async {
        let report = Report::open(&github, &trigger, run_link.as_deref()).await.map_err(github_error)?;
        let skip: Vec<u64> = [report.comment(), comment_id(&trigger)].into_iter().flatten().collect();
        let comments = match trigger.thread() {
            Some(thread) => github.comments(thread.number).await.map_err(github_error)?,
            None => Vec::new(),
        };
        let text = opencode_github::prompt(&trigger, &repository, &comments, &skip);
        let answer = answer(context, &store, text, model, args.agent.clone()).await;
        let body = match &answer {
            Ok(answer) => footer(answer, run_link.as_deref()),
            Err(err) => footer(&format!("I could not finish: {err}"), run_link.as_deref()),
        };
        report.finish(&github, &body).await.map_err(github_error)?;
        answer.map(drop)
    });
    runtime.shutdown_background();
    result
}

/// Where the agent reports: a comment it keeps its progress and answer in (a reply in the thread
/// of a review comment), a check run on a reviewed pull request's head commit, or only the log
/// (manual and scheduled runs).
enum Report {
    Comment(u64),
    ReviewReply(u64),
    CheckRun { number: u64, head_sha: String },
    Log,
}

impl Report {
    /// Posts "working on it" where the request was made; a review's check run is created when done.
    async fn open(github: &Github, trigger: &Trigger, run: Option<&str>) -> Result<Self, GithubError> {
        let working = match run {
            Some(run) => format!("Working on it… ([progress]({run}))"),
            None => "Working on it…".to_owned(),
        };
        Ok(match trigger {
            Trigger::ReviewComment { thread, comment_id, .. } => {
                Self::ReviewReply(github.reply_to_review_comment(thread.number, *comment_id, &working).await?)
            }
            Trigger::PullRequest { thread, .. } if thread.head_sha.is_some() => {
                Self::CheckRun { number: thread.number, head_sha: thread.head_sha.clone().unwrap_or_default() }
            }
            Trigger::Manual { .. } => Self::Log,
            Trigger::Comment { thread, .. } | Trigger::Issue { thread, .. } | Trigger::PullRequest { thread, .. } => {
                Self::Comment(github.comment(thread.number, &working).await?)
            }
        })
    }

    /// The comment this report keeps, left out of the prompt's conversation.
    fn comment(&self) -> Option<u64> {
        match self {
            Self::Comment(id) | Self::ReviewReply(id) => Some(*id),
            Self::CheckRun { .. } | Self::Log => None,
        }
    }

    async fn finish(&self, github: &Github, body: &str) -> Result<(), GithubError> {
        match self {
            Self::Comment(id) => github.update_comment(*id, body).await,
            Self::ReviewReply(id) => github.update_review_comment(*id, body).await,
            Self::CheckRun { number, head_sha } => {
                let title = format!("Review of #{number}");
                github.check_run("opencode review", head_sha, &title, body).await.map(drop)
            }
            Self::Log => Ok(()),
        }
    }
}

fn comment_id(trigger: &Trigger) -> Option<u64> {
    match trigger {
        Trigger::Comment { comment_id, .. } | Trigger::ReviewComment { comment_id, .. } => Some(*comment_id),
        _ => None,
    }
}

/// Runs one headless session on `text`; its final answer.
async fn answer(
    context: &Context,
    store: &std::sync::Arc<Store>,
    text: String,
    model: Option<ModelChoice>,
    agent: String,
) -> Result<String, CliError> {
    let engine = context.engine(std::sync::Arc::clone(store), false).await?;
    let title = text.lines().next().unwrap_or_default().chars().take(80).collect::<String>();
    let new = NewSession { title: Some(format!("GitHub: {title}")), ..NewSession::default() };
    let session = engine.runtime.create_session(&context.cwd, new).await?;
    let mut request = PromptRequest::text(&session.id, text);
    request.model = model;
    request.agent = Some(agent);
    let printer = Printer::new(Format::Default, false, &session.id);
    let result = super::run::drive(&engine.runtime, &engine.permissions, request, printer, false).await?;
    match result.outcome {
        DrainOutcome::Completed | DrainOutcome::Idle => last_answer(store, &session.id),
        DrainOutcome::Interrupted => Err(CliError::Interrupted),
        DrainOutcome::Failed { message, hint } => Err(CliError::Failed { message, hint }),
    }
}

/// The text of the session's last assistant message.
fn last_answer(store: &Store, session: &str) -> Result<String, CliError> {
    let last = store.read(|r| r.last_assistant(session))?;
    let text: Vec<&str> = last
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|part| match &part.kind {
            PartKind::Text { text, synthetic: None | Some(false), .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let text = text.join("\n\n");
    if text.trim().is_empty() {
        return Ok("I finished without a written answer; see the run's log.".to_owned());
    }
    Ok(text)
}

fn footer(body: &str, run: Option<&str>) -> String {
    match run {
        Some(run) => format!("{}\n\n<sub>opencode · [run]({run})</sub>", body.trim()),
        None => format!("{}\n\n<sub>opencode</sub>", body.trim()),
    }
}

fn github_error(err: GithubError) -> CliError {
    CliError::Failed { message: err.to_string(), hint: err.hint().to_owned() }
}
