//! `opencode serve` through the built binary: it listens, answers OpenCode's health route, and a taken
//! port is a clear error.

use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};

use super::support::{Home, Served};

fn get(address: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn serve_listens_and_answers_health() {
    let home = Home::new();
    let server = home.serve();
    let response = get(&server.address, "/global/health");
    let line = &server.line;
    assert!(line.starts_with("opencode server listening on http://127.0.0.1:"), "{line}");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"healthy\":true"), "{response}");
}

#[test]
fn a_taken_port_is_a_one_line_error_with_a_hint() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let home = Home::new();
    let output = home.opencode(&["serve", "--port", &port]).assert().failure().get_output().clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&port), "{stderr}");
    assert!(stderr.lines().any(|line| line.starts_with("hint: ") && line.contains("--port")), "{stderr}");
}

/// `opencode web`: prints the UI's address, serves the page there (with its Content-Security-Policy),
/// and opens `$BROWSER` on it; without a browser it still runs and says to open the address.
#[test]
fn web_prints_the_address_serves_the_ui_and_opens_a_browser() {
    let home = Home::new();
    let opened = home.path().join("opened.txt");
    let browser = home.path().join("browser.sh");
    std::fs::write(&browser, format!("#!/bin/sh\necho \"$1\" > '{}'\n", opened.display())).unwrap();
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for with_browser in [true, false] {
        let mut command = home.server_command(&["web", "--port", "0"]);
        if with_browser {
            command.env("BROWSER", &browser);
        }
        let mut web = Served::start(command);
        let (line, url) = (web.line.clone(), web.url.clone());
        let page = get(&web.address, "/");
        let mut next = String::new();
        if !with_browser {
            web.stdout.read_line(&mut next).unwrap();
        } else {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !opened.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        drop(web);
        assert!(line.starts_with("opencode web UI: http://127.0.0.1:"), "{line}");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.to_ascii_lowercase().contains("content-security-policy: default-src 'none'"), "{page}");
        assert!(page.contains("<script type=\"module\" src=\"/assets/js/app.js\">"), "{page}");
        if with_browser {
            assert_eq!(std::fs::read_to_string(&opened).unwrap().trim(), url);
        } else {
            assert!(next.contains("open that address in a browser"), "{next}");
        }
    }
}
