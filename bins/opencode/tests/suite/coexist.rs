//! OpenCode and this program in one data directory, with the real OpenCode 1.18.34 (npm, offline):
//! whichever runs first, both keep working, and each keeps its own database file. A database of
//! another program where ours belongs is refused in one line, untouched.

use std::path::Path;

use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_mock_provider::peer::OpenCode;

use super::support::Home;
use super::support::stderr;
use super::support::stdout;

fn mock() -> (tokio::runtime::Runtime, MockProvider) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    mock.respond_with(|_| MockResponse::chat_text("Hello from the mock."));
    (runtime, mock)
}

fn setup() -> Option<(OpenCode, Home, tokio::runtime::Runtime, MockProvider)> {
    let opencode = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR")))?;
    let (runtime, mock) = mock();
    let home = Home::new();
    let config = opencode_mock_provider::peer::mock_project_config(&format!("{}/v1", mock.base_url()));
    std::fs::write(home.work().join("opencode.json"), config).unwrap();
    Some((opencode, home, runtime, mock))
}

/// Runs OpenCode in the same home and project; fails the test with its output if it fails.
fn theirs(opencode: &OpenCode, home: &Home, args: &[&str]) -> String {
    let output = opencode.command_in(&home.path().join("home"), &home.work()).args(args).output().unwrap();
    let (out, err) = (stdout(&output), stderr(&output));
    assert!(output.status.success(), "OpenCode {args:?} failed:\n{out}\n{err}");
    format!("{out}{err}")
}

/// Runs ours; fails the test with its output if it fails.
fn ours(home: &Home, args: &[&str]) -> String {
    let output = home.opencode(args).output().unwrap();
    assert!(output.status.success(), "ours {args:?} failed:\n{}\n{}", stdout(&output), stderr(&output));
    stdout(&output)
}

/// `opencode serve` of ours starts, answers, and stops.
fn our_server_starts(home: &Home) {
    let line = home.serve().line.clone();
    assert!(line.starts_with("opencode server listening on"), "our server did not start: {line:?}");
}

fn session_ids(listing: &str) -> Vec<String> {
    listing.split_whitespace().filter(|word| word.starts_with("ses_")).map(str::to_owned).collect()
}

fn data_dir(home: &Home) -> std::path::PathBuf {
    home.path().join("home/.local/share/opencode")
}

#[test]
fn opencode_first_then_us_then_opencode_again() {
    let Some((opencode, home, _rt, _mock)) = setup() else { return };
    theirs(&opencode, &home, &["run", "say hi"]);
    let before = session_ids(&theirs(&opencode, &home, &["session", "list"]));
    assert_eq!(before.len(), 1, "OpenCode made one session");

    assert!(ours(&home, &["run", "say hi"]).contains("Hello from the mock."));
    our_server_starts(&home);
    assert_eq!(session_ids(&ours(&home, &["session", "list"])).len(), 1, "ours lists only its own session");

    let after = session_ids(&theirs(&opencode, &home, &["session", "list"]));
    assert_eq!(after, before, "OpenCode still lists exactly its session");
    assert!(data_dir(&home).join("opencode.db").is_file());
    assert!(data_dir(&home).join("opencode-rs.db").is_file());
}

#[test]
fn us_first_then_opencode_then_us_again() {
    let Some((opencode, home, _rt, _mock)) = setup() else { return };
    ours(&home, &["run", "say hi"]);
    our_server_starts(&home);
    theirs(&opencode, &home, &["run", "say hi"]);
    assert_eq!(session_ids(&theirs(&opencode, &home, &["session", "list"])).len(), 1);
    assert_eq!(session_ids(&ours(&home, &["session", "list"])).len(), 1);
    ours(&home, &["run", "-c", "again"]);
    assert_eq!(session_ids(&theirs(&opencode, &home, &["session", "list"])).len(), 1);
}

#[test]
fn another_programs_database_in_our_place_is_refused_untouched() {
    let Some((opencode, home, _rt, _mock)) = setup() else { return };
    theirs(&opencode, &home, &["run", "say hi"]);
    let data = data_dir(&home);
    // A database of OpenCode's schema where ours belongs (with its write-ahead log, where OpenCode's
    // latest writes still are).
    for suffix in ["", "-wal"] {
        let from = data.join(format!("opencode.db{suffix}"));
        if from.exists() {
            std::fs::copy(from, data.join(format!("opencode-rs.db{suffix}"))).unwrap();
        }
    }
    let fingerprint = || {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        std::fs::read(data.join("opencode-rs.db")).unwrap().hash(&mut hasher);
        hasher.finish()
    };
    let before = fingerprint();
    let output = home.opencode(&["session", "list"]).output().unwrap();
    let err = stderr(&output);
    assert!(!output.status.success());
    assert_eq!(err.lines().count(), 2, "one line of cause, one of hint:\n{err}");
    assert!(err.contains("opencode-rs.db is not this program's session database"), "{err}");
    assert!(!err.contains("CREATE TABLE"), "{err}");
    assert_eq!(fingerprint(), before, "the file was not touched");
}
