//! The web UI: served at `/` with its security headers (plain HTTP checks), and used in a real
//! headless Chromium driven over WebDriver (chromedriver, raw HTTP calls) against the server over
//! the session runtime and the mock provider. Without `chromium` and `chromedriver` the browser
//! tests print a notice and pass; under `CI` they fail instead (`.ci/run` installs both).
//!
//! Screenshots of the main screens go to `$CARGO_TARGET_TMPDIR/web-ui/` for a person to look at.

use std::net::TcpListener;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use base64::Engine;
use opencode_config::Env;
use opencode_http_api::Credentials;
use opencode_http_api::ServerOptions;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_mock_provider::RecordedRequest;
use opencode_mock_provider::browser::Chromium;
use opencode_mock_provider::browser::keys::ALT;
use opencode_mock_provider::browser::keys::ENTER;
use opencode_mock_provider::browser::keys::ESCAPE;
use opencode_mock_provider::browser::keys::RELEASE;
use opencode_mock_provider::browser::keys::SHIFT;
use serde_json::Value;
use serde_json::json;

use super::runtime::text;
use super::runtime::tool_call;

// ---------------------------------------------------------------- plain HTTP

#[tokio::test]
async fn the_ui_is_served_at_the_root_with_a_content_security_policy() {
    let t = super::start().await;
    let response = t.http.get(t.at("/")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("connect-src 'self'"), "{csp}");
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{csp}");
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let html = response.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="/assets/js/app.js"></script>"#), "{html}");
    assert!(!html.contains("<script>"), "no inline script");

    // The UI's own paths fall back to the page; the API's unknown paths stay JSON 404s.
    let page = t.http.get(t.at("/some/ui/path")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().starts_with("<!doctype html>"));
    let (status, body) = t.get("/session/ses_missing/nothing/here").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["name"], "NotFoundError", "{body}");
    let (status, _) = t.get("/assets/js/missing.js").await;
    assert_eq!(status, 404);
    let (status, body) = t.post("/some/ui/path", json!({})).await;
    assert_eq!(status, 404, "{body}");

    // Scripts are JavaScript, compressed when asked for.
    let js = t.http.get(t.at("/assets/js/app.js")).header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(js.headers()["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(js.headers()["content-encoding"], "gzip");
    for path in opencode_http_api::web::asset_paths() {
        let (status, _) = t.get(path).await;
        assert_eq!(status, 200, "{path}");
    }
}

#[tokio::test]
async fn serving_the_ui_keeps_the_guard_and_the_password() {
    let t = super::start_with(ServerOptions {
        port: 0,
        credentials: Some(Credentials { username: "opencode".into(), password: "pw".into() }),
        ..ServerOptions::default()
    })
    .await;
    let page = t.http.get(t.at("/")).send().await.unwrap();
    assert_eq!(page.status(), 401, "the page asks for the password");
    assert!(page.headers()["www-authenticate"].to_str().unwrap().starts_with("Basic"));
    let page = t.http.get(t.at("/")).basic_auth("opencode", Some("pw")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    // A page elsewhere can neither post to the UI's paths nor the API's.
    let foreign = t
        .http
        .post(t.at("/session"))
        .basic_auth("opencode", Some("pw"))
        .header("origin", "http://evil.example")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let rebinding =
        t.http.get(t.at("/")).basic_auth("opencode", Some("pw")).header("host", "evil.example").send().await;
    assert_eq!(rebinding.unwrap().status(), 403);
}

// ---------------------------------------------------------------- in a browser

fn shot(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-ui").join(format!("{name}.png"))
}

/// What the mock model answers, by the last user prompt (and whether a tool result came back).
fn answer(request: &RecordedRequest) -> MockResponse {
    let body = request.body_json().unwrap_or_default();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let after_tool = messages.last().is_some_and(|m| m["role"] == "tool");
    let prompt = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(" "),
            _ => String::new(),
        })
        .unwrap_or_default();
    if prompt.contains("run the tool") {
        return if after_tool {
            text("The command ran: it printed **tool-output-42**.")
        } else {
            tool_call(
                "call_run",
                "bash",
                json!({"command": "echo changed >> README.md; echo tool-output-42", "description": "Print a marker"}),
            )
        };
    }
    if prompt.contains("refuse this") {
        return if after_tool {
            text("Understood: I will not run it.")
        } else {
            tool_call("call_no", "bash", json!({"command": "echo must-not-run", "description": "Something refused"}))
        };
    }
    if prompt.contains("take your time") {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Working on a long answer"}}]});
        return MockResponse::sse([chunk.to_string()]).then_stall();
    }
    if prompt.contains("ask me") {
        return if after_tool {
            text("Blue it is.")
        } else {
            tool_call(
                "call_ask",
                "question",
                json!({"questions": [{"question": "Which colour?", "header": "Colour",
                "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}]}),
            )
        };
    }
    if prompt.contains("Greet Ada warmly") {
        return text("Hello Ada, from a command.");
    }
    if body.to_string().contains("data:image/png;base64,") && prompt.contains("this picture") {
        return text("I see a tiny picture.");
    }
    if prompt.contains("both tabs") {
        return text("Both tabs see this answer.");
    }
    // The greeting thinks first (a reasoning part), then answers in markdown, in small pieces.
    let delta = |delta: Value| json!({"id": "c", "choices": [{"index": 0, "delta": delta}]}).to_string();
    MockResponse::sse([
        delta(json!({"role": "assistant", "reasoning_content": "The user wants a greeting."})),
        delta(json!({"content": "Hello from the **mock** provider:\n\n"})),
        delta(json!({"content": "```rust\nfn main() { println!(\"hi\"); }\n```"})),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
            .to_string(),
        "[DONE]".to_owned(),
    ])
}

struct Project {
    _root: tempfile::TempDir,
    dir: PathBuf,
    home: PathBuf,
    _mock: MockProvider,
}

async fn project() -> Project {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let mock = MockProvider::start().await.unwrap();
    mock.respond_with(answer);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("demo");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/hello_world.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.join("README.md"), "# demo\n").unwrap();
    let config = json!({
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "x"},
            "models": {"m": {"name": "Mock model", "tool_call": true, "attachment": true,
                "modalities": {"input": ["text", "image"], "output": ["text"]}},
                "r": {"name": "Reasoning model", "tool_call": true, "reasoning": true}}}},
        "model": "mock/m",
        "agent": {"title": {"disable": true}},
        "permission": {"bash": "ask"},
        "command": {"greet": {"template": "Greet $ARGUMENTS warmly", "description": "Greets someone"}}
    });
    std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
    for args in
        [&["init", "-q"][..], &["add", "."], &["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "demo"]]
    {
        assert!(Command::new("git").args(args).current_dir(&dir).status().unwrap().success());
    }
    let dir = dir.canonicalize().unwrap();
    let home = root.path().join("home");
    Project { _root: root, dir, home, _mock: mock }
}

async fn serve(project: &Project, options: ServerOptions) -> opencode_http_api::Server {
    let env = Env::from_pairs([("HOME", project.home.to_string_lossy().into_owned())]);
    opencode_http_api::start_server(options, env, project.dir.clone()).await.unwrap()
}

async fn status_of(url: &str, session: &str) -> Value {
    let statuses: Value = reqwest::get(format!("{url}/session/status")).await.unwrap().json().await.unwrap();
    statuses[session].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_works_a_session_in_the_browser() {
    let Some(chromium) = Chromium::start() else { return };
    let project = project().await;
    let server = serve(&project, ServerOptions { port: 0, ..ServerOptions::default() }).await;
    let url = server.url();
    let b = chromium.browser(1280, 860).await;

    // Load: the sidebar and the composer, with the project's agents and models.
    b.goto(&url).await;
    b.find("#new-session").await;
    b.until("the model picker", "[...document.querySelectorAll('#model option')].some(o => o.value === 'mock/m')")
        .await;
    b.until("the agent picker", "[...document.querySelectorAll('#agent option')].some(o => o.value === 'build')").await;
    b.screenshot(&shot("01-empty")).await;

    // Create a session.
    b.click("#new-session").await;
    let session = b.until("a session in the address", "location.hash.match(/^#\\/session\\/(ses_\\w+)/)[1]").await;
    let session = session.as_str().unwrap().to_owned();
    b.until(
        "the new session in the sidebar",
        &format!("document.querySelector('li.session.active[data-id=\"{session}\"]')"),
    )
    .await;

    // Prompt: Shift+Enter is a new line, Enter sends; the streamed answer appears, markdown rendered.
    b.type_into("#prompt", &format!("Say hello{SHIFT}{ENTER}{RELEASE}please")).await;
    assert_eq!(b.js("return document.querySelector('#prompt').value").await, "Say hello\nplease");
    b.type_into("#prompt", ENTER).await;
    b.until("the user's message", "document.querySelector('.msg.user').innerText.includes('please')").await;
    b.until("the answer", "document.querySelector('.msg.assistant strong')?.innerText === 'mock'").await;
    b.until("the answer's code block", "document.querySelector('.msg.assistant .code code .tk')?.innerText === 'fn'")
        .await;
    assert_eq!(b.js("return document.querySelector('#prompt').value").await, "", "the sent prompt left the box");
    b.until(
        "the reasoning, collapsed",
        "document.querySelector('.msg.assistant details.reasoning:not([open])')?.innerText.includes('Thinking')",
    )
    .await;
    b.click(".msg.assistant details.reasoning summary").await;
    b.until(
        "the reasoning, opened",
        "document.querySelector('details.reasoning[open]')?.innerText.includes('The user wants a greeting.')",
    )
    .await;

    // A tool turn: the permission dock, allow once, then the bash block with command and output.
    b.type_into("#prompt", &format!("run the tool{ENTER}")).await;
    b.until(
        "the permission dock",
        "document.querySelector('#dock:not([hidden]) .dock-title')?.innerText.includes('bash')",
    )
    .await;
    b.until(
        "the command in the dock",
        "document.querySelector('#dock .dock-detail')?.innerText.includes('tool-output-42')",
    )
    .await;
    b.screenshot(&shot("02-permission")).await;
    b.click("#dock button[data-reply=once]").await;
    b.until("the dock to close", "document.querySelector('#dock').hidden").await;
    b.until(
        "the finished bash block",
        "document.querySelector('.tool[data-tool=bash][data-status=completed] .term')?.innerText.includes('\\ntool-output-42')",
    )
    .await;
    b.until("the answer after the tool", "document.body.innerText.includes('The command ran')").await;
    b.until("the token figures", "document.querySelector('#usage').innerText.includes('$')").await;
    b.screenshot(&shot("03-tool-turn")).await;

    // Reject: the tool call ends in an error and the command never ran.
    b.type_into("#prompt", &format!("refuse this{ENTER}")).await;
    b.until(
        "the second permission",
        "document.querySelector('#dock .dock-detail')?.innerText.includes('must-not-run')",
    )
    .await;
    b.click("#dock button[data-reply=reject]").await;
    b.until("the rejected tool block", "document.querySelector('.tool[data-tool=bash][data-status=error]')").await;
    b.until("the turn to end", "!document.body.classList.contains('busy')").await;

    // `@` completion from the project's files.
    b.type_into("#prompt", "look at @hello_w").await;
    b.until(
        "the file popover",
        "document.querySelector('.popover:not([hidden]) li.on')?.innerText === 'src/hello_world.rs'",
    )
    .await;
    b.screenshot(&shot("04-mention")).await;
    b.type_into("#prompt", ENTER).await;
    assert_eq!(b.js("return document.querySelector('#prompt').value").await, "look at @src/hello_world.rs ");
    // Sent, the mentioned file goes as a file part: the model reads its content.
    let before = project._mock.requests().len();
    b.type_into("#prompt", &format!("now{ENTER}")).await;
    b.until("the mention's turn to end", "!document.body.classList.contains('busy') && [...document.querySelectorAll('.msg.user')].some(m => m.innerText.includes('look at @src/hello_world.rs'))").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let sent: Vec<String> =
            project._mock.requests()[before..].iter().map(|r| r.body_json().unwrap().to_string()).collect();
        if sent.iter().any(|body| body.contains("fn main() {}") && body.contains("Called the Read tool")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the file's content never reached the model: {sent:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // A `/` command from the popover: the server expands its template and the answer streams in.
    b.js("document.querySelector('#prompt').value = ''; return null").await;
    b.type_into("#prompt", "/gre").await;
    b.until(
        "the command popover",
        "document.querySelector('.popover:not([hidden]) li.on')?.innerText.startsWith('/greet')",
    )
    .await;
    b.type_into("#prompt", ENTER).await;
    assert_eq!(b.js("return document.querySelector('#prompt').value").await, "/greet ");
    b.type_into("#prompt", &format!("Ada{ENTER}")).await;
    b.until("the command's answer", "document.body.innerText.includes('Hello Ada, from a command.')").await;

    // The question tool: the dock offers the options; the answer goes back to the model.
    b.until("the command's turn to end", "!document.body.classList.contains('busy')").await;
    b.type_into("#prompt", &format!("ask me{ENTER}")).await;
    b.until("the question", "document.querySelector('#dock .question')?.innerText.includes('Which colour?')").await;
    b.click("#dock button.option[data-label=Blue]").await;
    b.screenshot(&shot("05-question")).await;
    b.click("#dock button[data-reply=answer]").await;
    b.until("the answer to the question", "document.body.innerText.includes('Blue it is.')").await;
    let (_, m) = super::send(reqwest::Client::new().get(format!("{url}/session/{session}/message"))).await;
    assert!(m.to_string().contains("Blue"), "the model got the chosen option");

    // The review panel shows the working tree's diff (the tool appended to README.md).
    b.click("#toggle-review").await;
    b.until("the README diff", "document.querySelector('#review .file-diff .path')?.innerText === 'README.md'").await;
    b.until("its added line", "[...document.querySelectorAll('#review .dl.da')].some(l => l.innerText === '+changed')")
        .await;
    b.screenshot(&shot("05-review")).await;
    b.click("#toggle-review").await;

    // The Files panel: the tree, a folder opened, a file viewed with highlighting.
    b.click("#toggle-files").await;
    b.click("#files li[data-path=src] > .tree-row").await;
    b.click("#files li[data-path='src/hello_world.rs'] > .tree-row").await;
    b.until("the file's content", "document.querySelector('#files .viewer .code .tk')?.innerText === 'fn'").await;
    b.screenshot(&shot("06-files")).await;
    b.click("#toggle-files").await;

    // The Terminal panel: a shell on the server over the PTY WebSocket.
    b.click("#toggle-terminal").await;
    b.find("#term-input").await;
    b.until("the shell to connect", "document.querySelector('.term-state')?.innerText === ''").await;
    b.type_into("#term-input", &format!("echo term-$((40 + 2)){ENTER}")).await;
    b.until("the shell's answer", "document.querySelector('.term-screen').innerText.includes('term-42')").await;
    b.screenshot(&shot("07-terminal")).await;
    b.click("#toggle-terminal").await;

    // Revert from the tool turn's prompt: it and what followed leave the timeline (staged on the
    // server); Restore brings them back.
    b.js("[...document.querySelectorAll('.msg.user')].find(m => m.innerText.includes('run the tool')).querySelector('.revert').click(); return null").await;
    b.until("the revert bar", "!document.querySelector('#revert').hidden").await;
    b.until("the reverted turn to leave", "!document.body.innerText.includes('The command ran')").await;
    let (_, info) = super::send(reqwest::Client::new().get(format!("{url}/session/{session}"))).await;
    assert!(info["revert"]["messageID"].is_string(), "the server staged the revert: {info}");
    b.screenshot(&shot("07-reverted")).await;
    b.click("#unrevert").await;
    b.until("the turn to come back", "document.body.innerText.includes('The command ran')").await;
    b.until("the revert bar to go", "document.querySelector('#revert').hidden").await;

    // An image attached with the file button goes to the model as an image.
    let png = project.dir.join("dot.png");
    let dot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    std::fs::write(&png, base64::engine::general_purpose::STANDARD.decode(dot).unwrap()).unwrap();
    b.type_into("#attach-input", &png.to_string_lossy()).await;
    b.until("the attachment chip", "document.querySelector('.attachments .chip')?.innerText.includes('dot.png')").await;
    b.type_into("#prompt", &format!("what is in this picture?{ENTER}")).await;
    b.until("the image in the user's message", "document.querySelector('.msg.user img.attached')").await;
    b.until("the answer about the image", "document.body.innerText.includes('I see a tiny picture.')").await;
    assert!(b.js("return document.querySelector('.attachments').hidden").await == true, "the chips cleared");

    // Keyboard: Alt+D opens and closes the Changes panel, even from the prompt.
    b.type_into("#prompt", &format!("{ALT}d{RELEASE}")).await;
    b.until("the panel by keyboard", "!document.querySelector('#review').hidden").await;
    b.type_into("#prompt", &format!("{ALT}d{RELEASE}")).await;
    b.until("the panel closed by keyboard", "document.querySelector('#review').hidden").await;
    assert_eq!(b.js("return document.querySelector('#prompt').value").await, "", "Alt+D typed nothing");

    // Reload keeps the session and the draft.
    b.type_into("#prompt", "a draft to keep").await;
    b.refresh().await;
    b.until(
        "the same session after a reload",
        &format!("document.querySelector('li.session.active[data-id=\"{session}\"]')"),
    )
    .await;
    b.until("the conversation after a reload", "document.body.innerText.includes('The command ran')").await;
    assert_eq!(b.js("return document.querySelector('#prompt').value").await, "a draft to keep");

    // Interrupt: Esc stops a turn that is still streaming.
    b.js("document.querySelector('#prompt').value = ''; return null").await;
    b.type_into("#prompt", &format!("take your time{ENTER}")).await;
    b.until("the partial answer", "document.body.innerText.includes('Working on a long answer')").await;
    b.until("the stop button", "!document.querySelector('#stop').hidden").await;
    assert_eq!(status_of(&url, &session).await["type"], "busy");
    // A prompt sent meanwhile waits, shown as queued, for the runtime to take it.
    b.type_into("#prompt", &format!("a queued hello{ENTER}")).await;
    b.until(
        "the queued prompt",
        "document.querySelector('#queued:not([hidden]) .queued-item')?.innerText.includes('a queued hello')",
    )
    .await;
    b.screenshot(&shot("08-queued")).await;
    b.type_into("#prompt", ESCAPE).await;
    b.until("the stop button to go", "document.querySelector('#stop').hidden").await;
    b.until("the interrupted mark", "document.body.innerText.includes('Interrupted')").await;
    assert!(status_of(&url, &session).await.is_null(), "the session is idle after Esc");
    assert!(
        b.js("return !document.querySelector('#queued').hidden").await == true,
        "the queued prompt still waits: an interrupt leaves it for the next prompt"
    );

    // Two windows on the same session see the same live stream.
    let first = b.window().await;
    let second = b.new_window().await;
    b.switch(&second).await;
    b.goto(&format!("{url}/#/session/{session}")).await;
    b.until("the session in the second window", "document.body.innerText.includes('The command ran')").await;
    b.switch(&first).await;
    b.type_into("#prompt", &format!("both tabs{ENTER}")).await;
    let (_, m) = super::send(reqwest::Client::new().get(format!("{url}/session/{session}/message"))).await;
    eprintln!(
        "(shown on failure) status after the prompt: {}; last messages: {}",
        status_of(&url, &session).await,
        m.as_array().unwrap().iter().rev().take(2).map(|x| x.to_string()).collect::<Vec<_>>().join("\n")
    );
    b.until("the answer in the first window", "document.body.innerText.includes('Both tabs see this answer')").await;
    b.until(
        "the queued prompt in the timeline",
        "[...document.querySelectorAll('.msg.user')].some(m => m.innerText.includes('a queued hello'))",
    )
    .await;
    b.until("the queue to empty", "document.querySelector('#queued').hidden").await;
    b.switch(&second).await;
    b.until("the answer in the second window", "document.body.innerText.includes('Both tabs see this answer')").await;

    // A model with variants shows the variant picker; the chosen variant goes with the prompt.
    assert_eq!(b.js("return document.querySelector('#variant').hidden").await, true, "mock/m has no variants");
    b.js("const m = document.querySelector('#model'); m.value = 'mock/r'; m.dispatchEvent(new Event('change')); return null")
        .await;
    b.until("the variant picker", "!document.querySelector('#variant').hidden && [...document.querySelectorAll('#variant option')].some(o => o.value === 'high')").await;
    b.js("document.querySelector('#variant').value = 'high'; return null").await;
    let before = project._mock.requests().len();
    b.type_into("#prompt", &format!("think hard{ENTER}")).await;
    b.until(
        "the reasoning model's answer",
        "[...document.querySelectorAll('.msg.user')].some(m => m.innerText.includes('think hard'))",
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let sent = loop {
        let requests = project._mock.requests();
        if let Some(sent) = requests[before..].iter().map(|r| r.body_json().unwrap()).find(|body| body["model"] == "r")
        {
            break sent;
        }
        assert!(std::time::Instant::now() < deadline, "no request to mock/r");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(sent["reasoning_effort"], "high", "{sent}");
    b.js("const m = document.querySelector('#model'); m.value = 'mock/m'; m.dispatchEvent(new Event('change')); return null")
        .await;

    // Dark theme, from the header's toggle (system -> light -> dark).
    b.click("#toggle-theme").await;
    b.click("#toggle-theme").await;
    b.until("the dark theme", "document.documentElement.dataset.theme === 'dark'").await;
    b.screenshot(&shot("08-dark")).await;

    // Share: the server's read-only transcript, linked from the header; then withdrawn.
    b.click("#share-session").await;
    let link = b.until("the share link", "document.querySelector('#share-link')?.href").await;
    let transcript = reqwest::get(link.as_str().unwrap()).await.unwrap().text().await.unwrap();
    assert!(transcript.contains("The command ran"), "{transcript}");
    b.click("#unshare").await;
    b.until("the share button again", "document.querySelector('#share-session')").await;

    // Fork from the sidebar: a new session with the same conversation opens.
    b.js(&format!("document.querySelector('li.session[data-id=\"{session}\"] .tools button[aria-label=Fork]').click(); return null")).await;
    let fork = b
        .until(
            "the fork to open",
            &format!("location.hash.match(/ses_\\w+/)?.[0] !== '{session}' && location.hash.match(/ses_\\w+/)?.[0]"),
        )
        .await;
    b.until("the fork's copy of the conversation", "document.body.innerText.includes('The command ran')").await;
    b.goto(&format!("{url}/#/session/{session}")).await;
    b.until("the original again", &format!("document.querySelector('li.session.active[data-id=\"{session}\"]')")).await;
    assert_ne!(fork, session.as_str());

    // Rename and delete from the sidebar.
    b.js(&format!("document.querySelector('li.session[data-id=\"{session}\"] .tools button').click(); return null"))
        .await;
    b.until("the rename box", "document.querySelector('input.rename')").await;
    b.js("document.querySelector('input.rename').value = ''; return null").await;
    b.type_into("input.rename", &format!("Renamed in the browser{ENTER}")).await;
    b.until("the new title", "document.querySelector('#title').innerText === 'Renamed in the browser'").await;
    let (_, info) = super::send(reqwest::Client::new().get(format!("{url}/session/{session}"))).await;
    assert_eq!(info["title"], "Renamed in the browser");
    let delete = format!(
        "document.querySelector('li.session[data-id=\"{session}\"] .tools button:last-child').click(); return null"
    );
    b.js(&delete).await;
    b.js(&delete).await;
    b.until(
        "the session to leave the sidebar",
        &format!("!document.querySelector('li.session[data-id=\"{session}\"]')"),
    )
    .await;
    let (status, _) = super::send(reqwest::Client::new().get(format!("{url}/session/{session}"))).await;
    assert_eq!(status, 404);

    b.quit().await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_survives_a_server_restart_and_shows_the_servers_refusals() {
    let Some(chromium) = Chromium::start() else { return };
    let project = project().await;
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let options = || ServerOptions {
        port,
        credentials: Some(Credentials { username: "opencode".into(), password: "pw".into() }),
        ..ServerOptions::default()
    };
    let server = serve(&project, options()).await;
    let url = server.url();
    let b = chromium.browser(1280, 860).await;
    // The browser's Basic-auth prompt cannot be answered over WebDriver: send the credentials with
    // every request, as the browser does once a person has entered them.
    let token = base64::engine::general_purpose::STANDARD.encode("opencode:pw");
    b.cdp("Network.enable", json!({})).await;
    b.cdp("Network.setExtraHTTPHeaders", json!({"headers": {"Authorization": format!("Basic {token}")}})).await;

    b.goto(&url).await;
    b.click("#new-session").await;
    b.until("a session", "location.hash.startsWith('#/session/ses_')").await;
    b.type_into("#prompt", &format!("hello{ENTER}")).await;
    b.until("the answer over the password", "document.querySelector('.msg.assistant strong')?.innerText === 'mock'")
        .await;

    // The server goes away: the banner shows, the draft stays; it comes back: the stream resumes.
    b.type_into("#prompt", "a draft written while the server is down").await;
    server.shutdown().await.unwrap();
    b.until("the connection banner", "!document.querySelector('#conn').hidden").await;
    b.screenshot(&shot("09-offline")).await;
    let server = serve(&project, options()).await;
    b.until("the banner to go", "document.querySelector('#conn').hidden").await;
    assert_eq!(
        b.js("return document.querySelector('#prompt').value").await,
        "a draft written while the server is down"
    );
    b.js("document.querySelector('#prompt').value = ''; return null").await;
    b.type_into("#prompt", &format!("both tabs{ENTER}")).await;
    b.until("an answer after the restart", "document.body.innerText.includes('Both tabs see this answer')").await;

    // A 4xx shows the server's own message.
    b.js("location.hash = '#/session/ses_doesnotexist'; return null").await;
    b.until(
        "the server's 404 message",
        "document.querySelector('#toasts .toast')?.innerText.includes('404: session ses_doesnotexist not found')",
    )
    .await;
    b.until("no session left open", "location.hash === '#/'").await;
    b.screenshot(&shot("10-error")).await;

    b.quit().await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_two_thousand_messages_keeps_a_bounded_window() {
    let Some(chromium) = Chromium::start() else { return };
    let t = super::start().await;
    let (_, session) = t.post("/session", json!({"title": "Long"})).await;
    let id = session["id"].as_str().unwrap().to_owned();
    // The echo driver answers each prompt: 1,000 turns are 2,000 messages.
    for n in 0..1000 {
        let (status, _) = t
            .post(
                &format!("/session/{id}/message"),
                json!({"parts": [{"type": "text", "text": format!("prompt number {n}")}]}),
            )
            .await;
        assert_eq!(status, 200);
    }
    let b = chromium.browser(1280, 860).await;
    b.goto(&format!("{}/#/session/{id}", t.url)).await;
    b.until("the last prompt", "document.body.innerText.includes('prompt number 999')").await;
    let shown = b.js("return document.querySelectorAll('.msg').length").await;
    assert!(shown.as_u64().unwrap() <= 80, "{shown} messages in the DOM");
    b.until("the count of earlier messages", "document.querySelector('.earlier').innerText.startsWith('1920 earlier')")
        .await;
    // Scrolling up slides the window back, still bounded, and keeps sliding to the first prompt.
    for _ in 0..60 {
        let first = b.js("const t = document.querySelector('#timeline'); t.scrollTop = 0; t.dispatchEvent(new Event('scroll')); return document.body.innerText.includes('prompt number 0\\n')").await;
        if first == true {
            break;
        }
    }
    b.until(
        "the first prompt",
        "[...document.querySelectorAll('.msg.user')].some(m => m.innerText.trim() === 'prompt number 0')",
    )
    .await;
    let shown = b.js("return document.querySelectorAll('.msg').length").await;
    assert!(shown.as_u64().unwrap() <= 80, "{shown} messages in the DOM at the top");
    b.screenshot(&shot("11-long-session-top")).await;
    b.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sidebar_switches_between_projects() {
    let Some(chromium) = Chromium::start() else { return };
    let t = super::start().await;
    let other = t.git_project("other");
    // A project the server has seen (resolving a directory registers its project).
    let (status, _) = t.get(&format!("/path?{}", super::directory_query(&other))).await;
    assert_eq!(status, 200);
    let (_, here) = t.post("/session", json!({"title": "Here"})).await;
    let (_, child) = t.post("/session", json!({"title": "Child", "parentID": here["id"]})).await;
    let b = chromium.browser(1280, 860).await;
    b.goto(&t.url).await;
    b.js("window.__refused = []; document.addEventListener('securitypolicyviolation', (e) => __refused.push(e.violatedDirective)); return null").await;
    b.until(
        "the session of the server's directory",
        "document.querySelector('li.session .title')?.innerText === 'Here'",
    )
    .await;
    // A child session sits under its parent, indented (a style the Content-Security-Policy allows).
    let indent = |id: &Value| {
        format!(
            "parseFloat(getComputedStyle(document.querySelector('li.session[data-id=\"{}\"]')).paddingLeft)",
            id.as_str().unwrap()
        )
    };
    let deeper = b.js(&format!("return {} > {}", indent(&child["id"]), indent(&here["id"]))).await;
    assert_eq!(deeper, true, "the child is indented under its parent");
    // Another session opens with a click anywhere on its row (its actions show only once it is open).
    b.click(&format!("li.session[data-id=\"{}\"]", child["id"].as_str().unwrap())).await;
    b.until("the child open", "document.querySelector('#title').innerText === 'Child'").await;
    assert_eq!(b.js("return window.__refused").await, json!([]), "nothing the page does is refused by its policy");
    b.until("the project picker", "document.querySelectorAll('#project option').length === 2").await;
    let pick = format!(
        "const s = document.querySelector('#project'); s.value = {:?}; s.dispatchEvent(new Event('change')); return null",
        other.to_string_lossy()
    );
    b.js(&pick).await;
    b.until(
        "the other project's empty list",
        "document.querySelector('#sessions .none')?.innerText === 'No sessions yet.'",
    )
    .await;
    b.click("#new-session").await;
    let id = b.until("a session in the other project", "location.hash.match(/ses_\\w+/)?.[0]").await;
    let (_, made) = t.get(&format!("/session/{}", id.as_str().unwrap())).await;
    assert_eq!(made["directory"], other.to_string_lossy().as_ref(), "{made}");
    assert_ne!(made["id"], here["id"]);
    // The theme follows the system's: dark when the system prefers it (no choice made in the UI).
    let background = "getComputedStyle(document.body).backgroundColor";
    assert_eq!(b.js(&format!("return {background}")).await, "rgb(255, 255, 255)");
    b.cdp("Emulation.setEmulatedMedia", json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]})).await;
    b.until("the dark theme from the system", &format!("{background} === 'rgb(22, 24, 29)'")).await;

    // A reload stays in the chosen project.
    b.refresh().await;
    b.until(
        "the chosen project after a reload",
        &format!("document.querySelector('#project')?.value === {:?}", other.to_string_lossy()),
    )
    .await;
    b.quit().await;
}
