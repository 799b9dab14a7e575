//! Commands, init, shell and questions over the session runtime against the mock provider.

use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::runtime::first_of;
use super::runtime::prompt;
use super::runtime::sent_messages;
use super::runtime::start_runtime;
use super::runtime::text;
use super::runtime::texts;
use super::runtime::tool_call;
use super::runtime::until_idle;

/// The text of the last user message the mock received in request `index`.
fn last_user_text(t: &super::runtime::RuntimeServer, index: usize) -> String {
    let sent = sent_messages(&t.mock, index);
    let user = sent.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(text) => text.clone(),
        other => other.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect(),
    }
}

#[tokio::test]
async fn commands_come_from_config_and_markdown_templates_and_expand_arguments() {
    let t = start_runtime(json!({
        "command": { "greet": { "template": "Say hello to $1 and then $2", "description": "greets" } }
    }))
    .await;
    let commands_dir = t.dir.join(".opencode/command");
    std::fs::create_dir_all(commands_dir.join("git")).unwrap();
    std::fs::write(
        commands_dir.join("review.md"),
        "---\ndescription: review files\nagent: build\n---\nReview these files: $ARGUMENTS\n",
    )
    .unwrap();
    std::fs::write(commands_dir.join("git/commit.md"), "Write a commit message").unwrap();

    let (status, list) = t.get("/command").await;
    assert_eq!(status, 200, "{list}");
    let by_name = |name: &str| list.as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap();
    assert_eq!(by_name("greet")["hints"], json!(["$1", "$2"]));
    assert_eq!(by_name("greet")["description"], "greets");
    let review = by_name("review");
    assert_eq!(
        (review["description"].clone(), review["agent"].clone(), review["hints"].clone(), review["source"].clone()),
        (json!("review files"), json!("build"), json!(["$ARGUMENTS"]), json!("command"))
    );
    assert_eq!(by_name("git/commit")["template"], "Write a commit message");
    assert_eq!(by_name("init")["hints"], json!(["$ARGUMENTS"]));

    t.mock.push(text("Reviewed."));
    t.mock.push(text("Hello done."));
    let id = t.session().await;
    let body = json!({ "command": "review", "arguments": "src/a.rs src/b.rs" });
    let (status, reply) = t.post(&format!("/session/{id}/command"), body).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["info"]["role"], "assistant");
    assert_eq!(texts(&reply), "Reviewed.");
    assert_eq!(last_user_text(&t, 0), "Review these files: src/a.rs src/b.rs");

    let body = json!({ "command": "/greet", "arguments": "\"the team\" everyone else", "model": "mock/m" });
    assert_eq!(t.post(&format!("/session/{id}/command"), body).await.0, 200);
    assert_eq!(last_user_text(&t, 1), "Say hello to the team and then everyone else");

    let (status, error) =
        t.post(&format!("/session/{id}/command"), json!({ "command": "nope", "arguments": "" })).await;
    assert_eq!(status, 404, "{error}");
    let (status, _) = t.post(&format!("/session/{id}/command"), json!({ "command": "greet" })).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_command_runs_shell_substitutions_in_the_session_directory_and_shows_referenced_files() {
    let t = start_runtime(json!({
        "command": { "check": { "template": "Files: !`ls`\nStatus: !`echo oops >&2; exit 2`\nRead @$1 and @missing.rs" } }
    }))
    .await;
    std::fs::write(t.dir.join("notes.md"), "remember the milk\n").unwrap();
    t.mock.push(text("Checked."));
    let id = t.session().await;
    let body = json!({ "command": "check", "arguments": "notes.md" });
    let (status, reply) = t.post(&format!("/session/{id}/command"), body).await;
    assert_eq!(status, 200, "{reply}");
    let sent = last_user_text(&t, 0);
    assert!(sent.starts_with("Files: "), "{sent}");
    assert!(sent.contains("notes.md\n"), "{sent}");
    assert!(sent.contains("Status: oops\n"), "{sent}");
    assert!(
        sent.ends_with("Read @notes.md and @missing.rs\n\n<file path=\"notes.md\">\nremember the milk\n</file>"),
        "{sent}"
    );
}

