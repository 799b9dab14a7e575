//! `webfetch`: fetches one http(s) URL and returns it as markdown (HTML converted), plain text (tags
//! stripped) or raw HTML; images come back as media. The body is read up to [`MAX_RESPONSE_BYTES`]
//! and the whole exchange is bounded by the call's timeout. Every network or HTTP failure is a
//! result the model can correct from.

use std::time::Duration;

use base64::Engine;
use futures_util::future::BoxFuture;
use opencode_llm::MediaData;
use reqwest::Url;
use reqwest::header;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

use crate::error::RegistryError;
use crate::error::ToolError;
use crate::tool::Media;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// The body is read up to this many bytes; the rest is not downloaded.
pub const MAX_RESPONSE_BYTES: usize = 5 * 1024 * 1024;
/// Seconds allowed when the call gives no timeout.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// Longer timeouts are clamped to this.
pub const MAX_TIMEOUT_SECS: u64 = 120;
/// HTML nested deeper than this is reduced to text rather than converted (the converter recurses).
const MAX_CONVERT_DEPTH: usize = 1000;
/// The converter runs on its own thread with this stack.
const CONVERT_STACK_BYTES: usize = 64 * 1024 * 1024;
/// Looks like a browser: some sites refuse unknown agents.
const BROWSER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                             Chrome/143.0.0.0 Safari/537.36";

/// The `webfetch` tool.
#[derive(Debug, Clone)]
pub struct WebFetch {
    http: reqwest::Client,
}

/// The representation the model wants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Tags stripped, text kept.
    Text,
    /// HTML converted to markdown (the default).
    #[default]
    Markdown,
    /// The page as served.
    Html,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebFetchInput {
    /// The URL to fetch (http:// or https://).
    pub url: String,
    /// The format to return the content in: text, markdown (default) or html.
    #[serde(default)]
    pub format: Format,
    /// Timeout in seconds (default 30, at most 120).
    #[serde(default)]
    pub timeout: Option<u64>,
}

impl WebFetch {
    /// A fetcher with its own HTTP client (rustls with the ring provider).
    pub fn new() -> Result<Self, RegistryError> {
        // reqwest is built without a bundled crypto provider; installing ring fails only when a
        // provider is already installed, which is fine.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(BROWSER_AGENT)
            .build()
            .map_err(|err| RegistryError::HttpClient(error_chain(&err)))?;
        Ok(Self { http })
    }
}

impl TypedTool for WebFetch {
    type Input = WebFetchInput;
    const NAME: &'static str = "webfetch";

    fn description(&self) -> String {
        "Fetches content from a URL (http or https) and returns it as markdown (default), plain text or \
         raw HTML; images are returned as attachments. Responses are read up to 5 MiB; the timeout is in \
         seconds (default 30, at most 120). Use it to read documentation or web pages the task needs."
            .into()
    }

    fn run<'a>(&'a self, input: WebFetchInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let url = parse_url(&input.url)?;
            let secs = match input.timeout {
                Some(0) => return Err(ToolError::model("The timeout must be at least 1 second")),
                Some(secs) => secs.min(MAX_TIMEOUT_SECS),
                None => DEFAULT_TIMEOUT_SECS,
            };
            let mut ask = crate::pending::PermissionAsk {
                permission: "webfetch".into(),
                patterns: vec![input.url.clone()],
                always: vec!["*".into()],
                metadata: serde_json::Map::new(),
            };
            ask.metadata.insert("url".into(), input.url.clone().into());
            ask.metadata.insert("format".into(), serde_json::to_value(input.format).unwrap_or_default());
            ask.metadata.insert("timeout".into(), secs.into());
            ctx.ask(ask).await?;
            let fetched = tokio::time::timeout(Duration::from_secs(secs), self.fetch(url, input.format))
                .await
                .map_err(|_| ToolError::model(format!("Request to {} timed out after {secs} s", input.url)))??;
            render(fetched, &input.url, input.format).await
        })
    }
}

/// A response read (up to the cap).
struct Fetched {
    status: u16,
    content_type: String,
    body: Vec<u8>,
    /// The body went on beyond [`MAX_RESPONSE_BYTES`].
    cut: bool,
}

impl WebFetch {
    async fn fetch(&self, url: Url, format: Format) -> Result<Fetched, ToolError> {
        let shown = url.to_string();
        let request = |agent: &str| {
            self.http.get(url.clone()).header(header::USER_AGENT, agent).header(header::ACCEPT, accept(format))
        };
        let mut response = request(BROWSER_AGENT).send().await.map_err(|err| network_error(&shown, &err))?;
        // Cloudflare challenges browser-looking agents that run no script; an honest one passes.
        if response.status() == reqwest::StatusCode::FORBIDDEN
            && response.headers().get("cf-mitigated").is_some_and(|value| value == "challenge")
        {
            response = request("opencode").send().await.map_err(|err| network_error(&shown, &err))?;
        }
        let status = response.status();
        if status.as_u16() >= 400 {
            return Err(ToolError::model(format!("Request to {shown} failed with status code: {status}")));
        }
        let content_type =
            response.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("").to_owned();
        let (body, cut) = read_capped(response, &shown).await?;
        Ok(Fetched { status: status.as_u16(), content_type, body, cut })
    }
}

