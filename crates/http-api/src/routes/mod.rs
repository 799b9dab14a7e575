//! The route table: every operation the server serves, with what the OpenAPI document says about it.
//! The router and `/doc` are both built from [`operations`], so the document cannot miss a route.

mod auth;
mod command;
mod config;
mod files;
mod global;
mod mcp;
mod part;
mod permission;
mod project;
mod project_update;
mod pty;
mod question;
mod search;
mod session;
mod share;
mod shell;
mod sse;
mod status;
mod tools;
mod v2;
mod vcs;

use axum::handler::Handler;
use axum::routing::MethodFilter;
use axum::routing::MethodRouter;
use schemars::JsonSchema;
use schemars::SchemaGenerator;
use serde_json::Value;

use crate::state::AppState;

pub(crate) use mcp::relay_mcp_events;

/// What an operation returns, for the OpenAPI document.
#[derive(Clone, Copy)]
pub(crate) enum Returns {
    /// JSON described by a schemars type.
    Schema(fn(&mut SchemaGenerator) -> Value),
    /// JSON of the named OpenCode type (see OpenCode's own document for its fields).
    Named(&'static str),
    /// An array of the named OpenCode type.
    ListOf(&'static str),
    /// `true` on success.
    Bool,
    /// 204 without a body.
    Empty,
    /// `text/event-stream`.
    Sse,
    /// `text/html`.
    Html,
}

/// One operation: method + path + OpenAPI facts + handler.
pub(crate) struct Op {
    pub method: &'static str,
    pub path: &'static str,
    pub id: &'static str,
    pub summary: &'static str,
    pub body: Option<fn(&mut SchemaGenerator) -> Value>,
    pub query: &'static [&'static str],
    pub returns: Returns,
    pub handler: MethodRouter<AppState>,
}

impl Op {
    fn new<H: Handler<T, AppState>, T: 'static>(
        method: &'static str,
        path: &'static str,
        id: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        let filter = match method {
            "get" => MethodFilter::GET,
            "post" => MethodFilter::POST,
            "patch" => MethodFilter::PATCH,
            "put" => MethodFilter::PUT,
            _ => MethodFilter::DELETE,
        };
        Self {
            method,
            path,
            id,
            summary,
            body: None,
            query: &[],
            returns: Returns::Empty,
            handler: axum::routing::on(filter, handler),
        }
    }

    pub fn get<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        id: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        Self::new("get", path, id, summary, h)
    }

    pub fn post<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        id: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        Self::new("post", path, id, summary, h)
    }

    pub fn patch<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        id: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        Self::new("patch", path, id, summary, h)
    }

    pub fn put<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        id: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        Self::new("put", path, id, summary, h)
    }

    pub fn delete<H: Handler<T, AppState>, T: 'static>(
        path: &'static str,
        id: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        Self::new("delete", path, id, summary, h)
    }

    pub fn body<B: JsonSchema>(mut self) -> Self {
        self.body = Some(|generator| schema_value(generator.subschema_for::<B>()));
        self
    }

    pub fn returns<R: JsonSchema>(mut self) -> Self {
        self.returns = Returns::Schema(|generator| schema_value(generator.subschema_for::<R>()));
        self
    }

    pub fn returns_named(mut self, name: &'static str) -> Self {
        self.returns = Returns::Named(name);
        self
    }

    pub fn returns_list(mut self, name: &'static str) -> Self {
        self.returns = Returns::ListOf(name);
        self
    }

    pub fn returns_bool(mut self) -> Self {
        self.returns = Returns::Bool;
        self
    }

    pub fn returns_sse(mut self) -> Self {
        self.returns = Returns::Sse;
        self
    }

    pub fn returns_html(mut self) -> Self {
        self.returns = Returns::Html;
        self
    }

    pub fn query(mut self, names: &'static [&'static str]) -> Self {
        self.query = names;
        self
    }
}

fn schema_value(schema: schemars::Schema) -> Value {
    schema.to_value()
}

/// Every operation the server serves.
pub(crate) fn operations() -> Vec<Op> {
    let mut ops = Vec::new();
    ops.extend(global::ops());
    ops.extend(session::ops());
    ops.extend(project::ops());
    ops.extend(files::ops());
    ops.extend(search::ops());
    ops.extend(command::ops());
    ops.extend(shell::ops());
    ops.extend(pty::ops());
    ops.extend(permission::ops());
    ops.extend(question::ops());
    ops.extend(config::ops());
    ops.extend(auth::ops());
    ops.extend(mcp::ops());
    ops.extend(share::ops());
    ops.extend(sse::ops());
    ops.extend(v2::ops());
    ops.extend(vcs::ops());
    ops.extend(status::ops());
    ops.extend(part::ops());
    ops.extend(project_update::ops());
    ops.extend(tools::ops());
    ops
}