#[tokio::test]
async fn init_runs_the_init_command_with_the_given_model() {
    let t = start_runtime(json!({})).await;
    t.mock.push(text("Wrote AGENTS.md."));
    let id = t.session().await;
    let body = json!({ "providerID": "mock", "modelID": "m", "messageID": "msg_init0001" });
    assert_eq!(t.post(&format!("/session/{id}/init"), body).await, (200, json!(true)));
    assert!(last_user_text(&t, 0).contains("AGENTS.md"));
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    assert_eq!(messages[0]["info"]["id"], "msg_init0001");
    let bad = json!({ "providerID": "mock", "modelID": "m" });
    assert_eq!(t.post(&format!("/session/{id}/init"), bad).await.0, 400);
}

#[tokio::test]
async fn shell_runs_in_the_session_directory_and_records_a_bash_call() {
    let t = start_runtime(json!({})).await;
    std::fs::write(t.dir.join("marker.txt"), "x").unwrap();
    let id = t.session().await;
    let mut events = t.events().await;
    let body = json!({ "agent": "build", "command": "ls; echo done-$((1+1))" });
    let (status, reply) = t.post(&format!("/session/{id}/shell"), body).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["info"]["role"], "assistant");
    assert_eq!(reply["info"]["providerID"], "mock");
    let tool = &reply["parts"][0];
    assert_eq!((tool["type"].as_str(), tool["tool"].as_str()), (Some("tool"), Some("bash")));
    assert_eq!(tool["state"]["status"], "completed");
    assert_eq!(tool["state"]["input"]["command"], "ls; echo done-$((1+1))");
    let output = tool["state"]["output"].as_str().unwrap();
    assert!(output.contains("marker.txt") && output.contains("done-2"), "{output}");
    let updated = first_of(&mut events, &id, "message.part.updated").await;
    assert_eq!(updated["properties"]["part"]["sessionID"], id);

    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let messages = messages.as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["info"]["role"], "user");
    assert_eq!(messages[0]["parts"][0]["synthetic"], true);
    assert_eq!(messages[1]["info"]["parentID"], messages[0]["info"]["id"]);
    // No provider turn ran.
    assert!(t.mock.requests().is_empty());
    assert_eq!(t.post(&format!("/session/{id}/shell"), json!({ "agent": "build", "command": " " })).await.0, 400);
}

#[tokio::test]
async fn a_question_is_listed_answered_over_http_and_announced() {
    let t = start_runtime(json!({})).await;
    let questions = json!([{ "question": "Which colour?", "header": "Colour",
        "options": [{ "label": "Red", "description": "warm" }, { "label": "Blue", "description": "cool" }] }]);
    t.mock.push(tool_call("call_q", "question", json!({ "questions": questions })));
    t.mock.push(text("Blue it is."));
    let id = t.session().await;
    let mut events = t.events().await;
    let response =
        t.http.post(t.at(&format!("/session/{id}/prompt_async"))).json(&prompt("ask me")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);

    let asked = first_of(&mut events, &id, "question.asked").await;
    assert_eq!(asked["properties"]["questions"], questions);
    assert_eq!(asked["properties"]["tool"]["callID"], "call_q");
    let request = asked["properties"]["id"].as_str().unwrap().to_owned();
    let (status, listed) = t.get("/question").await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().unwrap().iter().map(|q| q["id"].clone()).collect::<Vec<_>>(), [json!(request)]);

    let answer = json!({ "answers": [["Blue"]] });
    assert_eq!(t.post(&format!("/question/{request}/reply"), answer).await, (200, json!(true)));
    let seen = until_idle(&mut events, &id).await;
    let replied = seen.iter().find(|e| e["type"] == "question.replied").unwrap();
    assert_eq!(replied["properties"], json!({ "sessionID": id, "requestID": request, "answers": [["Blue"]] }));
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let tool = messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .find(|p| p["type"] == "tool")
        .unwrap();
    assert!(tool["state"]["output"].as_str().unwrap().contains("\"Which colour?\"=\"Blue\""), "{tool}");
    assert_eq!(t.get("/question").await.1, json!([]));
    assert_eq!(t.post(&format!("/question/{request}/reject"), json!({})).await.0, 404);
}

