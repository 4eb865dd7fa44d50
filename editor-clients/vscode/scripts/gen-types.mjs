// Generates src/protocol/types.ts from protocol/schema.json (the daemon's generated schema).
// `npm run gen-types` writes it; `node scripts/gen-types.mjs --check` exits 1 when it is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const SCHEMA = join(here, "..", "..", "..", "protocol", "schema.json");
export const TYPES = join(here, "..", "src", "protocol", "types.ts");

function refName(node) {
  if (node && typeof node.$ref === "string") return node.$ref.split("/").pop();
  if (node && node.type === "null") return "null";
  if (node && Array.isArray(node.anyOf)) return node.anyOf.map(refName).join(" | ");
  throw new Error(`unsupported method schema: ${JSON.stringify(node)}`);
}

export async function generate() {
  const schema = JSON.parse(readFileSync(SCHEMA, "utf8"));
  // Every $def becomes one exported type; the root itself declares nothing.
  const root = { title: "PiProtocolRoot", $defs: schema.$defs, type: "object", additionalProperties: false,
    properties: Object.fromEntries(Object.keys(schema.$defs).map((k) => [k, { $ref: `#/$defs/${k}` }])) };
  let body = await compile(root, "PiProtocolRoot", {
    bannerComment: "", additionalProperties: false, unreachableDefinitions: true, format: false,
    strictIndexSignatures: false, declareExternallyReferenced: true,
  });
  body = body.replace(/export interface PiProtocolRoot \{[\s\S]*?\n\}\n/, "");
  const methods = Object.entries(schema.methods).map(([name, m]) =>
    `  ${JSON.stringify(name)}: { params: ${refName(m.params)}; result: ${refName(m.result)} };`).join("\n");
  const serverNotes = Object.entries(schema.serverNotifications).map(([name, m]) =>
    `  ${JSON.stringify(name)}: ${refName(m.params)};`).join("\n");
  const serverRequests = Object.entries(schema.serverRequests ?? {}).map(([name, m]) =>
    `  ${JSON.stringify(name)}: { params: ${refName(m.params)}; result: ${refName(m.result)} };`).join("\n");
  const clientNotes = Object.entries(schema.clientNotifications).map(([name, m]) =>
    `  ${JSON.stringify(name)}: ${refName(m.params)};`).join("\n");
  const toolDetails = Object.entries(schema.toolDetails).map(([name, d]) =>
    `  ${JSON.stringify(name)}: ${refName(d)};`).join("\n");
  return [
    "/* GENERATED FROM protocol/schema.json BY `npm run gen-types` -- DO NOT EDIT. */",
    "/* eslint-disable */",
    `export const PROTOCOL_VERSION = ${schema.protocolVersion};`,
    "",
    body.trim(),
    "",
    "/** Every request: its params and result. */",
    `export interface Methods {\n${methods}\n}`,
    "/** Notifications the daemon sends. */",
    `export interface ServerNotifications {\n${serverNotes}\n}`,
    "/** Requests the daemon sends to the client (approvals, the editor's files). */",
    `export interface ServerRequests {\n${serverRequests}\n}`,
    "/** Notifications the client sends. */",
    `export interface ClientNotifications {\n${clientNotes}\n}`,
    "/** The `details` of each built-in tool's results, by tool name (see ToolResultDetails). */",
    `export interface ToolDetails {\n${toolDetails}\n}`,
    "",
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await generate();
  if (process.argv.includes("--check")) {
    const current = readFileSync(TYPES, "utf8");
    if (current !== text) {
      console.error("src/protocol/types.ts is stale against protocol/schema.json: run `npm run gen-types`");
      process.exit(1);
    }
  } else {
    writeFileSync(TYPES, text);
  }
}
