// Drives an opencode-rs server with the official @opencode-ai/sdk (v2 and v1 clients).
// Usage: node smoke.mjs <baseUrl> <directory>   with OPENCODE_SDK_DIR=<node_modules/@opencode-ai/sdk>
// and OPENCODE_SMOKE_REPLY=<the expected reply to "say hi"> (default: the echo driver's).
// Prints one line per step ("ok <step>" or "FAIL <step>: <why>") and exits with the number of failures.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [baseUrl, directory] = process.argv.slice(2);
const sdkDir = process.env.OPENCODE_SDK_DIR;
const expectedReply = process.env.OPENCODE_SMOKE_REPLY ?? "echo: say hi";
const v2 = await import(pathToFileURL(path.join(sdkDir, "dist/v2/client.js")).href);
const v1 = await import(pathToFileURL(path.join(sdkDir, "dist/client.js")).href);

let failures = 0;
async function step(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e?.message ?? e}`);
  }
}
function must(cond, msg) {
  if (!cond) throw new Error(msg);
}
function data(r, what) {
  must(r && !r.error && r.response?.ok, `${what}: HTTP ${r?.response?.status} ${JSON.stringify(r?.error)}`);
  return r.data;
}

const client = v2.createOpencodeClient({ baseUrl, directory });
let sid;
await step("health", async () => {
  must(data(await client.global.health(), "health").healthy === true, "not healthy");
});
await step("session.create", async () => {
  sid = data(await client.session.create({ title: "sdk" }), "create").id;
  must(sid?.startsWith("ses"), `bad id ${sid}`);
});
await step("session.list", async () => {
  must(data(await client.session.list(), "list").some((s) => s.id === sid), "created session not listed");
});
await step("session.get", async () => {
  must(data(await client.session.get({ sessionID: sid }), "get").title === "sdk", "title");
});

const seen = [];
const abort = new AbortController();
const sse = (async () => {
  try {
    const sub = await client.event.subscribe(undefined, { signal: abort.signal });
    for await (const event of sub.stream) seen.push(event?.type);
  } catch (e) {
    if (!abort.signal.aborted) throw e;
  }
})();
// Wait until the subscription is live (its first event) before prompting.
for (let i = 0; i < 100 && !seen.includes("server.connected"); i++) await new Promise((r) => setTimeout(r, 20));

await step("session.prompt", async () => {
  const reply = data(await client.session.prompt({ sessionID: sid, parts: [{ type: "text", text: "say hi" }] }), "prompt");
  must(reply.info?.role === "assistant", `role ${reply.info?.role}`);
  const text = reply.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  must(text === expectedReply, `text ${JSON.stringify(text)}`);
});
await step("session.messages", async () => {
  const messages = data(await client.session.messages({ sessionID: sid }), "messages");
  must(messages.map((m) => m.info.role).join(",") === "user,assistant", "roles");
});
for (let i = 0; i < 100 && !(seen.includes("message.part.updated") && seen.includes("session.idle")); i++) {
  await new Promise((r) => setTimeout(r, 20));
}
abort.abort();
await sse.catch(() => {});
await step("event.subscribe", async () => {
  for (const type of ["server.connected", "session.created", "message.updated", "message.part.updated", "session.idle"]) {
    if (type === "session.created") continue; // created before the subscription
    must(seen.includes(type), `${type} not received (got ${[...new Set(seen)].join(",")})`);
  }
});

const c1 = v1.createOpencodeClient({ baseUrl, directory });
await step("v1 prompt", async () => {
  const id = data(await c1.session.create({ body: { title: "v1" } }), "create").id;
  const reply = data(await c1.session.prompt({ path: { id }, body: { parts: [{ type: "text", text: "x" }] } }), "prompt");
  must(reply.info.role === "assistant", "no assistant");
  must(data(await c1.session.messages({ path: { id } }), "messages").length === 2, "messages");
});

process.exit(failures);