#[tokio::test]
async fn a_rejected_question_ends_the_call() {
    let t = start_runtime(json!({})).await;
    let questions =
        json!([{ "question": "Proceed?", "header": "Go", "options": [{ "label": "Yes", "description": "y" }] }]);
    t.mock.push(tool_call("call_q", "question", json!({ "questions": questions })));
    t.mock.push(text("Stopped."));
    let id = t.session().await;
    let mut events = t.events().await;
    t.http.post(t.at(&format!("/session/{id}/prompt_async"))).json(&prompt("ask")).send().await.unwrap();
    let asked = first_of(&mut events, &id, "question.asked").await;
    let request = asked["properties"]["id"].as_str().unwrap().to_owned();
    assert_eq!(t.post(&format!("/question/{request}/reject"), json!({})).await, (200, json!(true)));
    let rejected = first_of(&mut events, &id, "question.rejected").await;
    assert_eq!(rejected["properties"], json!({ "sessionID": id, "requestID": request }));
}

#[tokio::test]
async fn each_project_directory_gets_its_own_tool_permissions() {
    // The start project allows bash; a second project denies it in its own opencode.json.
    let t = start_runtime(json!({})).await;
    let strict = t.dir.parent().unwrap().join("strict");
    std::fs::create_dir_all(&strict).unwrap();
    // Its own configuration is all that applies there: it names the model too.
    let config = t.mock.opencode_config(json!({
        "agent": {"title": {"disable": true}},
        "permission": { "bash": "deny" }
    }));
    std::fs::write(strict.join("opencode.json"), config.to_string()).unwrap();
    let query = super::directory_query(&strict);
    let (status, session) = t.post(&format!("/session?{query}"), json!({})).await;
    assert_eq!(status, 200, "{session}");
    let strict_session = session["id"].as_str().unwrap().to_owned();
    let open_session = t.session().await;
    for _ in 0..2 {
        t.mock.push(tool_call("call_1", "bash", json!({ "command": "echo ran", "description": "Echo" })));
        t.mock.push(text("Done."));
    }

    let tool_state = |messages: Value| {
        messages
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["parts"].as_array().unwrap().clone())
            .find(|p| p["type"] == "tool")
            .unwrap()["state"]
            .clone()
    };
    assert_eq!(t.post(&format!("/session/{open_session}/message"), prompt("run")).await.0, 200);
    let state = tool_state(t.get(&format!("/session/{open_session}/message")).await.1);
    assert_eq!(state["status"], "completed", "{state}");

    assert_eq!(t.post(&format!("/session/{strict_session}/message"), prompt("run")).await.0, 200);
    let state = tool_state(t.get(&format!("/session/{strict_session}/message")).await.1);
    assert_eq!(state["status"], "error", "{state}");
}

