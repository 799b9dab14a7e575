//! Discovery, merge order, JSONC, substitution and error positions, with real files in temp dirs.

use std::path::{Path, PathBuf};

use opencode_config::{
    AgentMode, ConfigError, ConfigSource, Env, LoadOptions, LoadedConfig, Paths, PermissionAction, PluginSpec, load,
};
use pretty_assertions::assert_eq;
use serde_json::json;

/// A home with a global config dir and a git project with a nested working directory.
struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    cwd: PathBuf,
    env: Env,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let project = root.path().join("project");
        let cwd = project.join("packages/app");
        std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let env = Env::from_pairs([("HOME", home.to_string_lossy().into_owned())]);
        Self { _root: root, home, project, cwd, env }
    }

    fn global(&self) -> PathBuf {
        self.home.join(".config/opencode")
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn load(&self) -> LoadedConfig {
        load(&LoadOptions::new(self.env.clone(), &self.cwd))
    }
}

#[test]
fn later_sources_win_and_objects_merge() {
    let world = World::new();
    world.write(
        &world.global().join("opencode.json"),
        r#"{"model": "anthropic/claude-sonnet-4-5", "small_model": "openai/gpt-5-mini", "provider": {"openai": {"options": {"apiKey": "a"}}}}"#,
    );
    world.write(
        &world.project.join("opencode.json"),
        r#"{"model": "openai/gpt-5", "provider": {"openai": {"options": {"baseURL": "http://proxy"}}}}"#,
    );
    world.write(&world.cwd.join("opencode.jsonc"), "{\n  // closest\n  \"default_agent\": \"plan\",\n}");
    let loaded = world.load();
    assert_eq!(loaded.errors.len(), 0, "{:?}", loaded.errors);
    let config = &loaded.config;
    assert_eq!(config.model.as_deref(), Some("openai/gpt-5"));
    assert_eq!(config.small_model.as_deref(), Some("openai/gpt-5-mini"));
    assert_eq!(config.default_agent.as_deref(), Some("plan"));
    let openai = &config.provider["openai"].options;
    assert_eq!((openai.api_key.as_deref(), openai.base_url.as_deref()), (Some("a"), Some("http://proxy")));
    assert_eq!(
        loaded.sources["model"],
        vec![
            ConfigSource::Global(world.global().join("opencode.json")),
            ConfigSource::Project(world.project.join("opencode.json")),
        ]
    );
    assert_eq!(loaded.sources["default_agent"], vec![ConfigSource::Project(world.cwd.join("opencode.jsonc"))]);
}

