#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! Our TUI beside OpenCode 1.18.34's, both attached to the same `opencode serve` (ours) in a real
//! terminal (tmux, 160x48), on a session of 2,000 messages (1,000 prompts with their answers):
//!
//! - ready: from spawning `opencode attach URL --session ID` to the session's newest message on
//!   screen (the first usable frame);
//! - RSS of the TUI process once the session shows;
//! - CPU over 10 s idle (nothing typed, nothing streaming).
//!
//! `cargo bench -p opencode --bench tui` (or `cargo xtask bench opencode`); `-- <runs>` sets the
//! runs per TUI (default 5). Needs tmux; OpenCode is installed from npm (skipped without npm).

use std::path::Path;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use opencode_mock_provider::MockProvider;
use opencode_mock_provider::peer::OpenCode;
use serde_json::json;

const TURNS: usize = 1000;
const LAST: &str = "answer number 999";

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|arg| arg.parse().ok()).unwrap_or(5);
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("tmux is not installed: nothing measured");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio");
    let mock = runtime.block_on(MockProvider::start()).expect("mock provider");
    let root = tempfile::tempdir().expect("temp dir");
    let (home, work) = (root.path().join("home"), root.path().join("work"));
    std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let config = opencode_mock_provider::peer::mock_project_config(&format!("{}/v1", mock.base_url()));
    std::fs::write(work.join("opencode.json"), config).unwrap();
    let session = long_session(&home, &work);
    let (mut server, url) = serve(&home, &work);

    println!("TUIs attached to one server, a {}-message session, tmux 160x48, {runs} runs each", TURNS * 2);
    println!("{:<22} {:>10} {:>10} {:>12} {:>16}", "tui", "ready p50", "ready max", "RSS MB p50", "idle CPU % 10 s");
    let ours = vec![env!("CARGO_BIN_EXE_opencode").to_owned()];
    let our_env = vec![("HOME".to_owned(), root.path().join("tui-home").display().to_string())];
    measure("opencode-rs", &ours, &our_env, &url, &session, &work, runs);
    match OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR"))) {
        Some(opencode) => {
            let env: Vec<(String, String)> = opencode.environment(&root.path().join("peer-home"));
            let binary = vec![opencode.binary.display().to_string()];
            measure("OpenCode 1.18.34", &binary, &env, &url, &session, &work, runs);
        }
        None => println!("OpenCode 1.18.34 not installed (needs npm): not measured"),
    }
    let _killed = server.kill();
}

/// `opencode serve` on a free port; the process and its URL.
fn serve(home: &Path, work: &Path) -> (std::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Command::new(env!("CARGO_BIN_EXE_opencode"))
        .args(["serve", "--port", &port.to_string()])
        .env_clear()
        .env("HOME", home)
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .current_dir(work)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("opencode serve");
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (server, url)
}