fn parse_url(raw: &str) -> Result<Url, ToolError> {
    let lower = raw.trim_start().to_ascii_lowercase();
    if !lower.starts_with("http://") && !lower.starts_with("https://") {
        return Err(ToolError::model(format!("URL must start with http:// or https://: {raw}")));
    }
    Url::parse(raw.trim()).map_err(|err| ToolError::model(format!("Invalid URL {raw}: {err}")))
}

fn accept(format: Format) -> &'static str {
    match format {
        Format::Markdown => "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, text/html;q=0.7, */*;q=0.1",
        Format::Text => "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
        Format::Html => {
            "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, text/markdown;q=0.7, */*;q=0.1"
        }
    }
}

/// Reads the body up to [`MAX_RESPONSE_BYTES`]; whatever follows is never downloaded.
async fn read_capped(mut response: reqwest::Response, shown: &str) -> Result<(Vec<u8>, bool), ToolError> {
    let declared = response.content_length().and_then(|len| usize::try_from(len).ok()).unwrap_or(0);
    let mut body = Vec::with_capacity(declared.min(MAX_RESPONSE_BYTES));
    while let Some(chunk) = response.chunk().await.map_err(|err| network_error(shown, &err))? {
        let room = MAX_RESPONSE_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

async fn render(fetched: Fetched, url: &str, format: Format) -> Result<ToolOutput, ToolError> {
    let Fetched { status, content_type, body, cut } = fetched;
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let title = format!("{url} ({})", if content_type.is_empty() { "unknown type" } else { &content_type });
    let output = if is_image(&mime) {
        if cut {
            return Err(ToolError::model(format!("The image at {url} is larger than 5 MiB; it cannot be attached")));
        }
        let data = MediaData::Base64(base64::engine::general_purpose::STANDARD.encode(&body));
        let mut output = ToolOutput::text("Image fetched successfully");
        output.media.push(Media { media_type: mime.clone(), data, filename: Some(url.to_owned()) });
        output
    } else {
        if crate::tools::read::is_binary(&body[..body.len().min(8192)]) {
            return Err(ToolError::model(format!(
                "The response from {url} is binary ({}); webfetch returns text, markdown, HTML or images only",
                if mime.is_empty() { "unknown type" } else { &mime }
            )));
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let html = is_html(&mime, &text);
        let mut text = match format {
            Format::Markdown if html => to_markdown(text).await?,
            Format::Text if html => html_to_text(&text),
            _ => text,
        };
        if cut {
            text.push_str(&format!(
                "\n\n[Response truncated: the body exceeds {} MiB; only the first {} MiB were read.]",
                MAX_RESPONSE_BYTES >> 20,
                MAX_RESPONSE_BYTES >> 20
            ));
        }
        ToolOutput::text(text)
    };
    Ok(output
        .with_title(title)
        .with_metadata("url", url)
        .with_metadata("status", status)
        .with_metadata("contentType", &content_type)
        .with_metadata("bytes", body.len())
        .with_metadata("responseTruncated", cut))
}

fn is_image(mime: &str) -> bool {
    mime.starts_with("image/") && mime != "image/svg+xml" && mime != "image/vnd.fastbidsheet"
}

fn is_html(mime: &str, text: &str) -> bool {
    if mime.contains("html") {
        return true;
    }
    if !mime.is_empty() && mime != "application/octet-stream" {
        return false;
    }
    let head: String = text.trim_start().chars().take(15).collect::<String>().to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// Converts on a dedicated thread with a large stack: the converter recurses over the DOM, so very
/// deep documents are reduced to text instead.
async fn to_markdown(html: String) -> Result<String, ToolError> {
    if nesting_depth(&html) > MAX_CONVERT_DEPTH {
        return Ok(html_to_text(&html));
    }
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("webfetch-markdown".into())
        .stack_size(CONVERT_STACK_BYTES)
        .spawn(move || {
            let converter = htmd::HtmlToMarkdown::builder()
                .skip_tags(vec!["script", "style", "meta", "link", "noscript", "template"])
                .options(htmd::options::Options {
                    hr_style: htmd::options::HrStyle::Dashes,
                    bullet_list_marker: htmd::options::BulletListMarker::Dash,
                    ul_bullet_spacing: 1,
                    ol_number_spacing: 1,
                    ..htmd::options::Options::default()
                })
                .build();
            // The receiver only goes away when the call was dropped; the result is unwanted then.
            let _ = sender.send(converter.convert(&html));
        })
        .map_err(|err| ToolError::fatal(format!("cannot start the HTML converter: {err}")))?;
    match receiver.await {
        Ok(Ok(markdown)) => Ok(markdown),
        Ok(Err(err)) => Err(ToolError::model(format!("Cannot convert the page to markdown: {err}"))),
        Err(_) => Err(ToolError::fatal("the HTML converter stopped without a result")),
    }
}

/// The deepest element nesting, counting only elements whose end tag is required.
fn nesting_depth(html: &str) -> usize {
    const NO_DEPTH: &[&str] = &[
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr",
        "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot", "colgroup", "rb",
        "rt", "rp", "!doctype",
    ];
    let bytes = html.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'<', &bytes[at..]) {
        at += offset + 1;
        let closing = bytes.get(at) == Some(&b'/');
        let start = if closing { at + 1 } else { at };
        let end = bytes[start..]
            .iter()
            .position(|b| !b.is_ascii_alphanumeric() && *b != b'!')
            .map_or(bytes.len(), |n| start + n);
        let name = html.get(start..end).unwrap_or("").to_ascii_lowercase();
        if name.is_empty() || NO_DEPTH.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else if bytes.get(end..).is_some_and(|rest| !self_closing(rest)) {
            depth += 1;
            deepest = deepest.max(depth);
        }
    }
    deepest
}

fn self_closing(rest: &[u8]) -> bool {
    let close = memchr::memchr(b'>', rest).unwrap_or(rest.len());
    close > 0 && rest[close - 1] == b'/'
}

/// Text of an HTML page: tags dropped, script/style-like content skipped, block ends as line breaks,
/// common entities decoded, whitespace collapsed and blank lines dropped.
pub fn html_to_text(html: &str) -> String {
    const SKIP: &[&str] = &["script", "style", "noscript", "iframe", "object", "embed", "template", "svg", "head"];
    const BLOCK: &[&str] = &[
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "header",
        "footer",
        "pre",
        "blockquote",
        "ul",
        "ol",
        "table",
        "title",
        "hr",
    ];
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    let mut skipping: Option<String> = None;
    while let Some(open) = rest.find('<') {
        if skipping.is_none() {
            out.push_str(&decode_entities(&rest[..open]));
        }
        let after = &rest[open + 1..];
        if let Some(comment) = after.strip_prefix("!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            continue;
        }
        let close = after.find('>').unwrap_or(after.len());
        let tag = &after[..close];
        rest = after.get(close + 1..).unwrap_or("");
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        match &skipping {
            Some(skipped) if closing && *skipped == name => skipping = None,
            Some(_) => {}
            None if !closing && SKIP.contains(&name.as_str()) && !tag.ends_with('/') => skipping = Some(name),
            None if BLOCK.contains(&name.as_str()) => out.push('\n'),
            None => {}
        }
    }
    if skipping.is_none() {
        out.push_str(&decode_entities(rest));
    }
    tidy_lines(&out)
}

fn tidy_lines(text: &str) -> String {
    let lines = text.lines().map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "));
    lines.filter(|line| !line.is_empty()).collect::<Vec<_>>().join("\n")
}

fn decode_entities(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('&') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let decoded = after.find(';').filter(|&end| end <= 10).and_then(|end| Some((entity(&after[..end])?, end)));
        match decoded {
            Some((ch, end)) => {
                out.push(ch);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

fn entity(name: &str) -> Option<char> {
    let numeric = |digits: &str, radix| u32::from_str_radix(digits, radix).ok().and_then(char::from_u32);
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => match name.strip_prefix('#') {
            Some(hex) if hex.starts_with(['x', 'X']) => numeric(&hex[1..], 16),
            Some(decimal) => numeric(decimal, 10),
            None => None,
        },
    }
}

fn network_error(url: &str, err: &reqwest::Error) -> ToolError {
    ToolError::model(format!("Cannot fetch {url}: {}", error_chain(err)))
}

/// An error with its causes, `a: b: c` (reqwest's own message alone is vague).
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let message = cause.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_drops_tags_scripts_and_decodes_entities() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1>\
                    <script>var x = '<p>';</script><p>A &amp; B &lt;3&gt; &#65;&#x42;</p><!-- hidden --><p>next</p></body></html>";
        assert_eq!(html_to_text(html), "Title\nA & B <3> AB\nnext");
    }

    #[test]
    fn depth_ignores_void_and_optional_end_tags() {
        assert_eq!(nesting_depth("<div><p>a<p>b<br><img src=x/></div>"), 1);
        assert_eq!(nesting_depth(&"<div>".repeat(50)), 50);
        assert_eq!(nesting_depth("<div><span/></div>"), 1);
    }

    #[tokio::test]
    async fn deep_documents_convert_without_overflowing() {
        let deep = |n: usize| format!("{}deep text{}", "<div>".repeat(n), "</div>".repeat(n));
        let within = to_markdown(deep(MAX_CONVERT_DEPTH)).await;
        assert_eq!(within, Ok("deep text".to_owned()));
        let beyond = to_markdown(deep(200_000)).await;
        assert_eq!(beyond, Ok("deep text".to_owned()), "reduced to text instead of recursing");
    }

    #[test]
    fn only_http_urls() {
        assert!(parse_url("ftp://example.com").is_err());
        assert!(parse_url("file:///etc/passwd").is_err());
        assert!(parse_url("https://exa mple.com").is_err());
        assert!(parse_url("https://example.com/a?b=c").is_ok());
    }
}
