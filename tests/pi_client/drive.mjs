// Drives pi-rpc with Pi's own RpcClient, from the npm folder named first (tests/pi16_client for
// Pi 1.6.0, tests/pi_client for 0.73.1): calls every command method the client has (found on its
// prototype, so a method a later release adds is noticed) and prints one JSON document on stdout:
// what each call resolved to or the error it rejected with, the events seen, and which command
// methods the client has and which were called.
// argv: the client's npm folder, the workspace, then the extra daemon arguments as one JSON array.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [clientFolder, cwd, extraArgs] = process.argv.slice(2);
const [pkg] = Object.keys(JSON.parse(readFileSync(join(clientFolder, "package.json"), "utf8")).dependencies);
const { RpcClient } = await import(pathToFileURL(join(clientFolder, "node_modules", pkg, "dist", "index.js")).href);

// The client's own machinery; every other method of its prototype sends one command.
const HELPERS = new Set([
	"constructor",
	"start",
	"stop",
	"onEvent",
	"getStderr",
	"waitForIdle",
	"collectEvents",
	"promptAndWait",
	"handleLine",
	"createProcessExitError",
	"rejectPendingRequests",
	"send",
	"getData",
]);
const methods = Object.getOwnPropertyNames(RpcClient.prototype).filter((name) => !HELPERS.has(name));
const client = new RpcClient({
	// pi-rpc itself, behind a shim that runs it as `node <cliPath>` runs Pi.
	cliPath: new URL("./pi-rpc.mjs", import.meta.url).pathname,
	cwd,
	args: JSON.parse(extraArgs),
});
const called = new Set();
for (const name of methods) {
	const own = client[name].bind(client);
	client[name] = (...args) => {
		called.add(name);
		return own(...args);
	};
}
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

// A call of a command method only some releases' clients have (Pi 1.6.0's, not 0.73.1's).
async function callIfAny(method, name, run) {
	if (methods.includes(method)) await call(name, run);
}

// Resolves once an event after the first `since` events matches.
function until(predicate, since, ms = 30000) {
	return new Promise((resolve, reject) => {
		if (events.slice(since).some(predicate)) return resolve();
		const timer = setTimeout(() => {
			stop();
			reject(new Error("timed out waiting for an event"));
		}, ms);
		const stop = client.onEvent((event) => {
			if (predicate(event)) {
				clearTimeout(timer);
				stop();
				resolve();
			}
		});
	});
}

const settled = (event) => event.type === "agent_settled";

// A prompt and the run it starts, to its agent_settled. The run is awaited on the event stream
// too: when the prompt's response lacks what this client reads from it, the call rejects while
// the run goes on.
async function promptAndSettle(name, message) {
	const since = events.length;
	await call(name, async () => (await client.promptAndWait(message)).map((event) => event.type));
	await until(settled, since);
}

await client.start();
await call("getState", () => client.getState());
await callIfAny("getAvailableThinkingLevels", "thinkingLevelsOfScripted", () => client.getAvailableThinkingLevels());
await promptAndSettle("promptAndWait", "tour");
await call("stateAfterPrompt", () => client.getState());
await call("getMessages", () => client.getMessages());
await call("getLastAssistantText", () => client.getLastAssistantText());
await call("getSessionStats", () => client.getSessionStats());
await call("getForkMessages", () => client.getForkMessages());
await callIfAny("getEntries", "getEntries", () => client.getEntries());
await callIfAny("getEntries", "getEntriesSince", () => client.getEntries(calls.getEntries.value.entries.at(-2).id));
await callIfAny("getTree", "getTree", () => client.getTree());
await call("getAvailableModels", () => client.getAvailableModels());
// To the configured model that reasons, and its thinking levels; then back to the scripted one.
await call("setModel", () => client.setModel("loop", "thinker"));
await call("setThinkingLevel", () => client.setThinkingLevel("high"));
await callIfAny("getAvailableThinkingLevels", "getAvailableThinkingLevels", () => client.getAvailableThinkingLevels());
await call("stateOnThinker", () => client.getState());
await call("cycleThinkingLevel", () => client.cycleThinkingLevel());
await call("cycleModel", () => client.cycleModel());
await call("setModelBack", () => client.setModel(calls.getState.value.model.provider, calls.getState.value.model.id));
await call("stateAfterModels", () => client.getState());
await call("setSteeringMode", () => client.setSteeringMode("all"));
await call("setFollowUpMode", () => client.setFollowUpMode("all"));
await call("setAutoCompaction", () => client.setAutoCompaction(false));
await call("setAutoRetry", () => client.setAutoRetry(false));
await call("abortRetry", () => client.abortRetry());
await call("setSessionName", () => client.setSessionName("  parity run "));
await call("getCommands", () => client.getCommands());
await call("bash", () => client.bash("echo from-the-user; exit 3"));
await call("messagesAfterBash", async () => (await client.getMessages()).slice(-1));
// A command that would run for 30 s, aborted once its first line arrived.
const beforeSlowBash = events.length;
const slowBash = client.bash("echo started; sleep 30; echo never");
await until((event) => event.type === "bash_execution_update" && event.delta.includes("started"), beforeSlowBash);
await call("abortBash", () => client.abortBash());
await call("abortedBash", () => slowBash);
await call("compact", () => client.compact());
await call("exportHtml", () => client.exportHtml());
await call("stateAfterSettings", () => client.getState());
// A user message after the compaction to fork at (a bash command is no user message, as in Pi).
await promptAndSettle("promptAfterCompaction", "what did I run?");
await call("messagesBeforeClone", () => client.getMessages());
await call("clone", () => client.clone());
await call("fork", async () => {
	const [first] = await client.getForkMessages();
	return client.fork(first.entryId);
});
await call("stateAfterFork", () => client.getState());
// Back to the first session's file: its conversation again.
await call("switchSession", () => client.switchSession(calls.stateAfterPrompt.value.sessionFile));
await call("messagesAfterSwitch", () => client.getMessages());
await call("stateAfterSwitch", () => client.getState());
// While the run's tool runs: a steer and a follow-up queued and taken back by clearQueue (where
// the client has it), then a steer and a follow-up that reach the run.
const beforeSteering = events.length;
await call("prompt", () => client.prompt("wait a bit"));
await until((event) => event.type === "tool_execution_start", beforeSteering);
if (methods.includes("clearQueue")) {
	await call("steerDropped", () => client.steer("never mind"));
	await call("followUpDropped", () => client.followUp("nor this"));
	await call("clearQueue", () => client.clearQueue());
}
await call("steer", () => client.steer("and then stop"));
await call("followUp", () => client.followUp("later"));
await call("waitForIdle", () => client.waitForIdle(30000));
await call("messagesAfterSteering", async () => (await client.getMessages()).slice(-7));
// Aborted while the model streams.
const beforeStreaming = events.length;
await call("promptToAbort", () => client.prompt("stream forever"));
await until((event) => event.type === "message_update", beforeStreaming);
await call("abort", () => client.abort());
await until(settled, beforeStreaming);
const settledAfterAbort = events.slice(beforeStreaming).find(settled);
await call("messagesAfterAbort", async () => (await client.getMessages()).slice(-1));
await call("newSession", () => client.newSession());
await call("stateAfterNew", () => client.getState());
await client.stop();
process.stdout.write(
	`${JSON.stringify({ calls, events: events.map((event) => event.type), methods, called: [...called], settledAfterAbort })}\n`,
);
