//! The built-in Context Sources, registered through the same registry as any other contributor.
//!
//! | contribution key | sources | value |
//! |---|---|---|
//! | `core/builtins` | `core/environment`, then `core/date` | [`Environment`], the host-local date |
//! | `core/instructions` | `core/instructions` (absent when no file is found) | ordered [`InstructionFile`]s |
//!
//! Selected-agent skill guidance (`core/skill-guidance`, [`skill_guidance`]) is not Location-wide: the
//! runtime combines it with the registry's context right before epoch admission.
//!
//! The instruction service in [`instructions`] is the one part of this crate that reads files; the
//! composition in the crate root never does.

mod date;
mod environment;
pub mod instructions;
mod skills;

pub use date::CalendarDate;
pub use date::DateSource;
pub use environment::Environment;
pub use environment::EnvironmentSource;
pub use environment::host_platform;
pub use instructions::InstructionFetcher;
pub use instructions::InstructionFile;
pub use instructions::InstructionSettings;
pub use instructions::Instructions;
pub use skills::SkillGuidance;
pub use skills::SkillSummary;
pub use skills::skill_guidance;

use crate::error::SystemContextError;
use crate::key::SourceKey;
use crate::registry::Contribution;
use crate::registry::SystemContextRegistry;
use crate::source::SystemContext;

/// Contribution key of the environment and date sources.
pub const BUILTINS: &str = "core/builtins";
/// Source key of the environment.
pub const ENVIRONMENT: &str = "core/environment";
/// Source key of the date.
pub const DATE: &str = "core/date";
/// Contribution and source key of the ambient instructions.
pub const INSTRUCTIONS: &str = "core/instructions";
/// Source key of the selected agent's skill guidance.
pub const SKILL_GUIDANCE: &str = "core/skill-guidance";

/// The environment then the date, as one context.
pub fn core_context(environment: Environment, date: DateSource) -> SystemContext {
    SystemContext::combine([SystemContext::make(EnvironmentSource::new(environment)), SystemContext::make(date)])
        // Two distinct constant keys: combining cannot fail.
        .unwrap_or_default()
}

/// Registers the Location-wide built-ins: `core/builtins` (environment, date) and
/// `core/instructions`. Keep the returned contributions for as long as the Location lives.
pub fn register_builtins(
    registry: &SystemContextRegistry,
    environment: Environment,
    date: DateSource,
    instructions: Instructions,
) -> Result<Vec<Contribution>, SystemContextError> {
    Ok(vec![
        registry.register(SourceKey::builtin(BUILTINS), core_context(environment, date))?,
        registry.register(SourceKey::builtin(INSTRUCTIONS), instructions)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_key_is_valid() {
        for key in [BUILTINS, ENVIRONMENT, DATE, INSTRUCTIONS, SKILL_GUIDANCE] {
            assert_eq!(SourceKey::new(key).unwrap(), SourceKey::builtin(key));
        }
    }
}
