#!/usr/bin/env python3
"""A fake language server for the tool registry's tests: real LSP framing over stdio.

Every line containing ERROR yields an error diagnostic, WARN a warning. `fn NAME` lines are
symbols; goToDefinition answers the first `fn` line of the file. A document containing CRASH
makes the server exit. Each start appends the process
id to the file named by FAKE_LSP_PIDS. After `initialized` it asks the client for configuration
(as real servers do) and expects an answer before publishing anything.
"""

import json
import os
import sys

documents = {}


def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        line = line.decode("ascii").strip()
        if not line:
            break
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    return json.loads(sys.stdin.buffer.read(length))


def send(message):
    body = json.dumps(message).encode("utf-8")
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def publish(uri, version):
    if "CRASH" in documents[uri]:
        sys.exit(3)
    diagnostics = []
    for number, line in enumerate(documents[uri].split("\n")):
        for word, severity in (("ERROR", 1), ("WARN", 2)):
            column = line.find(word)
            if column >= 0:
                diagnostics.append({
                    "range": {"start": {"line": number, "character": column},
                              "end": {"line": number, "character": column + len(word)}},
                    "severity": severity,
                    "source": "fake",
                    "message": "found " + word,
                })
    # A first, empty publication then the real one, as servers that check in phases do.
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": []}})
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": diagnostics}})


def symbols(uri):
    found = []
    for number, line in enumerate(documents.get(uri, "").split("\n")):
        stripped = line.strip()
        if stripped.startswith("fn "):
            name = stripped[3:].split("(")[0].strip()
            span = {"start": {"line": number, "character": 0}, "end": {"line": number, "character": len(line)}}
            found.append({"name": name, "kind": 12, "range": span, "selectionRange": span})
    return found


def main():
    pids = os.environ.get("FAKE_LSP_PIDS")
    if pids:
        with open(pids, "a") as handle:
            handle.write("%d\n" % os.getpid())
    configured = False
    while True:
        message = read()
        if message is None:
            return
        method = message.get("method")
        params = message.get("params") or {}
        if "id" in message and method is None:
            configured = True  # the answer to our configuration request
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {
                "textDocumentSync": 1, "definitionProvider": True, "hoverProvider": True,
                "referencesProvider": True, "documentSymbolProvider": True, "workspaceSymbolProvider": True}}})
        elif method == "initialized":
            send({"jsonrpc": "2.0", "id": "config-1", "method": "workspace/configuration",
                  "params": {"items": [{"section": "fake"}]}})
        elif method == "textDocument/didOpen":
            document = params["textDocument"]
            documents[document["uri"]] = document["text"]
            publish(document["uri"], document["version"])
        elif method == "textDocument/didChange":
            document = params["textDocument"]
            documents[document["uri"]] = params["contentChanges"][-1]["text"]
            publish(document["uri"], document["version"])
        elif method == "textDocument/definition":
            uri = params["textDocument"]["uri"]
            found = symbols(uri)
            result = {"uri": uri, "range": found[0]["range"]} if found else None
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif method == "textDocument/hover":
            position = params["position"]
            value = "hover at %d:%d (configured: %s)" % (position["line"], position["character"], configured)
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"contents": {"kind": "plaintext", "value": value}}})
        elif method == "textDocument/references":
            send({"jsonrpc": "2.0", "id": message["id"], "result": []})
        elif method == "textDocument/documentSymbol":
            send({"jsonrpc": "2.0", "id": message["id"], "result": symbols(params["textDocument"]["uri"])})
        elif method == "workspace/symbol":
            found = [dict(symbol, location={"uri": uri, "range": symbol["range"]})
                     for uri in documents for symbol in symbols(uri) if params["query"] in symbol["name"]]
            send({"jsonrpc": "2.0", "id": message["id"], "result": found})
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "unknown " + method}})


if __name__ == "__main__":
    main()
