//! `core/skill-guidance`: names and descriptions of the skills the selected agent may use.
//!
//! Skill discovery and permission filtering belong to the tool registry; this source takes their
//! result from an async producer. Bodies and locations stay behind the permission-checked `skill` tool.

use std::future::Future;

use serde::Deserialize;
use serde::Serialize;

use super::SKILL_GUIDANCE;
use crate::key::SourceKey;
use crate::source::ContextSource;
use crate::source::Loaded;
use crate::source::SystemContext;

/// One skill the agent may load.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
}

impl SkillSummary {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self { name: name.into(), description: description.into() }
    }
}

/// The skill guidance source over an async producer of the permitted skills.
pub struct SkillGuidance<F> {
    key: SourceKey,
    skills: F,
}

impl<F, Fut> SkillGuidance<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Loaded<Vec<SkillSummary>>> + Send,
{
    pub fn new(skills: F) -> Self {
        Self { key: SourceKey::builtin(SKILL_GUIDANCE), skills }
    }
}

/// The selected agent's skill guidance as a context to combine with the registry's.
pub fn skill_guidance<F, Fut>(skills: F) -> SystemContext
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Loaded<Vec<SkillSummary>>> + Send,
{
    SystemContext::make(SkillGuidance::new(skills))
}

impl<F, Fut> ContextSource for SkillGuidance<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Loaded<Vec<SkillSummary>>> + Send,
{
    type Value = Vec<SkillSummary>;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<Vec<SkillSummary>> {
        match (self.skills)().await {
            // Sorted so that discovery order never shows in the rendered text.
            Loaded::Value(mut skills) => {
                skills.sort();
                skills.dedup();
                Loaded::Value(skills)
            }
            Loaded::Unavailable => Loaded::Unavailable,
        }
    }

    fn baseline(&self, current: &Vec<SkillSummary>) -> String {
        render(current)
    }

    fn update(&self, _previous: &Vec<SkillSummary>, current: &Vec<SkillSummary>) -> String {
        format!(
            "The available skills have changed. This list supersedes the previous available skills list.\n{}",
            render(current)
        )
    }

    fn removed(&self, _previous: &Vec<SkillSummary>) -> Option<String> {
        Some("Skill guidance is no longer available. Do not use any previously listed skill.".to_owned())
    }
}

fn render(skills: &[SkillSummary]) -> String {
    let mut lines = vec![
        "Skills provide specialized instructions and workflows for specific tasks.".to_owned(),
        "Use the skill tool to load a skill when a task matches its description.".to_owned(),
    ];
    if skills.is_empty() {
        lines.push("No skills are currently available.".to_owned());
    } else {
        lines.push("<available_skills>".to_owned());
        for skill in skills {
            lines.push("  <skill>".to_owned());
            lines.push(format!("    <name>{}</name>", skill.name));
            lines.push(format!("    <description>{}</description>", skill.description));
            lines.push("  </skill>".to_owned());
        }
        lines.push("</available_skills>".to_owned());
    }
    lines.join("\n")
}
