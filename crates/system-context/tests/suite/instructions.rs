//! Instruction discovery on real directory trees.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use opencode_system_context::Loaded;
use opencode_system_context::Reconciled;
use opencode_system_context::SystemContextError;
use opencode_system_context::SystemContextRegistry;
use opencode_system_context::builtin::INSTRUCTIONS;
use opencode_system_context::builtin::InstructionFetcher;
use opencode_system_context::builtin::InstructionFile;
use opencode_system_context::builtin::InstructionSettings;
use opencode_system_context::builtin::Instructions;
use pretty_assertions::assert_eq;

use super::support::TempDir;
use super::support::key;

/// `<tmp>/config` (global), `<tmp>/home`, and a project at `<tmp>/repo` with the Location at
/// `<tmp>/repo/pkg/app`.
struct Tree {
    tmp: TempDir,
}

impl Tree {
    fn new() -> Self {
        let tmp = TempDir::new();
        tmp.mkdir("config");
        tmp.mkdir("home");
        tmp.mkdir("repo/pkg/app");
        Self { tmp }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.tmp.path().join(relative)
    }

    fn settings(&self) -> InstructionSettings {
        InstructionSettings {
            global_config_dir: self.path("config"),
            home_dir: Some(self.path("home")),
            directory: self.path("repo/pkg/app"),
            project_root: self.path("repo"),
            ..InstructionSettings::default()
        }
    }

    fn write(&self, relative: &str, content: &str) -> PathBuf {
        self.tmp.write(relative, content)
    }

    fn file(&self, relative: &str, content: &str) -> InstructionFile {
        InstructionFile { path: self.path(relative).display().to_string(), content: content.into() }
    }
}

async fn files(settings: InstructionSettings) -> Loaded<Vec<InstructionFile>> {
    Instructions::new(settings).observe().await
}

#[tokio::test]
async fn global_then_every_agents_md_from_the_location_up_to_the_project_root() {
    let tree = Tree::new();
    tree.write("config/AGENTS.md", "global rules");
    tree.write("repo/AGENTS.md", "root rules");
    tree.write("repo/pkg/app/AGENTS.md", "app rules");
    tree.write("AGENTS.md", "outside the project: never read");
    tree.write("repo/pkg/CLAUDE.md", "claude: loses to AGENTS.md");
    assert_eq!(
        files(tree.settings()).await,
        Loaded::Value(vec![
            tree.file("config/AGENTS.md", "global rules"),
            tree.file("repo/pkg/app/AGENTS.md", "app rules"),
            tree.file("repo/AGENTS.md", "root rules"),
        ])
    );

    let generation = Instructions::new(tree.settings()).context().await.initialize().await.unwrap();
    let expected = format!(
        "Instructions from: {}\nglobal rules\n\nInstructions from: {}\napp rules\n\nInstructions from: {}\nroot rules",
        tree.path("config/AGENTS.md").display(),
        tree.path("repo/pkg/app/AGENTS.md").display(),
        tree.path("repo/AGENTS.md").display()
    );
    assert_eq!(generation.baseline.text, expected);
}

#[tokio::test]
async fn claude_md_is_read_when_there_is_no_agents_md_unless_disabled() {
    let tree = Tree::new();
    tree.write("home/.claude/CLAUDE.md", "personal");
    tree.write("repo/CLAUDE.md", "project claude");
    assert_eq!(
        files(tree.settings()).await,
        Loaded::Value(vec![
            tree.file("home/.claude/CLAUDE.md", "personal"),
            tree.file("repo/CLAUDE.md", "project claude")
        ])
    );
    let disabled = InstructionSettings { disable_claude_code: true, ..tree.settings() };
    assert_eq!(files(disabled).await, Loaded::Value(vec![]));
}

#[tokio::test]
async fn disabled_project_config_keeps_global_instructions_only() {
    let tree = Tree::new();
    tree.write("config/AGENTS.md", "global");
    tree.write("repo/AGENTS.md", "project");
    tree.write("repo/docs/style.md", "style");
    let settings =
        InstructionSettings { disable_project_config: true, instructions: vec!["docs/*.md".into()], ..tree.settings() };
    assert_eq!(files(settings).await, Loaded::Value(vec![tree.file("config/AGENTS.md", "global")]));
}

#[tokio::test]
async fn a_location_outside_the_project_reads_no_project_files() {
    let tree = Tree::new();
    tree.write("repo/AGENTS.md", "project");
    tree.write("elsewhere/AGENTS.md", "elsewhere");
    let settings = InstructionSettings { directory: tree.path("elsewhere"), ..tree.settings() };
    assert_eq!(files(settings).await, Loaded::Value(vec![]));
}

