//! A real browser for the web UI's tests and benchmarks: Debian's headless Chromium driven over
//! WebDriver (`chromedriver`), with plain HTTP calls (no WebDriver crate).
//!
//! Without `chromium` or `chromedriver` [`Chromium::start`] prints a notice and returns `None`, so a
//! developer machine without them skips those tests; under `CI` it panics instead (`.ci/run`
//! installs both).

use std::io::Read;
use std::io::Write;
use std::path::Path;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use base64::Engine;
use serde_json::Value;
use serde_json::json;

/// WebDriver key codes for [`Browser::type_into`].
pub mod keys {
    pub const ENTER: &str = "\u{E007}";
    pub const ESCAPE: &str = "\u{E00C}";
    pub const SHIFT: &str = "\u{E008}";
    pub const ALT: &str = "\u{E00A}";
    /// Releases held modifier keys.
    pub const RELEASE: &str = "\u{E000}";
}

const BROWSERS: [&str; 3] = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];
const DRIVERS: [&str; 2] = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"];
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// `chromedriver` on a free loopback port; it starts a fresh Chromium (own temporary profile) for
/// every [`Chromium::browser`]. On drop (a test that panicked included) the browsers still open are
/// closed, then chromedriver is killed, so no browser outlives its test.
pub struct Chromium {
    child: Child,
    binary: &'static str,
    port: u16,
    base: String,
    http: reqwest::Client,
    open: Arc<Mutex<Vec<String>>>,
}

impl Chromium {
    /// Starts chromedriver, or explains why not (see the module docs).
    pub fn start() -> Option<Self> {
        // reqwest is built without a TLS provider of its own (loopback HTTP needs none, but a
        // client cannot be built without one).
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let binary = BROWSERS.into_iter().find(|p| Path::new(p).is_file());
        let driver = DRIVERS.into_iter().find(|p| Path::new(p).is_file());
        let (Some(binary), Some(driver)) = (binary, driver) else {
            return crate::peer::skip(
                "chromium or chromedriver not found (apt-get install chromium chromium-driver); skipping the browser tests",
            );
        };
        let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(addr) => addr.port(),
            Err(err) => return crate::peer::skip(&format!("no free port for chromedriver: {err}")),
        };
        let child = match Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(err) => return crate::peer::skip(&format!("cannot start {driver}: {err}")),
        };
        Some(Self {
            child,
            binary,
            port,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
            open: Arc::default(),
        })
    }

    /// A new headless Chromium window of `width` x `height`.
    ///
    /// # Panics
    /// When chromedriver does not become ready within 20 s or refuses the session.
    pub async fn browser(&self, width: u32, height: u32) -> Browser {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = match self.http.get(format!("{}/status", self.base)).send().await {
                Ok(r) => r.text().await.ok().and_then(|t| serde_json::from_str::<Value>(&t).ok()),
                Err(_) => None,
            };
            if ready.is_some_and(|v| v["value"]["ready"] == true) {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not become ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": self.binary, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                format!("--window-size={width},{height}"), "--no-first-run", "--disable-extensions",
            ]}
        }}});
        let created = send(&self.http, reqwest::Method::POST, &format!("{}/session", self.base), Some(caps)).await;
        let id = created["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {created}"));
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(id.to_owned());
        Browser {
            http: self.http.clone(),
            base: format!("{}/session/{id}", self.base),
            id: id.to_owned(),
            open: Arc::clone(&self.open),
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let open = std::mem::take(&mut *self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for id in open {
            // A blocking `DELETE /session/{id}` (drop may run outside the async runtime).
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                let _timeout = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let request = format!(
                    "DELETE /session/{id} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                    self.port
                );
                if stream.write_all(request.as_bytes()).is_ok() {
                    let _answer = stream.read_to_end(&mut Vec::new());
                }
            }
        }
        let _gone = self.child.kill();
        let _reaped = self.child.wait();
    }
}

async fn send(http: &reqwest::Client, method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().await.unwrap_or_else(|err| panic!("WebDriver {url}: {err}"));
    let text = response.text().await.unwrap_or_default();
    let reply: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("WebDriver {url}: {text}"));
    assert!(reply["value"].get("error").is_none(), "WebDriver {url}: {reply}");
    reply["value"].clone()
}

/// One WebDriver session (a browser with its windows).
pub struct Browser {
    http: reqwest::Client,
    base: String,
    id: String,
    open: Arc<Mutex<Vec<String>>>,
}

impl Browser {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        send(&self.http, method, &format!("{}{path}", self.base), body).await
    }

    /// A WebDriver POST on this session (`/refresh`, `/back`, ...).
    pub async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({ "url": url })).await;
    }

    pub async fn refresh(&self) {
        self.post("/refresh", json!({})).await;
    }

    /// Runs a script body (`return ...;`) in the page; its result.
    pub async fn js(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": [] })).await
    }

    /// Runs an asynchronous script body: its last argument (`arguments[arguments.length - 1]`) is
    /// the callback that returns the result.
    pub async fn js_async(&self, script: &str) -> Value {
        let _timeouts = self.post("/timeouts", json!({ "script": 120_000 })).await;
        self.post("/execute/async", json!({ "script": script, "args": [] })).await
    }

    /// Polls the JS expression `script` until it is truthy (20 s at most) and returns its value.
    ///
    /// # Panics
    /// On timeout, with the page's text.
    pub async fn until(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        let body = format!("try {{ return ({script}); }} catch (e) {{ return null; }}");
        loop {
            let value = self.js(&body).await;
            if !matches!(value, Value::Null | Value::Bool(false)) && value != "" && value != 0 {
                return value;
            }
            if Instant::now() > deadline {
                let text = self.js("return document.body ? document.body.innerText : ''").await;
                panic!("timed out waiting for {what} ({script}); the page shows:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The WebDriver id of the first element matching `css`, once there is one.
    pub async fn find(&self, css: &str) -> String {
        self.until(&format!("`{css}`"), &format!("document.querySelector({css:?})")).await;
        let found = self.post("/element", json!({"using": "css selector", "value": css})).await;
        found[ELEMENT].as_str().unwrap_or_default().to_owned()
    }

    pub async fn click(&self, css: &str) {
        let id = self.find(css).await;
        self.post(&format!("/element/{id}/click"), json!({})).await;
    }

    /// Types `text` (with [`keys`]) into the element matching `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.post(&format!("/element/{id}/value"), json!({ "text": text })).await;
    }

    /// A PNG of the window, written to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let png = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let bytes =
            base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap_or_default()).unwrap_or_default();
        if let Some(dir) = path.parent() {
            let _exists = std::fs::create_dir_all(dir);
        }
        std::fs::write(path, bytes).unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
    }

    /// Opens a new window; its handle.
    pub async fn new_window(&self) -> String {
        let created = self.post("/window/new", json!({"type": "window"})).await;
        created["handle"].as_str().unwrap_or_default().to_owned()
    }

    /// The current window's handle.
    pub async fn window(&self) -> String {
        self.call(reqwest::Method::GET, "/window", None).await.as_str().unwrap_or_default().to_owned()
    }

    pub async fn switch(&self, handle: &str) {
        self.post("/window", json!({ "handle": handle })).await;
    }

    /// A Chrome DevTools Protocol command through chromedriver.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.post("/goog/cdp/execute", json!({ "cmd": cmd, "params": params })).await
    }

    /// Closes the browser.
    pub async fn quit(self) {
        self.call(reqwest::Method::DELETE, "", None).await;
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|id| *id != self.id);
    }
}
