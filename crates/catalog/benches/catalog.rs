#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-catalog` benchmarks (run with `cargo xtask bench opencode-catalog`, or
//! `cargo bench -p opencode-catalog --bench catalog`).
//!
//! 1. Cold start: the first catalog lookup in a fresh process (decompress the bundled snapshot,
//!    parse the provider layer, parse the looked-up provider's models, look a model up), with the
//!    process's resident memory before and after. The program re-runs itself as that fresh
//!    process several times, since one cold sample on a shared machine is noise.
//! 2. Warm repeats of the same work (min / median), which is what startup costs once the binary's
//!    pages are in the page cache; and, for comparison, parsing every model eagerly.
//! 3. Resolution: one `resolve` (route + options) per model of the whole catalog.

use std::process::Command;
use std::time::{Duration, Instant};

use opencode_catalog::{Catalog, source};
use opencode_config::Env;

/// Set in the child processes that take one cold sample.
const COLD_CHILD: &str = "OPENCODE_CATALOG_BENCH_COLD";
const COLD_RUNS: usize = 15;

fn main() {
    if std::env::var_os(COLD_CHILD).is_some() {
        cold_sample();
        return;
    }
    cold();
    warm();
    resolve();
}

/// One cold sample, printed as `micros rss_before_kib rss_after_kib peak_kib`.
fn cold_sample() {
    let rss_before = rss_kib();
    let start = Instant::now();
    let catalog = Catalog::bundled().expect("bundled catalog");
    catalog.lookup("anthropic/claude-sonnet-4-5").expect("lookup");
    let elapsed = start.elapsed();
    println!("{} {rss_before} {} {}", elapsed.as_micros(), rss_kib(), peak_kib());
}

fn cold() {
    let exe = std::env::current_exe().expect("own path");
    let mut times = Vec::new();
    let mut samples = Vec::new();
    for _ in 0..COLD_RUNS {
        let output = Command::new(&exe).env(COLD_CHILD, "1").output().expect("run cold sample");
        let text = String::from_utf8(output.stdout).expect("utf-8");
        let fields: Vec<u64> = text.split_whitespace().map(|field| field.parse().expect("number")).collect();
        times.push(Duration::from_micros(fields[0]));
        samples.push((fields[1], fields[2], fields[3]));
    }
    samples.sort_unstable();
    let (before, after, peak) = samples[samples.len() / 2];
    println!("catalog ready for first lookup (bundled snapshot, fresh process, {COLD_RUNS} runs)");
    println!("  time      {}   (target <= 15 ms)", stats(&mut times));
    println!(
        "  RSS       {:.1} MB before, {:.1} MB after, peak {:.1} MB (median run)   (target <= 20 MB)",
        mb(before),
        mb(after),
        mb(peak)
    );
}

fn warm() {
    let mut decompress = Vec::new();
    let mut lazy = Vec::new();
    let mut eager = Vec::new();
    for _ in 0..30 {
        let start = Instant::now();
        let json = source::bundled_json().expect("decompress");
        decompress.push(start.elapsed());
        drop(json);

        let start = Instant::now();
        let catalog = Catalog::bundled().expect("bundled catalog");
        catalog.lookup("openai/gpt-5").expect("lookup");
        lazy.push(start.elapsed());

        let start = Instant::now();
        let api = opencode_catalog::models_dev::parse(&source::bundled_json().expect("decompress")).expect("parse");
        let catalog = Catalog::from_models_dev(api);
        catalog.lookup("openai/gpt-5").expect("lookup");
        eager.push(start.elapsed());
    }
    println!("warm, 30 runs:");
    println!("  decompress                                  {}", stats(&mut decompress));
    println!("  Catalog::bundled + first lookup             {}", stats(&mut lazy));
    println!("  decompress + parse every model + lookup     {}", stats(&mut eager));
}

fn resolve() {
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
