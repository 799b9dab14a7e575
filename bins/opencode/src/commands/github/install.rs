//! `opencode github install`: writes the workflow that runs the agent in this repository's GitHub
//! Actions and says which secrets to set. It talks to nobody: the user commits the file and sets
//! the secrets themselves.

use std::path::Path;

use opencode_github::Git;

use crate::cli::GithubInstallArgs;
use crate::context::Context;
use crate::error::CliError;

const TEMPLATE: &str = include_str!("workflow.yml");
const WORKFLOW: &str = ".github/workflows/opencode.yml";

pub fn install(context: &Context, args: GithubInstallArgs) -> Result<(), CliError> {
    let git = Git::open(&context.cwd).map_err(|_| {
        CliError::usage(
            format!("{} is not in a git repository", context.cwd.display()),
            "run it in a checkout of the repository the workflow is for",
        )
    })?;
    let model = args.model.clone().or_else(|| context.loaded.config.model.clone()).ok_or_else(|| {
        CliError::usage("no model to run the agent with", "pass --model provider/model (`opencode models` lists them)")
    })?;
    let secrets = secrets_for(context, &model)?;
    let path = git.dir().join(WORKFLOW);
    if path.exists() && !args.force {
        return Err(CliError::usage(
            format!("{} already exists", path.display()),
            "pass --force to replace it, or edit it by hand",
        ));
    }
    write(&path, &workflow(&model, &secrets, args.review))?;
    println!("wrote {WORKFLOW}");
    println!();
    println!("Next:");
    let mut step = 1;
    for secret in &secrets {
        println!("  {step}. add the repository secret {secret} (Settings → Secrets and variables → Actions)");
        step += 1;
    }
    println!("  {step}. commit and push {WORKFLOW}");
    println!("  {}. comment `/oc explain this issue` on an issue to try it", step + 1);
    Ok(())
}

/// The environment variables the model's provider reads its key from (the first one is enough;
/// models.dev lists alternatives after it).
fn secrets_for(context: &Context, model: &str) -> Result<Vec<String>, CliError> {
    let Some((provider, _)) = model.split_once('/') else {
        return Err(CliError::usage(
            format!("`{model}` is not provider/model"),
            "for example anthropic/claude-sonnet-4-5",
        ));
    };
    let (catalog, _) = context.catalog()?;
    let Some(provider) = catalog.provider(provider) else {
        return Err(CliError::usage(format!("unknown provider `{provider}`"), "`opencode models` lists the providers"));
    };
    Ok(provider.env.first().cloned().into_iter().collect())
}

fn workflow(model: &str, secrets: &[String], review: bool) -> String {
    let secrets: String = secrets.iter().map(|name| format!("          {name}: ${{{{ secrets.{name} }}}}\n")).collect();
    let secrets = if secrets.is_empty() { "          {}\n".to_owned() } else { secrets };
    let review = if review { "  pull_request:\n    types: [opened, ready_for_review]\n" } else { "" };
    TEMPLATE
        .replace("__REVIEW_TRIGGER__\n", review)
        .replace("__SECRETS__\n", &secrets)
        .replace("__MODEL__", model)
        .replace("__VERSION__", env!("CARGO_PKG_VERSION"))
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    let io = |err: std::io::Error| CliError::Io(format!("cannot write {}: {err}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}