/// A session of `TURNS` turns (a prompt and a markdown answer each), written into the store of
/// `home` before the server starts (as an imported history would be).
fn long_session(home: &Path, work: &Path) -> String {
    use opencode_session_store::id::IdKind;
    use opencode_session_store::id::ascending;
    let paths = opencode_config::Paths::from_lookup(|key| (key == "HOME").then(|| home.to_path_buf()));
    std::fs::create_dir_all(&paths.data).unwrap();
    let store = opencode_session_store::Store::open(paths.database()).unwrap();
    let directory = work.display().to_string();
    store
        .write(|tx| {
            tx.ensure_global_project()?;
            let mut new = opencode_session_store::NewSession::new("global", directory.clone());
            new.title = Some("A long session".to_owned());
            let session = tx.create_session(new)?;
            for turn in 0..TURNS {
                let (user, answer) = (ascending(IdKind::Message), ascending(IdKind::Message));
                let messages = [
                    (
                        json!({"id": user, "sessionID": session.id, "role": "user", "time": {"created": 1},
                            "agent": "build", "model": {"providerID": "mock", "modelID": "mock-model"}}),
                        format!("prompt number {turn}: what about the `config` module?"),
                    ),
                    (
                        json!({"id": answer, "sessionID": session.id, "role": "assistant",
                            "time": {"created": 2, "completed": 3}, "parentID": user, "modelID": "mock-model",
                            "providerID": "mock", "mode": "build", "agent": "build",
                            "path": {"cwd": directory, "root": directory}, "cost": 0.0,
                            "tokens": {"input": 10, "output": 10, "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
                        format!("## answer number {turn}\n\nThe `config` module **loads** files:\n\n- one\n- two"),
                    ),
                ];
                for (info, text) in messages {
                    let info: opencode_session_store::MessageInfo = serde_json::from_value(info).unwrap();
                    tx.append_message(&info)?;
                    let part = json!({"id": ascending(IdKind::Part), "sessionID": session.id,
                                      "messageID": info.id(), "type": "text", "text": text});
                    tx.upsert_part(&serde_json::from_value(part).unwrap())?;
                }
            }
            Ok(session.id)
        })
        .unwrap()
}

/// Runs `binary attach` `runs` times with `env` and prints the figures.
fn measure(
    name: &str,
    binary: &[String],
    env: &[(String, String)],
    url: &str,
    session: &str,
    work: &Path,
    runs: usize,
) {
    let (mut ready, mut rss, mut idle) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let tmux = format!("bench-tui-{}-{run}", std::process::id());
        let mut line: Vec<String> = vec!["env".into(), "-i".into(), format!("PATH={}", std::env::var("PATH").unwrap())];
        line.push("TERM=xterm-256color".into());
        line.push(format!("PWD={}", work.display()));
        line.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        line.extend(binary.iter().cloned());
        line.extend(["attach".into(), url.into(), "--dir".into(), work.display().to_string()]);
        line.extend(["--session".into(), session.into()]);
        let command = line.iter().map(|word| format!("'{word}'")).collect::<Vec<_>>().join(" ");
        let started = Instant::now();
        let spawned = Command::new("tmux")
            .args(["new-session", "-d", "-s", &tmux, "-x", "160", "-y", "48", "-c"])
            .arg(work)
            .arg(format!("exec {command}"))
            .status()
            .unwrap();
        assert!(spawned.success());
        let shown = wait_for(&tmux, LAST, Duration::from_secs(60));
        let elapsed = started.elapsed().as_secs_f64() * 1e3;
        let pid = pane_pid(&tmux);
        if shown {
            ready.push(elapsed);
            rss.push(rss_mb(pid));
            let before = cpu_ticks(pid);
            std::thread::sleep(Duration::from_secs(10));
            idle.push((cpu_ticks(pid) - before) as f64 / ticks_per_second() / 10.0 * 100.0);
        }
        let _gone = Command::new("tmux").args(["kill-session", "-t", &tmux]).status();
    }
    if ready.is_empty() {
        println!("{name:<22} never showed the session");
        return;
    }
    let p50 = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let max = ready.iter().copied().fold(0.0, f64::max);
    println!("{name:<22} {:>8.0} ms {:>7.0} ms {:>12.1} {:>16.2}", p50(&mut ready), max, p50(&mut rss), p50(&mut idle));
}

/// Polls the pane until `text` shows; whether it did within `limit`.
fn wait_for(tmux: &str, text: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let screen = Command::new("tmux").args(["capture-pane", "-p", "-t", tmux]).output().unwrap();
        if String::from_utf8_lossy(&screen.stdout).contains(text) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

fn pane_pid(tmux: &str) -> u32 {
    let out = Command::new("tmux").args(["list-panes", "-t", tmux, "-F", "#{pane_pid}"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Resident memory of `pid` and its children (OpenCode's TUI runs a worker), in MB.
fn rss_mb(pid: u32) -> f64 {
    family(pid).iter().map(|pid| status_kb(*pid, "VmRSS:")).sum::<u64>() as f64 / 1024.0
}

/// CPU time (user + system ticks) of `pid` and its children.
fn cpu_ticks(pid: u32) -> u64 {
    family(pid)
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .map(|stat| {
            let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
            fields.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
                + fields.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
        })
        .sum()
}

/// `pid` and its descendants.
fn family(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut at = 0;
    while at < all.len() {
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", all[at])).unwrap_or_default();
        all.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        at += 1;
    }
    all
}

fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
}

fn ticks_per_second() -> f64 {
    // Linux's USER_HZ: 100 on every architecture it runs on.
    100.0
}
