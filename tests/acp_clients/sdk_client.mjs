// The official TypeScript ACP SDK's client driving `pi-rpc --mode acp` over real pipes.
// argv: <python> <workspace> <script.json> <mcp-server.py> <its PI_RPC_TEST_MCP marker>. Prints one JSON object: what the
// client saw through the SDK (which validates every agent message it parses) and every raw line.
import { spawn } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk";

const [python, workspace, script, mcpServer, mcpMarker] = process.argv.slice(2);
const child = spawn(python, ["-m", "pi_rpc", "--mode", "acp", "--cwd", workspace, "--script", script,
  "--tools", "read,bash,edit,write,grep"], { stdio: ["pipe", "pipe", "ignore"] });

const lines = [];
let pending = "";
let open = true;
const input = new ReadableStream({
  start(controller) {
    child.stdout.on("data", (chunk) => {
      if (open) controller.enqueue(new Uint8Array(chunk));
      pending += chunk.toString("utf8");
      let end;
      while ((end = pending.indexOf("\n")) >= 0) {
        lines.push(pending.slice(0, end));
        pending = pending.slice(end + 1);
      }
    });
    child.stdout.on("end", () => { if (open) controller.close(); open = false; });
  },
  cancel() { open = false; },  // connectWith closes the connection when its callback is done
});
const sent = [];
const decoder = new TextDecoder();
let sentText = "";
const output = new WritableStream({
  write(chunk) {
    sentText += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = sentText.indexOf("\n")) >= 0) {
      sent.push(sentText.slice(0, end));
      sentText = sentText.slice(end + 1);
    }
    return new Promise((resolve, reject) => child.stdin.write(chunk, (error) => (error ? reject(error) : resolve())));
  },
  close() { child.stdin.end(); },
});
const stream = acp.ndJsonStream(output, input);

const updates = [];
const app = acp.client({ name: "pi-rpc-tests" })
  .onNotification(acp.methods.client.session.update, (ctx) => { updates.push(ctx.params.update); })
  .onRequest(acp.methods.client.session.requestPermission, (ctx) => ({
    outcome: { outcome: "selected", optionId: ctx.params.options.find((o) => o.kind === "allow_once").optionId },
  }));

const seen = {};
await app.connectWith(stream, async (ctx) => {
  seen.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
  });
  const session = await ctx.request(acp.methods.agent.session.new, {
    cwd: workspace,
    mcpServers: [{ name: "testkit", command: python, args: [mcpServer, "stdio"],
      env: [{ name: "PI_RPC_TEST_MCP", value: mcpMarker }] }],
  });
  seen.session = session;
  const prompt = async (text) => ctx.request(acp.methods.agent.session.prompt,
    { sessionId: session.sessionId, prompt: [{ type: "text", text }] });
  seen.tour = await prompt("tour");
  seen.shout = await prompt("shout");
  seen.command = await prompt("/stats");
  seen.rewind = await prompt("/rewind");  // each pick: the first option (the most recent message, files only)
  seen.config = await ctx.request(acp.methods.agent.session.setConfigOption,
    { sessionId: session.sessionId, configId: "thought_level", value: "off" });
  seen.list = await ctx.request(acp.methods.agent.session.list, {});
});
if (!child.stdin.writableEnded) child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", resolve));
process.stdout.write(JSON.stringify({ seen, updates, lines, sent, code }) + "\n");