#[test]
fn project_files_apply_root_first() {
    let world = World::new();
    world.write(&world.project.join("opencode.json"), r#"{"model": "root/m", "username": "root"}"#);
    world.write(&world.cwd.join("opencode.json"), r#"{"model": "leaf/m"}"#);
    let loaded = world.load();
    assert_eq!(loaded.config.model.as_deref(), Some("leaf/m"));
    assert_eq!(loaded.config.username.as_deref(), Some("root"));
}

#[test]
fn plugin_and_instructions_concatenate_without_duplicates() {
    let world = World::new();
    world.write(&world.global().join("opencode.json"), r#"{"plugin": ["a", "b"], "instructions": ["AGENTS.md"]}"#);
    world.write(
        &world.project.join("opencode.json"),
        r#"{"plugin": ["b", ["c", {"x": 1}]], "instructions": ["docs/*.md"]}"#,
    );
    let config = world.load().config;
    assert_eq!(
        config.plugin,
        vec![
            PluginSpec::Name("a".into()),
            PluginSpec::Name("b".into()),
            PluginSpec::WithOptions("c".into(), json!({"x": 1}))
        ]
    );
    assert_eq!(config.instructions, vec!["AGENTS.md".to_owned(), "docs/*.md".to_owned()]);
}

#[test]
fn env_sources_come_last_in_order() {
    let mut world = World::new();
    let explicit = world.home.join("custom.json");
    world.write(&explicit, r#"{"model": "explicit/m", "username": "explicit"}"#);
    world.write(&world.project.join("opencode.json"), r#"{"model": "project/m"}"#);
    world.env.set("OPENCODE_CONFIG", explicit.to_string_lossy());
    world.env.set("OPENCODE_CONFIG_CONTENT", r#"{"small_model": "inline/m"}"#);
    world.env.set("OPENCODE_PERMISSION", r#"{"bash": "deny"}"#);
    world.write(
        &world.project.join("opencode.json"),
        r#"{"model": "project/m", "permission": {"edit": "ask", "bash": "allow"}}"#,
    );
    let loaded = world.load();
    assert_eq!(loaded.config.model.as_deref(), Some("project/m"), "project beats OPENCODE_CONFIG");
    assert_eq!(loaded.config.username.as_deref(), Some("explicit"));
    assert_eq!(loaded.config.small_model.as_deref(), Some("inline/m"));
    let rules = loaded.config.permission.unwrap().rules();
    assert!(rules.contains(&("bash".into(), "*".into(), PermissionAction::Deny)), "{rules:?}");
    assert!(rules.contains(&("edit".into(), "*".into(), PermissionAction::Ask)), "{rules:?}");
    assert_eq!(loaded.sources["small_model"], vec![ConfigSource::EnvContent]);
    assert_eq!(loaded.sources["permission"].last(), Some(&ConfigSource::EnvPermission));
}

#[test]
fn disabling_project_config_skips_project_files_and_dirs() {
    let mut world = World::new();
    world.write(&world.global().join("opencode.json"), r#"{"model": "global/m"}"#);
    world.write(&world.project.join("opencode.json"), r#"{"model": "project/m"}"#);
    world.write(&world.project.join(".opencode/opencode.json"), r#"{"model": "dir/m"}"#);
    assert_eq!(world.load().config.model.as_deref(), Some("dir/m"));
    world.env.set("OPENCODE_DISABLE_PROJECT_CONFIG", "1");
    assert_eq!(world.load().config.model.as_deref(), Some("global/m"));
}

#[test]
fn substitution_reads_env_and_files_relative_to_the_config() {
    let mut world = World::new();
    world.env.set("MY_KEY", "sk-env");
    world.write(&world.project.join("prompts/review.txt"), "Review \"carefully\".\n");
    world.write(
        &world.project.join("opencode.json"),
        r#"{"provider": {"openai": {"options": {"apiKey": "{env:MY_KEY}"}}}, "agent": {"review": {"prompt": "{file:prompts/review.txt}"}}}"#,
    );
    let config = world.load().config;
    assert_eq!(config.provider["openai"].options.api_key.as_deref(), Some("sk-env"));
    assert_eq!(config.agent["review"].prompt.as_deref(), Some("Review \"carefully\"."));
}

#[test]
fn a_malformed_file_is_reported_with_its_position_and_skipped() {
    let world = World::new();
    world.write(&world.global().join("opencode.json"), r#"{"model": "global/m", "username": "me"}"#);
    let broken = world.project.join("opencode.json");
    world.write(&broken, "{\n  \"model\": \"project/m\"\n  \"share\": \"auto\"\n}\n");
    let loaded = world.load();
    assert_eq!(loaded.config.model.as_deref(), Some("global/m"));
    assert_eq!(loaded.config.username.as_deref(), Some("me"));
    let [ConfigError::Parse { origin, line, column, message }] = loaded.errors.as_slice() else {
        panic!("expected one parse error, got {:?}", loaded.errors)
    };
    assert_eq!((origin.as_str(), *line, *column), (broken.to_string_lossy().as_ref(), 3, 3));
    assert_eq!(message, "expected `,` or `}`");
    assert_eq!(loaded.errors[0].to_string(), format!("{}:3:3: expected `,` or `}}`", broken.display()));
}

#[test]
fn a_wrong_type_is_reported_where_it_is() {
    let world = World::new();
    let path = world.project.join("opencode.json");
    world.write(&path, "{\n  \"share\": \"sometimes\"\n}");
    let loaded = world.load();
    let [ConfigError::Parse { line, message, .. }] = loaded.errors.as_slice() else {
        panic!("expected one parse error, got {:?}", loaded.errors)
    };
    assert_eq!(*line, 2);
    assert!(message.starts_with("unknown variant `sometimes`"), "{message}");
}

#[test]
fn unknown_keys_warn_and_are_kept() {
    let world = World::new();
    world.write(&world.project.join("opencode.json"), r#"{"model": "a/b", "shiny_new_key": {"x": 1}}"#);
    let loaded = world.load();
    assert!(loaded.errors.is_empty());
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].message.contains("shiny_new_key"));
    assert_eq!(loaded.config.extra["shiny_new_key"], json!({"x": 1}));
}

#[test]
fn agent_markdown_in_opencode_dirs_becomes_agents() {
    let world = World::new();
    world.write(
        &world.project.join(".opencode/agent/review.md"),
        "---\ndescription: Reviews changes\nmode: subagent\ntools:\n  write: false\n---\nYou are a careful reviewer.\n",
    );
    world.write(&world.project.join("opencode.json"), r#"{"agent": {"review": {"temperature": 0.2}}}"#);
    let loaded = world.load();
    let review = &loaded.config.agent["review"];
    assert_eq!(review.mode, Some(AgentMode::Subagent));
    assert_eq!(review.prompt.as_deref(), Some("You are a careful reviewer."));
    assert_eq!(review.temperature, Some(0.2));
    assert_eq!(review.tools.as_ref().unwrap()["write"], false);
}

#[test]
fn command_markdown_in_config_dirs_becomes_commands_in_opencodes_order() {
    let world = World::new();
    world.write(
        &world.project.join("opencode.json"),
        r#"{"command": {"test": {"template": "from json", "agent": "plan"}, "lint": {"template": "lint it"}}}"#,
    );
    world.write(
        &world.global().join("command/global.md"),
        "---
description: everywhere
---
Global $ARGUMENTS
",
    );
    world.write(
        &world.project.join(".opencode/commands/test.md"),
        "---
model: a/b
---
Run the tests for $1.
",
    );
    world.write(&world.cwd.join(".opencode/command/git/commit.md"), "Commit !`git status`");
    world.write(
        &world.cwd.join(".opencode/command/bad.md"),
        "---
subtask: [
---
x",
    );
    let loaded = world.load();
    let commands = opencode_config::commands::commands(&loaded.config);
    let names: Vec<&str> = commands.keys().map(String::as_str).collect();
    assert_eq!(names, ["init", "test", "lint", "global", "git/commit"]);
    // A markdown file merges over the JSON definition of the same name, as OpenCode's deep merge.
    let test = &commands["test"];
    assert_eq!(
        (test.template.as_str(), test.agent.as_deref(), test.model.as_deref()),
        ("Run the tests for $1.", Some("plan"), Some("a/b"))
    );
    assert_eq!(commands["global"].description.as_deref(), Some("everywhere"));
    assert_eq!(commands["git/commit"].template, "Commit !`git status`");
    assert_eq!(loaded.errors.len(), 1, "{:?}", loaded.errors);
    assert!(loaded.errors[0].to_string().contains("bad.md"), "{}", loaded.errors[0]);
    assert!(loaded.sources["command"].iter().any(|source| matches!(source, ConfigSource::CommandFile(_))));
}

#[test]
fn project_command_files_are_skipped_when_project_config_is_disabled() {
    let mut world = World::new();
    world.write(&world.project.join(".opencode/command/local.md"), "local");
    world.write(&world.global().join("commands/mine.md"), "mine");
    world.env = Env::from_pairs([
        ("HOME", world.home.to_string_lossy().into_owned()),
        ("OPENCODE_DISABLE_PROJECT_CONFIG", "1".to_owned()),
    ]);
    let commands = opencode_config::commands::commands(&world.load().config);
    assert_eq!(commands.keys().map(String::as_str).collect::<Vec<_>>(), ["init", "mine"]);
}

#[test]
fn legacy_mode_entries_become_primary_agents() {
    let world = World::new();
    world.write(
        &world.project.join("opencode.json"),
        r#"{"mode": {"fast": {"model": "groq/llama"}}, "tools": {"bash": false}}"#,
    );
    let config = world.load().config;
    assert_eq!(config.agent["fast"].mode, Some(AgentMode::Primary));
    assert_eq!(config.tools["bash"], false);
}

#[test]
fn paths_come_from_the_explicit_environment() {
    let env = Env::from_pairs([("HOME", "/h"), ("XDG_CACHE_HOME", "/c")]);
    let paths = env.paths();
    assert_eq!(
        paths,
        Paths {
            data: "/h/.local/share/opencode".into(),
            config: "/h/.config/opencode".into(),
            cache: "/c/opencode".into(),
            state: "/h/.local/state/opencode".into()
        }
    );
}
