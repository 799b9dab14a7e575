#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-catalog` benchmarks (run with `cargo xtask bench opencode-catalog`, or
//! `cargo bench -p opencode-catalog --bench catalog`).
//!
//! 1. Cold start: the first catalog lookup in a fresh process (decompress the bundled snapshot,
//!    parse, build, look a model up), with the process's resident memory before and after.
//! 2. Warm repeats of the same work (min / median), which is what startup costs once the binary's
//!    pages are in the page cache.
//! 3. Resolution: one `resolve` (route + options) per model of the whole catalog.

use std::time::{Duration, Instant};

use opencode_catalog::{Catalog, source};
use opencode_config::Env;

fn main() {
    let rss_before = rss_kib();
    let start = Instant::now();
    let catalog = Catalog::bundled().expect("bundled catalog");
    catalog.lookup("anthropic/claude-sonnet-4-5").expect("lookup");
    let cold = start.elapsed();
    let rss_after = rss_kib();
    println!("catalog ready for first lookup (bundled snapshot, cold, this process)");
    println!("  time      {:>8.2} ms   (target <= 15 ms)", ms(cold));
    println!(
        "  RSS       {:>8.1} MB before, {:.1} MB after, peak {:.1} MB   (target <= 20 MB)",
        mb(rss_before),
        mb(rss_after),
        mb(peak_kib())
    );
    drop(catalog);

    let mut decompress = Vec::new();
    let mut total = Vec::new();
    for _ in 0..30 {
        let start = Instant::now();
        let json = source::bundled_json().expect("decompress");
        decompress.push(start.elapsed());
        let api = opencode_catalog::models_dev::parse(&json).expect("parse");
        let catalog = Catalog::from_models_dev(api);
        catalog.lookup("openai/gpt-5").expect("lookup");
        total.push(start.elapsed());
    }
    println!(
        "warm, 30 runs: decompress {} | decompress + parse + build + lookup {}",
        stats(&mut decompress),
        stats(&mut total)
    );

    let catalog = Catalog::bundled().expect("bundled catalog");
    let env = Env::from_pairs([("AZURE_RESOURCE_NAME", "r"), ("AWS_REGION", "us-east-1")]);
    let models: Vec<(String, String)> =
        catalog.providers().flat_map(|p| p.models.keys().map(|m| (p.id.clone(), m.clone()))).collect();
    let start = Instant::now();
    let resolved = models.iter().filter(|(p, m)| catalog.resolve(p, m, None, None, &env).is_ok()).count();
    let elapsed = start.elapsed();
    println!(
        "resolve: {resolved} of {} models routed in {:.2} ms ({:.2} us per model)",
        models.len(),
        ms(elapsed),
        elapsed.as_secs_f64() * 1e6 / models.len() as f64
    );
}

fn stats(samples: &mut [Duration]) -> String {
    samples.sort();
    format!("min {:.2} ms, median {:.2} ms", ms(samples[0]), ms(samples[samples.len() / 2]))
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn rss_kib() -> u64 {
    status_field("VmRSS:")
}

fn peak_kib() -> u64 {
    status_field("VmHWM:")
}

/// A `/proc/self/status` field in KiB (0 where `/proc` is unavailable).
fn status_field(name: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(name))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
