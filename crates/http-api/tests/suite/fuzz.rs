//! A property pass over every operation of the OpenAPI document (`/doc`): for each route, inputs are
//! generated from its own schema (path and query parameters, JSON bodies), then broken on purpose
//! (wrong types, missing required fields, unknown ids, hostile paths, truncated JSON, non-JSON, huge
//! strings). Whatever arrives, the server answers below 500 and keeps serving.
//!
//! It runs over the real session runtime (the mock provider as the model), as `opencode serve` does.
//! Deterministic: a fixed seed per run, so a failure names the case that reproduces it.

use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use opencode_mock_provider::MockResponse;

use super::percent_encode;
use super::runtime::RuntimeServer as TestServer;
use super::runtime::start_runtime;

const CASES_PER_OPERATION: usize = 24;
const SEED: u64 = 0x6f70_656e_636f_6465;

#[tokio::test]
async fn no_generated_request_gets_a_5xx() {
    let t = start_runtime(json!({})).await;
    // Every prompt the pass admits may reach the model: it always has an answer.
    t.mock.push_all((0..4000).map(|_| MockResponse::chat_text("ok")));
    let doc = t.get("/doc").await.1;
    let mut rng = Rng(SEED);
    let mut sent = 0;
    for (path, methods) in doc["paths"].as_object().unwrap() {
        for (method, operation) in methods.as_object().unwrap() {
            for case in 0..CASES_PER_OPERATION {
                let request = Case::generate(&t, &doc, path, operation, &mut rng).await;
                let status = request.send(&t, method).await;
                assert!(
                    status < 500,
                    "{} {} (case {case}) answered {status}\nbody: {}",
                    method.to_uppercase(),
                    request.url,
                    request.body_text()
                );
                sent += 1;
            }
        }
    }
    assert!(sent >= 70 * CASES_PER_OPERATION, "only {sent} requests were generated");
    let (status, health) = t.get("/global/health").await;
    assert_eq!((status, health["healthy"].clone()), (200, json!(true)), "the server still serves after the pass");
}

/// One generated request.
struct Case {
    url: String,
    body: Option<Body>,
}

enum Body {
    Json(Value),
    Raw(&'static str, String),
}

impl Case {
    async fn generate(t: &TestServer, doc: &Value, path: &str, operation: &Value, rng: &mut Rng) -> Case {
        let mut url = String::new();
        for segment in path.split('/').filter(|s| !s.is_empty()) {
            url.push('/');
            match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => url.push_str(&percent_encode(&path_value(t, name, rng).await, b"")),
                None => url.push_str(segment),
            }
        }
        let mut query = Vec::new();
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            if parameter["in"] != "query" || rng.chance(40) {
                continue;
            }
            let name = parameter["name"].as_str().unwrap_or_default();
            let value = query_value(t, doc, name, &parameter["schema"], rng);
            query.push(format!("{}={}", percent_encode(name, b""), percent_encode(&value, b"")));
        }
        if !query.is_empty() {
            url = format!("{url}?{}", query.join("&"));
        }
        let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
        let body = (!schema.is_null()).then(|| body(doc, schema, rng));
        Case { url, body }
    }

    async fn send(&self, t: &TestServer, method: &str) -> u16 {
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let mut request = t.http.request(method, t.at(&self.url));
        request = match &self.body {
            Some(Body::Json(value)) => request.json(value),
            Some(Body::Raw(content_type, text)) => request.header("content-type", *content_type).body(text.clone()),
            None => request,
        };
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let streaming = response
            .headers()
            .get("content-type")
            .is_some_and(|value| value.to_str().unwrap_or_default().starts_with("text/event-stream"));
        if !streaming {
            // Read the whole answer: a handler that fails mid-body must show up here too.
            response.bytes().await.unwrap();
        }
        status
    }

    fn body_text(&self) -> String {
        match &self.body {
            Some(Body::Json(value)) => value.to_string(),
            Some(Body::Raw(content_type, text)) => format!("({content_type}) {text}"),
            None => String::new(),
        }
    }
}

/// Ids that exist (a fresh session each time, so deletes earlier in the pass do not matter), ids
/// that do not, and hostile text.
async fn path_value(t: &TestServer, name: &str, rng: &mut Rng) -> String {
    if rng.chance(50) {
        match name {
            "sessionID" => {
                let (_, session) = t.post("/session", json!({})).await;
                return session["id"].as_str().unwrap().to_owned();
            }
            "projectID" => return t.get("/project/current").await.1["id"].as_str().unwrap().to_owned(),
            _ => {}
        }
    }
    let prefix = match name {
        "sessionID" => "ses_",
        "messageID" => "msg_",
        "projectID" => "",
        _ => "per_",
    };
    match rng.below(4) {
        0 => format!("{prefix}{}", rng.word(12)),
        1 => rng.hostile(),
        2 => "x".repeat(rng.below(3000) + 1),
        _ => String::from("0"),
    }
}

