//! Environment, date and skill guidance sources.

use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;

use opencode_system_context::Loaded;
use opencode_system_context::Reconciled;
use opencode_system_context::SystemContext;
use opencode_system_context::builtin::CalendarDate;
use opencode_system_context::builtin::DateSource;
use opencode_system_context::builtin::Environment;
use opencode_system_context::builtin::SkillSummary;
use opencode_system_context::builtin::core_context;
use opencode_system_context::builtin::host_platform;
use opencode_system_context::builtin::skill_guidance;
use pretty_assertions::assert_eq;

fn scripted_clock(date: CalendarDate) -> (DateSource, Arc<Mutex<CalendarDate>>) {
    let today = Arc::new(Mutex::new(date));
    let clock = Arc::clone(&today);
    (DateSource::with_clock(move || *clock.lock().unwrap()), today)
}

#[tokio::test]
async fn environment_then_date_render_like_opencode() {
    let (date, _) = scripted_clock(CalendarDate { year: 2026, month: 11, day: 24 });
    let environment = Environment::new(Path::new("/work/app/src"), Path::new("/work/app"), true);
    let generation = core_context(environment, date).initialize().await.unwrap();
    let expected = format!(
        "Here is some useful information about the environment you are running in:\n<env>\n  Working directory: /work/app/src\n  Workspace root folder: /work/app\n  Is directory a git repo: yes\n  Platform: {}\n</env>\n\nToday's date: Tue Nov 24 2026",
        host_platform()
    );
    assert_eq!(generation.baseline.text, expected);
}

#[tokio::test]
async fn a_new_day_announces_only_the_newly_effective_date() {
    let (date, today) = scripted_clock(CalendarDate { year: 2026, month: 12, day: 31 });
    let context = SystemContext::make(date);
    let generation = context.initialize().await.unwrap();
    assert_eq!(generation.baseline.text, "Today's date: Thu Dec 31 2026");
    *today.lock().unwrap() = CalendarDate { year: 2027, month: 1, day: 1 };
    assert_eq!(
        context.reconcile(&generation.snapshot).await.unwrap(),
        Reconciled::Updated {
            text: "Today's date is now: Fri Jan 01 2027".into(),
            snapshot: SystemContext::make(DateSource::with_clock(|| CalendarDate { year: 2027, month: 1, day: 1 }))
                .initialize()
                .await
                .unwrap()
                .snapshot,
        }
    );
}

#[tokio::test]
async fn the_host_local_date_is_a_real_date() {
    let generation = SystemContext::make(DateSource::host_local()).initialize().await.unwrap();
    let text = generation.baseline.text.strip_prefix("Today's date: ").unwrap();
    // `Www Mmm DD YYYY`
    let fields: Vec<&str> = text.split(' ').collect();
    assert_eq!(fields.len(), 4, "{text}");
    assert_eq!(fields[2].len(), 2, "{text}");
    assert!(fields[3].parse::<i32>().unwrap() >= 2024, "{text}");
}

#[tokio::test]
async fn skill_guidance_lists_permitted_skills_sorted_and_supersedes_on_change() {
    let skills =
        Arc::new(Mutex::new(vec![SkillSummary::new("zeta", "Last one"), SkillSummary::new("alpha", "First one")]));
    let producer = Arc::clone(&skills);
    let context = skill_guidance(move || {
        let current = producer.lock().unwrap().clone();
        async move { Loaded::Value(current) }
    });
    let generation = context.initialize().await.unwrap();
    assert_eq!(
        generation.baseline.text,
        "Skills provide specialized instructions and workflows for specific tasks.\nUse the skill tool to load a skill when a task matches its description.\n<available_skills>\n  <skill>\n    <name>alpha</name>\n    <description>First one</description>\n  </skill>\n  <skill>\n    <name>zeta</name>\n    <description>Last one</description>\n  </skill>\n</available_skills>"
    );

    skills.lock().unwrap().clear();
    let Reconciled::Updated { text, .. } = context.reconcile(&generation.snapshot).await.unwrap() else {
        panic!("expected an update");
    };
    assert_eq!(
        text,
        "The available skills have changed. This list supersedes the previous available skills list.\nSkills provide specialized instructions and workflows for specific tasks.\nUse the skill tool to load a skill when a task matches its description.\nNo skills are currently available."
    );

    // Switching to an agent with no skill guidance withdraws it.
    let Reconciled::Updated { text, .. } = SystemContext::empty().reconcile(&generation.snapshot).await.unwrap() else {
        panic!("expected a removal");
    };
    assert_eq!(text, "Skill guidance is no longer available. Do not use any previously listed skill.");
}
