// Drives `opencode acp` with the official ACP client SDK (@agentclientprotocol/sdk), as an editor
// would: initialize, a new session, a prompt whose tool call asks permission (approved once), a
// prompt cancelled mid-turn, a mode and a model switch; then, in a fresh agent process, the session
// loaded with its history replayed. Prints one JSON object with what it saw.
//
// Usage: node client.mjs <opencode binary> <project directory>
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [binary, cwd] = process.argv.slice(2);

/** Starts `opencode acp` and a client recording updates and permission requests. */
function start() {
  const child = spawn(binary, ["acp", "--cwd", cwd], { stdio: ["pipe", "pipe", "inherit"] });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const seen = { updates: [], permissions: [], writes: [] };
  // The editor's open buffers: a.txt has unsaved changes the disk does not.
  const buffers = new Map([[`${cwd}/a.txt`, "unsaved one\n"]]);
  const app = acp
    .client({ name: "opencode-e2e" })
    .onNotification(acp.methods.client.session.update, (ctx) => {
      seen.updates.push(ctx.params);
    })
    .onRequest(acp.methods.client.fs.readTextFile, (ctx) => ({ content: buffers.get(ctx.params.path) ?? "" }))
    .onRequest(acp.methods.client.fs.writeTextFile, (ctx) => {
      seen.writes.push(ctx.params);
      buffers.set(ctx.params.path, ctx.params.content);
      return {};
    })
    .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
      seen.permissions.push(ctx.params);
      const allow = ctx.params.options.find((option) => option.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  // Closing the agent's stdin is how an editor lets it go: it stops once its input ends.
  // An agent still running 10 s later is killed (and reported by its exit code).
  const close = () => {
    child.stdin.end();
    setTimeout(() => child.kill(), 10000).unref();
    return exited;
  };
  return { app, stream, seen, close };
}

const initialize = (agent) =>
  agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    clientInfo: { name: "opencode-e2e", version: "1.0.0" },
  });

async function waitFor(check) {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("timed out waiting for an update");
}

const first = start();
const work = await first.app.connectWith(first.stream, async (agent) => {
  const init = await initialize(agent);
  const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const sessionId = created.sessionId;
  const prompt = (text) =>
    agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  const ran = await prompt("run the command");
  const edited = await prompt("fix the file");
  const running = prompt("take your time");
  await waitFor(() =>
    first.seen.updates.some(
      (n) => n.update.sessionUpdate === "agent_message_chunk" && n.update.content.text?.includes("Thinking"),
    ),
  );
  await agent.notify(acp.methods.agent.session.cancel, { sessionId });
  const cancelled = await running;
  const mode = await agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" });
  const model = await agent.request(acp.methods.agent.session.setConfigOption, {
    sessionId,
    configId: "model",
    value: "mock/r",
  });
  return { init, created, ran, edited, cancelled, mode, model, sessionId };
});
const firstExit = await first.close();

const second = start();
const loaded = await second.app.connectWith(second.stream, async (agent) => {
  await initialize(agent);
  return agent.request(acp.methods.agent.session.load, { sessionId: work.sessionId, cwd, mcpServers: [] });
});
const secondExit = await second.close();

console.log(
  JSON.stringify({
    ...work,
    updates: first.seen.updates,
    permissions: first.seen.permissions,
    writes: first.seen.writes,
    loaded,
    replayed: second.seen.updates,
    exits: [firstExit, secondExit],
  }),
);
