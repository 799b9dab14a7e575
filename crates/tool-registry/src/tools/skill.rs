//! `skill`: loads a skill's instructions. Skills are `SKILL.md` files (YAML front matter with `name`
//! and `description`, then the instructions) found under `{skill,skills}/**/SKILL.md` in config
//! directories and the project's `.opencode`, and under `.claude/skills/**` and `.agents/skills/**`
//! from the project directory upward.

use std::path::Path;
use std::path::PathBuf;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// One discovered skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    pub content: String,
}

#[derive(Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
}

/// Discovers skills: `config_dirs` (config directories and `<project>/.opencode`) and the external
/// `.claude/skills`/`.agents/skills` folders from `project` up to `stop` (inclusive). The first skill
/// of a name wins; malformed files are skipped with a warning.
pub fn discover(config_dirs: &[PathBuf], project: &Path, stop: Option<&Path>) -> Vec<Skill> {
    let mut roots: Vec<PathBuf> = config_dirs.iter().flat_map(|dir| [dir.join("skill"), dir.join("skills")]).collect();
    let mut dir = Some(project);
    while let Some(current) = dir {
        roots.push(current.join(".claude/skills"));
        roots.push(current.join(".agents/skills"));
        if stop == Some(current) {
            break;
        }
        dir = current.parent();
    }
    let mut skills: Vec<Skill> = Vec::new();
    for root in roots.iter().filter(|root| root.is_dir()) {
        let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(root)
            .standard_filters(false)
            .build()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name() == "SKILL.md")
            .map(ignore::DirEntry::into_path)
            .collect();
        files.sort();
        for path in files {
            match load(&path) {
                Ok(skill) if skills.iter().all(|known| known.name != skill.name) => skills.push(skill),
                Ok(_) => {}
                Err(reason) => tracing::warn!(path = %path.display(), %reason, "skipping a skill"),
            }
        }
    }
    skills
}

fn load(path: &Path) -> Result<Skill, String> {
    let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
    let (front, body) = opencode_config::split_front_matter(&text);
    let front = opencode_config::front_matter(front.ok_or("missing front matter")?).map_err(|err| err.to_string())?;
    let front: FrontMatter = serde_json::from_value(front).map_err(|err| err.to_string())?;
    Ok(Skill {
        name: front.name,
        description: front.description,
        path: path.to_owned(),
        content: body.trim().to_owned(),
    })
}

/// The `skill` tool.
#[derive(Debug)]
pub struct SkillTool {
    skills: Vec<Skill>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SkillInput {
    /// The name of the skill to load.
    pub name: String,
}

impl SkillTool {
    pub fn new(skills: Vec<Skill>) -> Self {
        Self { skills }
    }
}

impl TypedTool for SkillTool {
    type Input = SkillInput;
    const NAME: &'static str = "skill";

    fn description(&self) -> String {
        let mut text = "Loads a skill: specialized instructions for a kind of task. Available skills:\n".to_owned();
        if self.skills.is_empty() {
            text.push_str("(none)\n");
        }
        for skill in &self.skills {
            text.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
        text
    }

    fn run<'a>(&'a self, input: SkillInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(skill) = self.skills.iter().find(|skill| skill.name == input.name) else {
                let known: Vec<&str> = self.skills.iter().map(|skill| skill.name.as_str()).collect();
                return Err(ToolError::model(format!(
                    "Skill \"{}\" not found. Available skills: {}",
                    input.name,
                    known.join(", ")
                )));
            };
            ctx.ask_simple("skill", &skill.name).await?;
            let base = skill.path.parent().unwrap_or(&skill.path).display().to_string();
            Ok(ToolOutput::text(format!(
                "<skill_content name=\"{}\">\n# Skill: {}\n\n{}\n\nBase directory for this skill: {base}\n</skill_content>",
                skill.name, skill.name, skill.content
            ))
            .with_title(format!("Loaded skill: {}", skill.name))
            .with_metadata("dir", base))
        })
    }
}
