//! `opencode github run`: the agent in a GitHub Actions job. Reads the event Actions hands the job
//! (`GITHUB_EVENT_NAME`, `GITHUB_EVENT_PATH`, `GITHUB_REPOSITORY`, `GITHUB_TOKEN`, `GITHUB_API_URL`,
//! `GITHUB_SERVER_URL`, `GITHUB_RUN_ID`), decides whether it calls on the agent, posts a progress
//! comment on the thread, runs one headless session with the thread as its prompt (what would ask
//! for permission is refused and reported in the log, as `opencode run` does), and replaces the
//! progress comment with the answer, or with the cause when the run failed. A pull request's review
//! is reported as a check run on its head commit instead.
//!
//! What the agent changed in the work tree is handed back as OpenCode does it: asked from an issue
//! (or a manual run), on a new branch with a pull request that closes the issue; asked from a pull
//! request's conversation, as a commit pushed to its branch (checked out before the agent starts).
//! Commits are the agent's, with the person who asked as co-author.

use opencode_github::Decision;
use opencode_github::Git;
use opencode_github::Github;
use opencode_github::GithubError;
use opencode_github::PullRequest;
use opencode_github::Trigger;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::ModelChoice;
use opencode_session_runtime::PromptRequest;
pub mod install;

use std::sync::Arc;

use opencode_session_store::NewSession;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::Store;

use super::output::Printer;
use crate::cli::Format;
use crate::cli::GithubRunArgs;
use crate::context::Context;
use crate::context::Engine;
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
    let job = Job {
        github,
        repository,
        run_link,
        server,
        git: Git::open(&context.cwd).ok(),
        default_branch: payload["repository"]["default_branch"].as_str().map(str::to_owned),
        actor: requester(&trigger).or_else(|| env("GITHUB_ACTOR")),
    };
    let runtime = super::tokio_runtime()?;
    let result = runtime.block_on(async {
        let report = Report::open(&job.github, &trigger, job.run_link.as_deref()).await.map_err(github_error)?;
        let pull = job.prepare(&trigger).await?;
        let skip: Vec<u64> = [report.comment(), comment_id(&trigger)].into_iter().flatten().collect();
        let comments = match trigger.thread() {
            Some(thread) => job.github.comments(thread.number).await.map_err(github_error)?,
            None => Vec::new(),
        };
        let text = opencode_github::prompt(&trigger, &job.repository, &comments, &skip);
        let engine = context.engine(Arc::clone(&store), false).await?;
        let session = session(context, &engine, &text).await?;
        let answer = answer(&engine, &store, &session, text, model, args.agent.clone()).await;
        let export = args.export.as_deref().map(|path| export(&store, &session, path)).transpose();
        let outcome = match answer {
            Ok(answer) => job.hand_back(&trigger, pull.as_ref(), &answer).await.map(|line| (answer, line)),
            Err(err) => Err(err),
        };
        let body = match &outcome {
            Ok((answer, Some(line))) => format!("{}\n\n{line}", answer.trim()),
            Ok((answer, None)) => answer.clone(),
            Err(err) => format!("I could not finish: {err}"),
        };
        report.finish(&job.github, &footer(&body, job.run_link.as_deref())).await.map_err(github_error)?;
        export?;
        outcome.map(drop)
    });
    runtime.shutdown_background();
    result
}

/// What one job works with besides the session.
struct Job {
    github: Github,
    repository: String,
    run_link: Option<String>,
    server: String,
    /// The checked-out repository, when the job has one (`actions/checkout`).
    git: Option<Git>,
    default_branch: Option<String>,
    /// The GitHub login of the person who asked (the commit's co-author).
    actor: Option<String>,
}

impl Job {
    /// Asked from a pull request's conversation: its branches, and the agent works on its head
    /// (checked out when it is in this repository, so a commit can be pushed back onto it).
    async fn prepare(&self, trigger: &Trigger) -> Result<Option<PullRequest>, CliError> {
        let number = match trigger {
            Trigger::Comment { thread, .. } if thread.pull_request => thread.number,
            Trigger::ReviewComment { thread, .. } => thread.number,
            _ => return Ok(None),
        };
        let pull = self.github.pull_request(number).await.map_err(github_error)?;
        if let Some(git) = &self.git
            && pull.head_repository == self.repository
        {
            git.check_out_remote(&pull.head_ref).map_err(git_error)?;
        }
        Ok(Some(pull))
    }