/// Directories are the test's own (existing or not) or relative names that do not exist: routes such
/// as `PATCH /config` write into the directory they are given, and the pass must never write outside
/// its temporary root.
fn query_value(t: &TestServer, doc: &Value, name: &str, schema: &Value, rng: &mut Rng) -> String {
    match name {
        "directory" => match rng.below(4) {
            0 => t.dir.display().to_string(),
            1 => t.dir.join(rng.word(6)).display().to_string(),
            2 => format!("missing-{}", rng.word(8)),
            _ => t.dir.join("💥 ünïcödé").display().to_string(),
        },
        "path" if rng.chance(50) => rng.hostile(),
        _ if rng.chance(30) => rng.hostile(),
        _ => match value(doc, schema, rng, 0) {
            Value::String(text) => text,
            other => other.to_string(),
        },
    }
}

fn body(doc: &Value, schema: &Value, rng: &mut Rng) -> Body {
    let mut value = value(doc, schema, rng, 0);
    match rng.below(10) {
        0 => Body::Raw("application/json", truncate(&value.to_string(), rng)),
        1 => Body::Raw("text/plain", String::from("not json")),
        2 | 3 => {
            mutate(&mut value, rng);
            Body::Json(value)
        }
        _ => Body::Json(value),
    }
}

/// A value following `schema` (refs resolved, depth bounded).
fn value(doc: &Value, schema: &Value, rng: &mut Rng, depth: usize) -> Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or_default();
        return value(doc, &doc["components"]["schemas"][name], rng, depth + 1);
    }
    if schema["nullable"] == true && rng.chance(10) {
        return Value::Null;
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(options) = schema[key].as_array().filter(|options| !options.is_empty()) {
            return value(doc, &options[rng.below(options.len())], rng, depth + 1);
        }
    }
    if let Some(options) = schema["enum"].as_array().filter(|options| !options.is_empty()) {
        return options[rng.below(options.len())].clone();
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.iter().find(|kind| *kind != "null").cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    match kind.as_str().unwrap_or(if schema["properties"].is_object() { "object" } else { "any" }) {
        "object" => object(doc, schema, rng, depth),
        "array" if depth < 6 => {
            (0..rng.below(3)).map(|_| value(doc, &schema["items"], rng, depth + 1)).collect::<Vec<_>>().into()
        }
        "array" => json!([]),
        "string" if rng.chance(20) => Value::String(rng.hostile()),
        "string" => {
            let len = rng.below(12) + 1;
            Value::String(rng.word(len))
        }
        "integer" => json!(rng.below(2000) as i64 - 10),
        "number" => json!(rng.below(1000) as f64 / 7.0),
        "boolean" => json!(rng.chance(50)),
        _ => json!({ "anything": rng.word(4) }),
    }
}

fn object(doc: &Value, schema: &Value, rng: &mut Rng, depth: usize) -> Value {
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut out = Map::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        if depth > 6 || (!required.contains(&name.as_str()) && rng.chance(40)) {
            continue;
        }
        let generated = if name == "command" {
            // Routes run commands in the test directory: keep them harmless.
            Value::String(format!("echo {}", rng.word(6)))
        } else {
            value(doc, property, rng, depth + 1)
        };
        out.insert(name.clone(), generated);
    }
    Value::Object(out)
}

/// Breaks one thing: a field's type, a required field, or the whole document's shape.
fn mutate(value: &mut Value, rng: &mut Rng) {
    let replacement = match rng.below(6) {
        0 => Value::Null,
        1 => json!(-1),
        2 => json!("x".repeat(100_000)),
        3 => json!([[[[]]]]),
        4 => json!({ "unexpected": true }),
        _ => json!(true),
    };
    match value {
        Value::Object(fields) if !fields.is_empty() => {
            let key = fields.keys().nth(rng.below(fields.len())).cloned().unwrap_or_default();
            if rng.chance(50) {
                fields.remove(&key);
            } else {
                fields.insert(key, replacement);
            }
        }
        other => *other = replacement,
    }
}

fn truncate(text: &str, rng: &mut Rng) -> String {
    let cut = rng.below(text.len().max(1));
    text.chars().take(cut).collect()
}

/// splitmix64: small, deterministic, good enough to pick cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn word(&mut self, len: usize) -> String {
        (0..len).map(|_| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[self.below(36)])).collect()
    }

    fn hostile(&mut self) -> String {
        const HOSTILE: [&str; 12] = [
            "../../../../etc/passwd",
            "/",
            "",
            "%00",
            "\u{0}",
            "..",
            "💥 ünïcödé",
            "' OR 1=1 --",
            "{\"a\":",
            "-1",
            "18446744073709551616",
            "a/../../b",
        ];
        HOSTILE[self.below(HOSTILE.len())].to_owned()
    }
}