struct Fetcher;

impl InstructionFetcher for Fetcher {
    fn fetch<'a>(&'a self, url: &'a str) -> Pin<Box<dyn Future<Output = Option<String>> + Send + 'a>> {
        Box::pin(async move { url.ends_with("/ok.md").then(|| format!("fetched {url}")) })
    }
}

#[tokio::test]
async fn config_instructions_add_globs_absolute_paths_and_urls_in_order_without_duplicates() {
    let tree = Tree::new();
    tree.write("repo/AGENTS.md", "root");
    tree.write("repo/docs/b.md", "b");
    tree.write("repo/docs/a.md", "a");
    tree.write("repo/pkg/app/docs/local.md", "local");
    tree.write("home/notes.md", "notes");
    let absolute = tree.write("shared/team.md", "team");
    let settings = InstructionSettings {
        instructions: vec![
            "https://example.test/ok.md".into(),
            "docs/*.md".into(),
            absolute.display().to_string(),
            "~/notes.md".into(),
            "AGENTS.md".into(),
            "https://example.test/missing.md".into(),
        ],
        ..tree.settings()
    };
    let loaded = Instructions::new(settings.clone()).with_fetcher(Fetcher).observe().await;
    assert_eq!(
        loaded,
        Loaded::Value(vec![
            tree.file("repo/AGENTS.md", "root"),
            InstructionFile {
                path: "https://example.test/ok.md".into(),
                content: "fetched https://example.test/ok.md".into()
            },
            tree.file("repo/pkg/app/docs/local.md", "local"),
            tree.file("repo/docs/a.md", "a"),
            tree.file("repo/docs/b.md", "b"),
            tree.file("shared/team.md", "team"),
            tree.file("home/notes.md", "notes"),
        ])
    );
    // Without a fetcher, URL entries are skipped, not fatal.
    let Loaded::Value(without) = files(settings).await else { panic!("expected files") };
    assert_eq!(without.len(), 6);
}

/// Makes `relative` a file that exists but cannot be read (even by root).
fn unreadable(tree: &Tree, relative: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = tree.write(relative, "secret");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&path).is_ok() {
        // Root reads anything; a regular file that fails every read does the job instead.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/proc/self/mem", &path).unwrap();
    }
}

#[tokio::test]
async fn an_unreadable_discovered_file_makes_the_source_unavailable_not_empty() {
    let tree = Tree::new();
    tree.write("repo/AGENTS.md", "root");
    let instructions = Instructions::new(tree.settings());
    let admitted = instructions.context().await.initialize().await.unwrap();

    unreadable(&tree, "repo/pkg/AGENTS.md");
    assert_eq!(instructions.observe().await, Loaded::Unavailable);
    // Blocks a first baseline; keeps the admitted set at a later boundary (stale-while-revalidate).
    let err = instructions.context().await.initialize().await.unwrap_err();
    assert_eq!(err, SystemContextError::InitializationBlocked { keys: vec![key(INSTRUCTIONS)] });
    assert_eq!(instructions.context().await.reconcile(&admitted.snapshot).await.unwrap(), Reconciled::Unchanged);
}

#[tokio::test]
async fn a_changed_set_supersedes_the_previous_one_and_an_empty_set_is_withdrawn() {
    let tree = Tree::new();
    tree.write("repo/AGENTS.md", "v1");
    let registry = SystemContextRegistry::new();
    let _handle = registry.register(key(INSTRUCTIONS), Instructions::new(tree.settings())).unwrap();
    let generation = registry.load().await.unwrap().initialize().await.unwrap();

    tree.write("repo/pkg/app/AGENTS.md", "nested");
    let Reconciled::Updated { text, snapshot } =
        registry.load().await.unwrap().reconcile(&generation.snapshot).await.unwrap()
    else {
        panic!("expected an update");
    };
    assert_eq!(
        text,
        format!(
            "These instructions replace all previously loaded ambient instructions.\n\nInstructions from: {}\nnested\n\nInstructions from: {}\nv1",
            tree.path("repo/pkg/app/AGENTS.md").display(),
            tree.path("repo/AGENTS.md").display()
        )
    );

    std::fs::remove_file(tree.path("repo/AGENTS.md")).unwrap();
    std::fs::remove_file(tree.path("repo/pkg/app/AGENTS.md")).unwrap();
    assert_eq!(
        registry.load().await.unwrap().reconcile(&snapshot).await.unwrap(),
        Reconciled::Updated {
            text: "Previously loaded instructions no longer apply.".into(),
            snapshot: Default::default()
        }
    );
}
