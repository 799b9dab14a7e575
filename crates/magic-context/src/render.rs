//! Rendering of the two history slots. m[0] is the frozen baseline (every compartment at its
//! decayed tier, the project memories); m[1] is the delta since m[0] was rendered (newer
//! compartments in full, newer memories, session notes). Both are pure functions of their inputs,
//! so the same state always renders the same bytes.

use std::fmt::Write as _;

use crate::store::Compartment;
use crate::store::Memory;

/// m[1] when nothing is new: never empty, so the slot (and its cache breakpoint) keeps its place.
pub const EMPTY_M1: &str = "<session-history-since>(no new content since last materialization)</session-history-since>";

/// Estimated tokens of a text (four bytes a token, like the provider-side estimate).
pub fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The baseline slot: compartments decayed to fit `budget` tokens, then the memories.
pub fn m0(compartments: &[Compartment], memories: &[Memory], budget: u64) -> String {
    let mut out = String::from("<session-history>\n");
    for (compartment, tier) in compartments.iter().zip(decay(compartments, budget)) {
        render_compartment(&mut out, compartment, tier);
    }
    out.push_str("</session-history>\n<project-memory>\n");
    for memory in memories {
        render_memory(&mut out, memory);
    }
    out.push_str("</project-memory>");
    out
}

/// The delta slot; [`EMPTY_M1`] when there is nothing to show.
pub fn m1(compartments: &[Compartment], memories: &[Memory], notes: &[(i64, String)]) -> String {
    if compartments.is_empty() && memories.is_empty() && notes.is_empty() {
        return EMPTY_M1.to_owned();
    }
    let mut out = String::from("<session-history-since>\n");
    for compartment in compartments {
        render_compartment(&mut out, compartment, Tier::Full);
    }
    if !memories.is_empty() {
        out.push_str("<new-memories>\n");
        memories.iter().for_each(|memory| render_memory(&mut out, memory));
        out.push_str("</new-memories>\n");
    }
    if !notes.is_empty() {
        out.push_str("<notes>\n");
        for (id, note) in notes {
            let _infallible = writeln!(out, "- [{id}] {}", escape(note));
        }
        out.push_str("</notes>\n");
    }
    out.push_str("</session-history-since>");
    out
}

/// Which of a compartment's four versions is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// p1: everything.
    Full,
    /// p2: condensed, about a third.
    Condensed,
    /// p3: the requests and their outcome.
    Outcome,
    /// p4: the heading and the anchors (files, names) only.
    Anchor,
}

/// Half-life in compartments at importance 50 and pressure 1.
const H50: f64 = 24.0;
/// Importance points that double the half-life.
const D: f64 = 25.0;
/// Age thresholds (in half-lives) between the tiers.
const Z: [f64; 4] = [0.201, 0.729, 1.322, 2.587];
/// Pressure never falls below this (so a roomy budget still lets the oldest fade, slowly).
const P_FLOOR: f64 = 0.1;

/// Picks one tier per compartment with the decay curve, then makes the whole fit `budget`.
///
/// A compartment's age `a` (0 for the newest) is measured in half-lives `H = H50 / p`, where the
/// pressure `p` is what the history would cost at full detail over the budget (at least
/// [`P_FLOOR`]): `z = a / H` picks full below 0.201, condensed below 0.729, the outcome below
/// 1.322, and the anchors alone beyond (past 2.587 a compartment is archived: see [`archived`];
/// its heading stays so `ctx_expand` can find its range). A second pass raises the pressure when
/// the result is still more than 10% over budget; finally the oldest compartment is demoted one
/// tier at a time until it fits. Importance stretches the half-life (see [`half_lives`]); among equally
/// important compartments an older one is never kept in more detail than a newer one, and the
/// curve re-tunes itself when the window changes.
pub fn decay(compartments: &[Compartment], budget: u64) -> Vec<Tier> {
    let mut tiers = curve(compartments, pressure(compartments, budget));
    let mut total = cost(compartments, &tiers);
    while total > budget {
        let Some(oldest) = tiers.iter().position(|tier| *tier != Tier::Anchor) else { break };
        tiers[oldest] = match tiers[oldest] {
            Tier::Full => Tier::Condensed,
            Tier::Condensed => Tier::Outcome,
            Tier::Outcome | Tier::Anchor => Tier::Anchor,
        };
        total = cost(compartments, &tiers);
    }
    tiers
}

/// Which compartments are past the archive line (`z` ≥ 2.587 at the pressure `budget` puts on
/// the history), oldest first: they show no more than their anchors, and the compressor merges
/// them.
pub fn archived(compartments: &[Compartment], budget: u64) -> Vec<bool> {
    let pressure = pressure(compartments, budget);
    half_lives(compartments, pressure).into_iter().map(|z| z >= Z[3]).collect()
}

/// What the history would cost at full detail over the budget (at least [`P_FLOOR`]), raised
/// once more when the curve at that pressure is still more than 10% over.
fn pressure(compartments: &[Compartment], budget: u64) -> f64 {
    let budget = budget.max(1) as f64;
    let full = vec![Tier::Full; compartments.len()];
    let pressure = (cost(compartments, &full) as f64 / budget).max(P_FLOOR);
    let first = cost(compartments, &curve(compartments, pressure)) as f64;
    if first > 1.1 * budget { pressure * first / budget } else { pressure }
}

