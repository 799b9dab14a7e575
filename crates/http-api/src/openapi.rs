//! The OpenAPI 3.1 document, generated from the route table ([`crate::routes`]): every operation the
//! router serves appears here, request bodies and this crate's own response types with schemas
//! derived by `schemars`. Responses that are OpenCode's stored types (`Session`, `Message`, `Part`, ...)
//! are described by name: their fields are those of OpenCode 1.x's own document.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::routes::Returns;
use crate::routes::operations;

/// `{name, data: {message, code}}`: every error body.
#[derive(JsonSchema)]
#[allow(dead_code, reason = "schema only")]
struct ErrorBody {
    /// `BadRequest`, `NotFoundError`, `SessionBusyError`, `UnauthorizedError` or `UnknownError`.
    name: String,
    data: ErrorData,
}

#[derive(JsonSchema)]
#[allow(dead_code, reason = "schema only")]
struct ErrorData {
    message: String,
    /// `INVALID_INPUT`, `NOT_FOUND`, `CONFLICT`, `UNAUTHORIZED`, `PAYLOAD_TOO_LARGE`,
    /// `UNAVAILABLE` or `INTERNAL`.
    code: String,
}

/// The whole document (deterministic: the committed `openapi.json` is compared with it).
pub fn document() -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let error = generator.subschema_for::<ErrorBody>().to_value();
    let mut paths: Map<String, Value> = Map::new();
    for op in operations() {
        let mut operation = Map::new();
        operation.insert("operationId".into(), json!(op.id));
        operation.insert("summary".into(), json!(op.summary));
        operation.insert("parameters".into(), Value::Array(parameters(op.path, op.query)));
        if let Some(body) = op.body {
            operation.insert(
                "requestBody".into(),
                json!({ "required": true, "content": { "application/json": { "schema": body(&mut generator) } } }),
            );
        }
        let mut responses = Map::new();
        responses.insert(success_code(op.returns).into(), success(op.returns, &mut generator));
        for (code, why) in [("400", "Invalid input"), ("404", "Not found")] {
            responses.insert(
                code.into(),
                json!({ "description": why, "content": { "application/json": { "schema": error } } }),
            );
        }
        operation.insert("responses".into(), Value::Object(responses));
        let entry = paths.entry(op.path.to_owned()).or_insert_with(|| json!({}));
        if let Value::Object(methods) = entry {
            methods.insert(op.method.to_owned(), Value::Object(operation));
        }
    }
    let schemas: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "openapi": "3.1.0",
        "info": { "title": "opencode", "version": env!("CARGO_PKG_VERSION"),
                  "description": "OpenCode-compatible HTTP API of opencode-rs" },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "basic": { "type": "http", "scheme": "basic" } },
        },
        "security": [ {}, { "basic": [] } ],
    })
}

fn parameters(path: &str, query: &[&str]) -> Vec<Value> {
    let mut out: Vec<Value> = path
        .split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({ "in": "path", "name": name, "required": true, "schema": { "type": "string" } }))
        .collect();
    for name in ["directory", "workspace"].iter().chain(query) {
        out.push(json!({ "in": "query", "name": name, "schema": { "type": "string" } }));
    }
    out
}

fn success_code(returns: Returns) -> &'static str {
    match returns {
        Returns::Empty => "204",
        _ => "200",
    }
}

fn success(returns: Returns, generator: &mut schemars::SchemaGenerator) -> Value {
    let json_body =
        |schema: Value| json!({ "description": "Success", "content": { "application/json": { "schema": schema } } });
    match returns {
        Returns::Schema(schema) => json_body(schema(generator)),
        Returns::Named(name) => json_body(json!({ "type": "object", "description": format!("OpenCode 1.x `{name}`") })),
        Returns::ListOf(name) => json_body(json!({
            "type": "array", "items": { "type": "object", "description": format!("OpenCode 1.x `{name}`") }
        })),
        Returns::Bool => json_body(json!({ "type": "boolean" })),
        Returns::Empty => json!({ "description": "No content" }),
        Returns::Sse => json!({ "description": "Server-sent events; data is {\"id\",\"type\",\"properties\"}",
                                "content": { "text/event-stream": { "schema": { "type": "string" } } } }),
        Returns::Html => {
            json!({ "description": "HTML", "content": { "text/html": { "schema": { "type": "string" } } } })
        }
    }
}
