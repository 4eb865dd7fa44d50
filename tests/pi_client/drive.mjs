// Drives pi-rpc with Pi's own RpcClient: calls every command method and prints one JSON document
// (what each call resolved to, or the error it rejected with, and the events seen) on stdout.
// argv: the workspace, then the extra daemon arguments as one JSON array.
import { RpcClient } from "@mariozechner/pi-coding-agent";

const [cwd, extraArgs] = process.argv.slice(2);
const client = new RpcClient({
	cliPath: new URL("./pi-rpc.mjs", import.meta.url).pathname,
	cwd,
	args: JSON.parse(extraArgs),
});
const events = [];
client.onEvent((event) => events.push(event));
const calls = {};

async function call(name, run) {
	try {
		calls[name] = { ok: true, value: (await run()) ?? null };
	} catch (error) {
		calls[name] = { ok: false, error: String(error.message ?? error) };
	}
}

await client.start();
await call("getState", () => client.getState());
await call("promptAndWait", async () => (await client.promptAndWait("tour")).map((event) => event.type));
await call("getMessages", () => client.getMessages());
await call("getLastAssistantText", () => client.getLastAssistantText());
await call("getSessionStats", () => client.getSessionStats());
await call("getForkMessages", () => client.getForkMessages());
await call("getAvailableModels", () => client.getAvailableModels());
await call("setModel", async () => {
	const state = await client.getState();
	return client.setModel(state.model.provider, state.model.id);
});
await call("cycleModel", () => client.cycleModel());
await call("setThinkingLevel", () => client.setThinkingLevel("off"));
await call("cycleThinkingLevel", () => client.cycleThinkingLevel());
await call("setSteeringMode", () => client.setSteeringMode("all"));
await call("setFollowUpMode", () => client.setFollowUpMode("all"));
await call("setAutoCompaction", () => client.setAutoCompaction(false));
await call("setAutoRetry", () => client.setAutoRetry(false));
await call("abortRetry", () => client.abortRetry());
await call("setSessionName", () => client.setSessionName("  parity run "));
await call("getCommands", () => client.getCommands());
await call("bash", () => client.bash("echo from-the-user; exit 3"));
await call("messagesAfterBash", async () => (await client.getMessages()).slice(-1));
await call("abortBash", () => client.abortBash());
await call("compact", () => client.compact());
await call("exportHtml", () => client.exportHtml());
await call("stateAfterSettings", () => client.getState());
// A user message after the compaction to fork at (a bash command is no user message, as in Pi).
await call("promptAfterCompaction", async () => (await client.promptAndWait("what did I run?")).map((event) => event.type));
await call("clone", () => client.clone());
await call("fork", async () => {
	const [first] = await client.getForkMessages();
	return client.fork(first.entryId);
});
await call("stateAfterFork", () => client.getState());
await call("switchSession", async () => {
	const stats = await client.getSessionStats();
	return stats.sessionFile ? client.switchSession(stats.sessionFile) : { cancelled: false };
});
await call("steer", () => client.steer("steered"));
await call("followUp", () => client.followUp("later"));
await call("abort", () => client.abort());
await call("newSession", () => client.newSession());
await call("prompt", () => client.prompt("list files"));
await call("waitForIdle", () => client.waitForIdle(30000));
await client.stop();
process.stdout.write(`${JSON.stringify({ calls, events: events.map((event) => event.type) })}\n`);