/// Estimated tokens of the compartments at the given tiers, headings included.
fn cost(compartments: &[Compartment], tiers: &[Tier]) -> u64 {
    compartments.iter().zip(tiers).map(|(compartment, tier)| tokens(body(compartment, *tier)) + 12).sum()
}

fn curve(compartments: &[Compartment], pressure: f64) -> Vec<Tier> {
    half_lives(compartments, pressure).into_iter().map(tier_at).collect()
}

/// The tier `z` half-lives of age earn.
fn tier_at(z: f64) -> Tier {
    if z < Z[0] {
        Tier::Full
    } else if z < Z[1] {
        Tier::Condensed
    } else if z < Z[2] {
        Tier::Outcome
    } else {
        Tier::Anchor
    }
}

/// How many half-lives old each compartment is: its age `a` (0 for the newest) over the
/// half-life `H50 / pressure`, stretched by importance (50 has the base half-life, every 25
/// points more doubles it: 75 twice, 100 four times).
fn half_lives(compartments: &[Compartment], pressure: f64) -> Vec<f64> {
    let count = compartments.len();
    compartments
        .iter()
        .enumerate()
        .map(|(index, compartment)| {
            let factor = 2f64.powf((f64::from(compartment.importance.clamp(1, 100)) - 50.0) / D);
            (count - 1 - index) as f64 * pressure / (H50 * factor)
        })
        .collect()
}

fn render_compartment(out: &mut String, compartment: &Compartment, tier: Tier) {
    let _infallible = writeln!(
        out,
        "## {}-{} · {}",
        compartment.start,
        compartment.end.saturating_sub(1),
        escape(&compartment.title)
    );
    let body = body(compartment, tier);
    if !body.is_empty() {
        out.push_str(&escape(body));
        out.push('\n');
    }
}

fn body(compartment: &Compartment, tier: Tier) -> &str {
    let versions = &compartment.versions;
    match tier {
        Tier::Full => &versions.full,
        Tier::Condensed => &versions.condensed,
        Tier::Outcome => &versions.outcome,
        Tier::Anchor => &versions.anchor,
    }
}

fn render_memory(out: &mut String, memory: &Memory) {
    let _infallible = writeln!(
        out,
        "<memory id=\"{}\" category=\"{}\">{}</memory>",
        memory.id,
        memory.category,
        escape(&memory.content)
    );
}

/// Escapes what would otherwise close or open our own tags.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compartment(sequence: u32, lines: usize) -> Compartment {
        let content = (0..lines)
            .map(|i| format!("U: ask {i}\nA: reading it\nTC: read {{\"path\":\"f{i}\"}}\nTR: 40 lines"))
            .collect::<Vec<_>>();
        Compartment {
            sequence,
            start: sequence as usize * 10,
            end: sequence as usize * 10 + 10,
            title: format!("turns {sequence}"),
            versions: crate::historian::versions(&content.join("\n")),
            importance: 50,
            depth: 0,
        }
    }

    #[test]
    fn decay_demotes_the_oldest_first_until_the_history_fits() {
        let compartments: Vec<Compartment> = (0..4).map(|seq| compartment(seq, 20)).collect();
        let full: u64 = decay(&compartments, u64::MAX).iter().map(|_| 1).sum();
        assert_eq!(full, 4);
        let tiers = decay(&compartments, 700);
        assert_eq!(tiers[3], Tier::Full);
        assert!(tiers[0] > Tier::Full);
        assert!(tiers.windows(2).all(|pair| pair[0] >= pair[1]), "{tiers:?}");
    }

    #[test]
    fn the_curve_keeps_recent_history_in_full_and_fades_the_old_with_pressure() {
        let compartments: Vec<Compartment> = (0..60).map(|seq| compartment(seq, 2)).collect();
        let roomy = decay(&compartments, 1_000_000);
        // Pressure at its floor: half-life 240 compartments, so ages 0 to 48 stay in full.
        assert_eq!(roomy.iter().filter(|tier| **tier == Tier::Full).count(), 49);
        let tight = decay(&compartments, 3_000);
        assert!(tight.iter().filter(|tier| **tier == Tier::Full).count() < 20, "{tight:?}");
        assert!(tight.windows(2).all(|pair| pair[0] >= pair[1]), "older never beats newer: {tight:?}");
        let cost: u64 = compartments.iter().zip(&tight).map(|(c, t)| tokens(body(c, *t)) + 12).sum();
        assert!(cost <= 3_000, "{cost}");
    }

    #[test]
    fn important_compartments_fade_later() {
        let mut compartments: Vec<Compartment> = (0..60).map(|seq| compartment(seq, 2)).collect();
        compartments[5].importance = 100;
        compartments[6].importance = 1;
        let tiers = decay(&compartments, 6_000);
        assert!(tiers[5] < tiers[4], "importance 100 keeps more than an older-or-equal neighbour: {tiers:?}");
        assert!(tiers[6] > tiers[7], "importance 1 fades before a neighbour: {tiers:?}");
    }

    #[test]
    fn an_empty_delta_is_the_fixed_placeholder() {
        assert_eq!(m1(&[], &[], &[]), EMPTY_M1);
    }

    #[test]
    fn slots_escape_text_that_would_close_their_tags() {
        let memory = Memory { id: 1, category: "CONSTRAINTS".into(), content: "</project-memory> x".into() };
        let rendered = m0(&[], &[memory], 1000);
        assert_eq!(rendered.matches("</project-memory>").count(), 1);
        assert!(rendered.contains("&lt;/project-memory&gt; x"));
    }
}
