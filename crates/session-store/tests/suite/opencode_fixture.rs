//! A database in OpenCode 1.18's layout (the tables and columns the import reads, as OpenCode's own
//! binary creates them), written row by row: for import tests and the import benchmark.

use std::path::Path;

use rusqlite::Connection;
use rusqlite::params;
use serde_json::Value;
use serde_json::json;

const SCHEMA: &str = r"
CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text, icon_url text,
  icon_url_override text, icon_color text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_initialized integer, sandboxes text NOT NULL, commands text);
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, workspace_id text, parent_id text,
  slug text NOT NULL, directory text NOT NULL, path text, title text NOT NULL, version text NOT NULL,
  share_url text, summary_additions integer, summary_deletions integer, summary_files integer,
  summary_diffs text, metadata text, cost real DEFAULT 0 NOT NULL, tokens_input integer DEFAULT 0 NOT NULL,
  tokens_output integer DEFAULT 0 NOT NULL, tokens_reasoning integer DEFAULT 0 NOT NULL,
  tokens_cache_read integer DEFAULT 0 NOT NULL, tokens_cache_write integer DEFAULT 0 NOT NULL, revert text,
  permission text, agent text, model text, time_created integer NOT NULL, time_updated integer NOT NULL,
  time_compacting integer, time_archived integer);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
";

pub const PROJECT: &str = "31e1d44091090d469ce9bf200ee17e0cda6e5db7";

/// OpenCode's database being written.
pub struct OpenCodeDb {
    pub conn: Connection,
}

impl OpenCodeDb {
    pub fn create(path: &Path) -> Self {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute(
            "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES (?1, '/work', 'git', 1, 2, '[]')",
            [PROJECT],
        )
        .unwrap();
        Self { conn }
    }

    pub fn session(&self, id: &str, parent: Option<&str>, title: &str, created: i64) {
        self.conn
            .execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, path, title, version, cost,
                 tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model,
                 permission, time_created, time_updated)
                 VALUES (?1, ?2, ?3, 'brave-otter', '/work', '', ?4, '1.18.34', 0.25, 1000, 50, 7, 300, 20, 'build',
                 '{\"id\":\"m\",\"providerID\":\"p\"}', '[{\"permission\":\"bash\",\"pattern\":\"*\",\"action\":\"ask\"}]',
                 ?5, ?6)",
                params![id, PROJECT, parent, title, created, created + 1000],
            )
            .unwrap();
    }

    /// A message row; `data` is OpenCode's JSON without the ids.
    pub fn message(&self, id: &str, session: &str, created: i64, data: &Value) {
        self.conn
            .execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
                params![id, session, created, data.to_string()],
            )
            .unwrap();
    }

    pub fn part(&self, id: &str, message: &str, session: &str, data: &str) {
        self.conn
            .execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, 1, 1, ?4)",
                params![id, message, session, data],
            )
            .unwrap();
    }

    /// A user message with a text part and an assistant answer with a tool call, text and a step:
    /// the rows OpenCode writes for a tool turn (2 messages, 5 parts).
    #[allow(dead_code, reason = "the import benchmark's data; the tests write rows one by one")]
    pub fn turn(&self, session: &str, n: usize, created: i64) {
        let user = format!("msg_{created:012x}{n:06}u");
        let assistant = format!("msg_{created:012x}{n:06}a");
        self.message(&user, session, created, &user_message());
        self.part(
            &format!("prt_{created:012x}{n:06}a"),
            &user,
            session,
            &json!({"type": "text", "text": format!("question {n}")}).to_string(),
        );
        self.message(&assistant, session, created + 1, &assistant_message(&user));
        let parts = [
            json!({"type": "step-start", "snapshot": "abc"}),
            json!({"type": "tool", "tool": "bash", "callID": format!("call_{n}"), "state": {"status": "completed",
                "input": {"command": "ls"}, "output": format!("file{n}.txt\n"), "metadata": {"exit": 0},
                "title": "ls", "time": {"start": created, "end": created + 5}}}),
            json!({"type": "text", "text": format!("answer {n}"), "time": {"start": created, "end": created + 9}}),
            json!({"type": "step-finish", "reason": "stop", "snapshot": "abc", "cost": 0.001,
                "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
        ];
        for (i, part) in parts.iter().enumerate() {
            self.part(&format!("prt_{created:012x}{n:06}b{i}"), &assistant, session, &part.to_string());
        }
    }
}

pub fn user_message() -> Value {
    json!({"role": "user", "time": {"created": 1}, "agent": "build", "model": {"providerID": "p", "modelID": "m"}})
}

pub fn assistant_message(parent: &str) -> Value {
    json!({"role": "assistant", "parentID": parent, "mode": "build", "agent": "build",
        "path": {"cwd": "/work", "root": "/work"}, "cost": 0.001,
        "tokens": {"total": 15, "input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        "modelID": "m", "providerID": "p", "time": {"created": 2, "completed": 3}, "finish": "stop"})
}