    /// Hands back what the agent changed, if anything; the line the report adds about it.
    async fn hand_back(
        &self,
        trigger: &Trigger,
        pull: Option<&PullRequest>,
        answer: &str,
    ) -> Result<Option<String>, CliError> {
        let Some(git) = &self.git else { return Ok(None) };
        if !git.changed().map_err(git_error)? {
            return Ok(None);
        }
        let subject = subject(trigger);
        let actor = self.actor.as_deref();
        if let Trigger::PullRequest { .. } = trigger {
            return Ok(Some("I changed files while reviewing; a review pushes nothing.".to_owned()));
        }
        if let Some(pull) = pull {
            if pull.head_repository != self.repository {
                return Ok(Some(format!(
                    "My changes are not pushed: the branch is in {}, a fork this workflow cannot write to.",
                    pull.head_repository
                )));
            }
            let sha = git.commit_all(&subject, "", actor).map_err(git_error)?;
            git.push(&pull.head_ref).map_err(git_error)?;
            return Ok(Some(format!("Pushed {} to `{}`.", &sha[..sha.len().min(7)], pull.head_ref)));
        }
        let base = self.default_branch.clone().or_else(|| git.branch()).unwrap_or_else(|| "main".to_owned());
        let branch = branch_name(trigger);
        git.create_branch(&branch).map_err(git_error)?;
        git.commit_all(&subject, "", actor).map_err(git_error)?;
        git.push(&branch).map_err(git_error)?;
        let closes = match trigger.thread() {
            Some(thread) => format!("\n\nCloses #{}", thread.number),
            None => String::new(),
        };
        let body = footer(&format!("{}{closes}", answer.trim()), self.run_link.as_deref());
        let number = self.github.open_pull_request(&branch, &base, &subject, &body).await.map_err(github_error)?;
        Ok(Some(format!("Opened #{number}: {}/{}/pull/{number}", self.server, self.repository)))
    }
}

/// The commit's and pull request's title: the request's first line, or the thread's title.
fn subject(trigger: &Trigger) -> String {
    let line = match trigger {
        Trigger::Comment { request, .. } | Trigger::ReviewComment { request, .. } | Trigger::Manual { request } => {
            request.lines().map(str::trim).find(|line| !line.is_empty()).map(str::to_owned)
        }
        Trigger::Issue { .. } | Trigger::PullRequest { .. } => None,
    };
    let line = line.or_else(|| trigger.thread().map(|thread| thread.title.trim().to_owned()));
    let line = line.filter(|line| !line.is_empty()).unwrap_or_else(|| "Changes by opencode".to_owned());
    let mut subject: String = line.chars().take(72).collect();
    if subject.len() < line.len() {
        subject.pop();
        subject.push('…');
    }
    let mut chars = subject.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or(subject)
}

/// A new branch for an issue's changes: `opencode/issue<N>-<unix time>` (a manual run's has no
/// issue number), unique per run.
fn branch_name(trigger: &Trigger) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    match trigger.thread() {
        Some(thread) => format!("opencode/issue{}-{now}", thread.number),
        None => format!("opencode/run-{now}"),
    }
}

/// Who asked: the commenter, or the author of the issue that was opened.
fn requester(trigger: &Trigger) -> Option<String> {
    match trigger {
        Trigger::Comment { author, .. } | Trigger::ReviewComment { author, .. } => Some(author.login.clone()),
        Trigger::Issue { thread, .. } | Trigger::PullRequest { thread, .. } => Some(thread.author.login.clone()),
        Trigger::Manual { .. } => None,
    }
    .filter(|login| !login.is_empty())
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

/// The session the job works in, titled after the request.
async fn session(context: &Context, engine: &Engine, text: &str) -> Result<Session, CliError> {
    let title = text.lines().next().unwrap_or_default().chars().take(80).collect::<String>();
    let new = NewSession { title: Some(format!("GitHub: {title}")), ..NewSession::default() };
    Ok(engine.runtime.create_session(&context.cwd, new).await?)
}

/// Runs `text` headless in `session`; the final answer.
async fn answer(
    engine: &Engine,
    store: &Store,
    session: &Session,
    text: String,
    model: Option<ModelChoice>,
    agent: String,
) -> Result<String, CliError> {
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

/// Writes the session's export (the workflow uploads it as an artifact).
fn export(store: &Store, session: &Session, path: &std::path::Path) -> Result<(), CliError> {
    let text = super::sessions::exported(store, session.clone())?;
    std::fs::write(path, text).map_err(|err| CliError::Io(format!("cannot write the export {}: {err}", path.display())))
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

fn git_error(err: opencode_github::GitError) -> CliError {
    CliError::Failed {
        message: err.to_string(),
        hint: "check out the repository with `actions/checkout` (it keeps the token git pushes with) and give the token contents: write".to_owned(),
    }
}
