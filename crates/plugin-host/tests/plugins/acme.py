#!/usr/bin/env python3
"""A test plugin speaking the opencode-rs plugin protocol (docs/PLUGINS.md).

Modes (first argument): normal, hang (never answers hooks), crash (exits at once), slow (waits
before answering initialize). It transforms chat params and headers, contributes a tool and a
Context Source, and counts the events it was sent.
"""
import json
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
events = []


def send(message):
    message["jsonrpc"] = "2.0"
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id, result):
    send({"id": request_id, "result": result})


if mode == "crash":
    sys.stderr.write("acme: cannot find its license file\n")
    sys.stderr.flush()
    sys.exit(3)

for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    params = message.get("params") or {}
    request_id = message.get("id")
    if method == "initialize":
        options = params.get("options") or {}
        if mode == "slow":
            time.sleep(float(options.get("delay", 0.3)))
        answer(request_id, {
            "namespace": options.get("namespace", "acme"),
            "hooks": ["chat.params", "chat.headers", "event", "tool.execute.before", "not.a.hook"],
            "tools": [{
                "name": "acme_echo",
                "description": "Echoes its text back.",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            }],
            "contextSources": [{"name": "todos"}],
        })
    elif method == "hook":
        if mode == "hang":
            continue
        output = params["output"]
        if params["hook"] == "chat.params":
            output["temperature"] = 0.1
            output["options"]["openai"] = {"reasoningEffort": "low"}
        elif params["hook"] == "chat.headers":
            output["headers"]["x-acme-model"] = params["input"]["model"]["modelID"]
            output["headers"]["x-acme-events"] = ",".join(events)
        elif params["hook"] == "tool.execute.before":
            output["args"]["text"] = output["args"].get("text", "").upper()
        answer(request_id, {"output": output})
    elif method == "tool.execute":
        text = params["args"].get("text", "")
        if text == "fail":
            send({"id": request_id, "error": {"code": 1, "message": "acme_echo refuses to fail"}})
        else:
            answer(request_id, {"output": "echo: " + text, "title": "echo", "metadata": {"session": params["context"]["sessionID"]}})
    elif method == "context.load":
        answer(request_id, {"text": "Acme todos: write the tests first."})
    elif method == "event":
        events.append(params["event"]["type"])
    elif method == "shutdown":
        break
    elif request_id is not None:
        send({"id": request_id, "error": {"code": -32601, "message": "method not found"}})
