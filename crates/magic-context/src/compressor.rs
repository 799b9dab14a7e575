//! The compressor: keeps the archived end of the history bounded. The decay curve already fades
//! old compartments down to their anchors without a model call, but every compartment still
//! costs its heading; in a session of thousands of turns the headings alone would grow without
//! end. The compressor merges runs of adjacent archived compartments into one, deterministically
//! (the merged versions are made of the members' shorter versions), out of band after a
//! historian run.
//!
//! A merge changes m[0]'s content, yet it is never a reason to fold m[0] on a live cache: it only
//! saves heading tokens, so it waits for the next fold that happens anyway (cache expired, model
//! switch, an outgrown m[1]).

use crate::historian::CONDENSED_CHARS;
use crate::historian::OUTCOME_CHARS;
use crate::historian::clip;
use crate::render;
use crate::store::Compartment;
use crate::store::Versions;

/// At most this many compartments go into one merge.
const MAX_PER_MERGE: usize = 15;
/// The newest compartments are never merged, whatever the curve says.
const GRACE: usize = 10;
/// A compartment made by this many merges is not merged again.
const MAX_DEPTH: u8 = 5;
const TITLE_CHARS: usize = 120;

/// The merge to make now, if any: the oldest run of at least two adjacent archived compartments
/// (at the pressure `budget` puts on the history) outside the newest [`GRACE`], each already in
/// m[0] (`sequence <= folded_through`) and merged fewer than [`MAX_DEPTH`] times.
pub fn plan(compartments: &[Compartment], budget: u64, folded_through: u32) -> Option<Compartment> {
    let archived = render::archived(compartments, budget);
    let eligible = |index: usize| {
        let compartment = &compartments[index];
        archived[index] && compartment.sequence <= folded_through && compartment.depth < MAX_DEPTH
    };
    let last = compartments.len().saturating_sub(GRACE);
    let start = (0..last).find(|index| eligible(*index))?;
    let run = (start..last).take(MAX_PER_MERGE).take_while(|index| eligible(*index)).count();
    (run >= 2).then(|| merge(&compartments[start..start + run]))
}

/// One compartment in place of `members` (contiguous, oldest first): their outcomes in full,
/// condensed to fit, their titles as the outcome, their anchors together.
fn merge(members: &[Compartment]) -> Compartment {
    let (first, last) = (&members[0], &members[members.len() - 1]);
    let outcomes: Vec<String> = members
        .iter()
        .map(|member| format!("[{}-{}] {}", member.start, member.end.saturating_sub(1), member.versions.outcome))
        .collect();
    let titles: Vec<&str> = members.iter().map(|member| member.title.as_str()).collect();
    let mut anchors: Vec<&str> = Vec::new();
    for member in members {
        let files = member.versions.anchor.strip_prefix("files: ").unwrap_or(&member.versions.anchor);
        for anchor in files.split(", ").filter(|anchor| !anchor.is_empty()) {
            if !anchors.contains(&anchor) {
                anchors.push(anchor);
            }
        }
    }
    let full = outcomes.join("\n");
    Compartment {
        sequence: first.sequence,
        start: first.start,
        end: last.end,
        title: clip(&format!("{} … {}", first.title, last.title), TITLE_CHARS),
        versions: Versions {
            condensed: clip(&full, CONDENSED_CHARS),
            outcome: clip(&titles.join("; "), OUTCOME_CHARS),
            anchor: if anchors.is_empty() { String::new() } else { format!("files: {}", anchors.join(", ")) },
            full,
        },
        importance: members.iter().map(|member| member.importance).max().unwrap_or(1),
        depth: members.iter().map(|member| member.depth).max().unwrap_or(0) + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compartment(sequence: u32) -> Compartment {
        let text =
            format!("U: step {sequence}\nA: done {sequence}\nTC: edit {{\"path\":\"src/f{}.rs\"}}", sequence % 3);
        Compartment {
            sequence,
            start: sequence as usize * 4,
            end: sequence as usize * 4 + 4,
            title: format!("step {sequence}"),
            versions: crate::historian::versions(&text),
            importance: 50,
            depth: 0,
        }
    }

    #[test]
    fn the_oldest_archived_run_becomes_one_compartment() {
        let compartments: Vec<Compartment> = (1..=200).map(compartment).collect();
        let merged = plan(&compartments, 2_000, 200).expect("a tight budget archives the oldest");
        assert_eq!((merged.sequence, merged.start, merged.depth), (1, 4, 1));
        assert_eq!(merged.end, compartments[MAX_PER_MERGE - 1].end, "at most {MAX_PER_MERGE} go into one merge");
        assert_eq!(merged.title, "step 1 … step 15");
        assert!(merged.versions.full.starts_with("[4-7] U: step 1\nA: done 1\n[8-11] U: step 2"));
        assert_eq!(merged.versions.anchor, "files: src/f1.rs, src/f2.rs, src/f0.rs");
    }

    #[test]
    fn nothing_is_merged_that_m0_does_not_show_yet_or_is_recent_or_roomy() {
        let compartments: Vec<Compartment> = (1..=200).map(compartment).collect();
        assert_eq!(plan(&compartments, 2_000, 0), None, "compartments not yet folded into m[0] wait");
        assert_eq!(plan(&compartments, 10_000_000, 200), None, "a roomy budget archives nothing");
        assert_eq!(plan(&compartments[..GRACE], 1, 200), None, "the newest are never merged");
    }

    #[test]
    fn merges_stop_at_the_maximum_depth() {
        let mut compartments: Vec<Compartment> = (1..=200).map(compartment).collect();
        compartments.iter_mut().take(100).for_each(|compartment| compartment.depth = MAX_DEPTH);
        let merged = plan(&compartments, 2_000, 200).unwrap();
        assert_eq!(merged.sequence, 101);
    }
}