#[tokio::test]
async fn a_subtask_command_runs_its_agent_in_a_child_session_and_shows_the_subtask_and_task_parts() {
    let t = start_runtime(json!({
        "command": {
            "check": { "template": "Check $1", "description": "check a file", "agent": "general", "subtask": true },
            "inline": { "template": "Look at $1", "agent": "explore", "subtask": false }
        }
    }))
    .await;
    let id = t.session().await;
    t.mock.push(text("The file is fine."));
    t.mock.push(text("Summary: fine."));
    let body = json!({ "command": "check", "arguments": "src/a.rs" });
    let (status, reply) = t.post(&format!("/session/{id}/command"), body).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(t.mock.requests().len(), 2, "the child's turn, then the parent's");
    assert_eq!(last_user_text(&t, 0), "Check src/a.rs");

    let (status, messages) = t.get(&format!("/session/{id}/message")).await;
    assert_eq!(status, 200, "{messages}");
    let messages = messages.as_array().unwrap();
    let user = &messages[0];
    assert_eq!(user["info"]["role"], "user");
    assert_eq!(user["info"]["agent"], "build", "the session keeps its own agent");
    let part = &user["parts"][0];
    let mut keys: Vec<&str> = part.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["agent", "command", "description", "id", "messageID", "prompt", "sessionID", "type"]);
    assert_eq!(
        (part["type"].clone(), part["prompt"].clone(), part["description"].clone(), part["agent"].clone()),
        (json!("subtask"), json!("Check src/a.rs"), json!("check a file"), json!("general"))
    );
    assert_eq!((part["command"].clone(), part["model"].clone()), (json!("check"), json!(null)));
    let (status, children) = t.get(&format!("/session/{id}/children")).await;
    assert_eq!(status, 200);
    let child = children[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(children[0]["title"], "check a file (@general subagent)");
    let task = &messages[1]["parts"][0];
    assert_eq!((task["type"].clone(), task["tool"].clone()), (json!("tool"), json!("task")));
    assert_eq!(task["state"]["status"], "completed");
    assert_eq!(task["state"]["input"]["subagent_type"], "general");
    assert_eq!(
        task["state"]["output"],
        format!("<task id=\"{child}\" state=\"completed\">\n<task_result>\nThe file is fine.\n</task_result>\n</task>")
    );
    assert_eq!(texts(messages.last().unwrap()), "Summary: fine.");

    // `subtask: false` keeps even a subagent's command in the session itself.
    t.mock.push(text("Looked."));
    let body = json!({ "command": "inline", "arguments": "src/b.rs" });
    let (status, reply) = t.post(&format!("/session/{id}/command"), body).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "Looked.");
    assert_eq!(last_user_text(&t, 2), "Look at src/b.rs");
}

/// A plugin's commands (Magic Context's, turned on by configuration) are listed with the configured
/// ones and run through the same route: `/ctx-status` answers in the session without a model call.
#[tokio::test]
async fn plugin_commands_are_listed_and_answer_without_a_model_call() {
    let t = super::runtime::start_runtime(json!({"magic_context": {"context_limit": 8000}})).await;
    let (status, listed) = t.get("/command").await;
    assert_eq!(status, 200, "{listed}");
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"ctx-status") && names.contains(&"ctx-flush"), "{names:?}");

    let id = t.session().await;
    t.mock.push(super::runtime::text("Hello."));
    let (status, _) = t.post(&format!("/session/{id}/message"), super::runtime::prompt("Say hello")).await;
    assert_eq!(status, 200);
    let (status, reply) =
        t.post(&format!("/session/{id}/command"), json!({"command": "ctx-status", "arguments": ""})).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["info"]["role"], "assistant");
    let answer = super::runtime::texts(&reply);
    assert!(answer.starts_with("Magic Context: context ") && answer.contains("m[0]"), "{answer}");
    assert!(answer.contains("cache: warm (last request ") && answer.contains("last executing pass #1"), "{answer}");
    assert_eq!(t.mock.requests().len(), 1, "no model call for the command");
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let last_two: Vec<String> = messages.as_array().unwrap()[2..].iter().map(super::runtime::texts).collect();
    assert_eq!(last_two, ["/ctx-status".to_owned(), answer]);

    let (status, flushed) =
        t.post(&format!("/session/{id}/command"), json!({"command": "/ctx-flush", "arguments": ""})).await;
    assert_eq!(status, 200, "{flushed}");
    assert!(super::runtime::texts(&flushed).contains("next turn"));
    let (status, unknown) =
        t.post(&format!("/session/{id}/command"), json!({"command": "nope", "arguments": ""})).await;
    assert_eq!(status, 404, "{unknown}");
}
