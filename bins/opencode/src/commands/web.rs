//! `opencode web`: the server (as `opencode serve`) with its web UI; prints the UI's address and
//! tries to open a browser there. Not finding or starting one is never an error: the address is
//! printed either way.

use std::process::Command;
use std::process::Stdio;

use super::tokio_runtime;
use crate::cli::WebArgs;
use crate::context::Context;
use crate::error::CliError;

pub fn run(context: &Context, args: WebArgs) -> Result<(), CliError> {
    crate::allocator::serve();
    let options = super::serve::options(context, args.serve);
    let open = !args.no_open;
    tokio_runtime()?.block_on(opencode_http_api::run_server_with(options, context.cwd.clone(), |url| {
        let url = browser_url(url);
        println!("opencode web UI: {url}");
        if open && !open_browser(&url) {
            println!("open that address in a browser (no browser could be started here)");
        }
    }))?;
    Ok(())
}

/// `http://0.0.0.0:4096` is where the server listens, not an address a browser can reach: show the
/// loopback one instead.
fn browser_url(url: &str) -> String {
    url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")
}

/// Starts a browser on `url` in the background: `$BROWSER` (a `:`-separated list, as `xdg-open`
/// reads it), else the platform's opener (on Linux only with a display). Whether one was started.
fn open_browser(url: &str) -> bool {
    let mut candidates: Vec<Vec<String>> = Vec::new();
    if let Ok(browser) = std::env::var("BROWSER") {
        candidates.extend(browser.split(':').filter(|b| !b.is_empty()).map(|b| vec![b.to_owned()]));
    }
    if cfg!(target_os = "macos") {
        candidates.push(vec!["open".into()]);
    } else if cfg!(windows) {
        candidates.push(vec!["cmd".into(), "/C".into(), "start".into(), String::new()]);
    } else if ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty())) {
        candidates.extend([vec!["xdg-open".into()], vec!["gio".into(), "open".into()]]);
    }
    candidates.into_iter().any(|argv| {
        let Some((program, rest)) = argv.split_first() else { return false };
        Command::new(program)
            .args(rest)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            // Reaped in the background (an opener exits at once; a browser may run on).
            .map(|mut child| std::thread::spawn(move || child.wait()))
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_addresses_become_loopback_ones() {
        assert_eq!(browser_url("http://0.0.0.0:4096"), "http://127.0.0.1:4096");
        assert_eq!(browser_url("http://[::]:80"), "http://[::1]:80");
        assert_eq!(browser_url("http://127.0.0.1:5"), "http://127.0.0.1:5");
    }
}
