// A scripted MCP server over stdio (newline-delimited JSON-RPC) for failure tests.
// Tools: ok (echoes its arguments), crash (exits mid-call), hang (never answers),
// grow (adds the tool `extra` and sends notifications/tools/list_changed).
// Flags: --stuck (never answers initialize), --slow-start <ms> (answers initialize that late),
// --pid-file <path>.
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

const args = process.argv.slice(2);
const stuck = args.includes("--stuck");
const slowStart = args.indexOf("--slow-start") >= 0 ? Number(args[args.indexOf("--slow-start") + 1]) : 0;
const pidFile = args.indexOf("--pid-file") >= 0 ? args[args.indexOf("--pid-file") + 1] : null;
if (pidFile) writeFileSync(pidFile, String(process.pid));

const tool = (name, description) => ({ name, description, inputSchema: { type: "object", properties: {} } });
const tools = [tool("ok", "Echoes its arguments"), tool("crash", "Exits mid-call"), tool("hang", "Never answers"),
  tool("grow", "Adds a tool")];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");

createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  const { id, method, params } = message;
  if (id === undefined) return; // notifications
  switch (method) {
    case "initialize":
      if (stuck) return;
      return setTimeout(() => send({ id, result: { protocolVersion: params.protocolVersion,
        capabilities: { tools: { listChanged: true } }, serverInfo: { name: "scripted", version: "1.0.0" },
        instructions: "Scripted server: call ok first." } }), slowStart);
    case "ping":
      return send({ id, result: {} });
    case "tools/list":
      return send({ id, result: { tools } });
    case "tools/call": {
      const name = params.name;
      if (name === "crash") { process.stderr.write("crashing on purpose\n"); process.exit(3); }
      if (name === "hang") return;
      if (name === "grow") {
        if (!tools.some((t) => t.name === "extra")) tools.push(tool("extra", "Added later"));
        send({ id, result: { content: [{ type: "text", text: "grown" }] } });
        return send({ method: "notifications/tools/list_changed" });
      }
      return send({ id, result: { content: [{ type: "text", text: "ok: " + JSON.stringify(params.arguments ?? {}) }] } });
    }
    default:
      return send({ id, error: { code: -32601, message: "Method not found: " + method } });
  }
});
