/* GENERATED FROM protocol/schema.json BY `npm run gen-types` -- DO NOT EDIT. */
/* eslint-disable */
export const PROTOCOL_VERSION = 1;

/**
 * What a tool reports beside its content, for editors and logs (the model never sees it). Which one is the tool's by its name, as `toolDetails` lists: read: ReadDetails, bash: BashDetails, powershell: BashDetails, edit: EditDetails, write: HunkDetails, grep: GrepDetails, find: FindDetails, ls: LsDetails (write's only when the user kept some hunks of an overwrite; otherwise absent). An error result carries {} (a failed or aborted bash call its BashDetails). Other tools' (an MCP server's) may be any object.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolResultDetails".
 */
export type ToolResultDetails = (ReadDetails | BashDetails | EditDetails | HunkDetails | GrepDetails | FindDetails | LsDetails | {
[k: string]: unknown
})

/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "InitializeParams".
 */
export interface InitializeParams {
clientInfo?: ClientInfo
capabilities?: ClientCapabilities
approvalPolicy?: ("acceptEdits" | "ask" | "auto" | "readOnly")
mcpServers?: McpServerConfig[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ClientInfo".
 */
export interface ClientInfo {
name: string
version?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ClientCapabilities".
 */
export interface ClientCapabilities {
approvals?: boolean
files?: boolean
}
/**
 * One MCP server: `command` (stdio) or `url` (streamable HTTP).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "McpServerConfig".
 */
export interface McpServerConfig {
name: string
command?: (string | null)
args?: string[]
env?: {
[k: string]: string
}
cwd?: (string | null)
url?: (string | null)
headers?: {
[k: string]: string
}
exposure?: ("codemode" | "deferred" | "direct" | "hidden")
toolExposure?: {
[k: string]: "codemode" | "deferred" | "direct" | "hidden"
}
description?: (string | null)
timeout?: (number | null)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "InitializeResult".
 */
export interface InitializeResult {
serverInfo: ServerInfo
protocolVersion: number
cwd: string
model: (Model | null)
scripted: boolean
tools: ToolInfo[]
approvalPolicy: ("acceptEdits" | "ask" | "auto" | "readOnly")
mcpServers?: McpServerStatus[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ServerInfo".
 */
export interface ServerInfo {
name: string
version: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "Model".
 */
export interface Model {
id: string
name: string
api: ("anthropic-messages" | "faux" | "openai-completions" | "openai-responses")
provider: string
baseUrl?: string
reasoning?: boolean
input?: ("image" | "text")[]
cost?: ModelCost
contextWindow?: number
maxTokens?: number
headers?: {
[k: string]: string
}
thinkingLevelMap?: {
[k: string]: string | null
}
compat?: ModelCompat
}
/**
 * Dollars per million tokens.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ModelCost".
 */
export interface ModelCost {
input?: number
output?: number
cacheRead?: number
cacheWrite?: number
}
/**
 * Pi's per-model capability flags. Only the flags a model says are sent; absent = the API's default.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ModelCompat".
 */
export interface ModelCompat {
supportsStrictTools?: (boolean | null)
forceAdaptiveThinking?: (boolean | null)
supportsStrictMode?: (boolean | null)
supportsDeveloperRole?: (boolean | null)
supportsOpenAIGrammarTools?: (boolean | null)
supportsMaxOutputTokens?: (boolean | null)
supportsStore?: (boolean | null)
supportsReasoningEffort?: (boolean | null)
supportsUsageInStreaming?: (boolean | null)
supportsXhigh?: (boolean | null)
maxTokensField?: (("max_completion_tokens" | "max_tokens") | null)
requiresToolResultName?: (boolean | null)
requiresThinkingAsText?: (boolean | null)
requiresNonNullAssistantContent?: (boolean | null)
requiresAssistantAfterToolResult?: (boolean | null)
requiresToolsWithToolHistory?: (boolean | null)
thinkingFormat?: (("openai" | "openrouter" | "qwen") | null)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolInfo".
 */
export interface ToolInfo {
name: string
label: string
description: string
parameters: {

}
active: boolean
source?: string
}
/**
 * What a client sees of one server: its tools (namespaced), or why it has none.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "McpServerStatus".
 */
export interface McpServerStatus {
name: string
status: ("failed" | "running" | "starting" | "stopped")
tools?: string[]
error?: (string | null)
}
/**
 * Params of a method that takes none (absent `params` is accepted too).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "Empty".
 */
export interface Empty {

}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "PromptParams".
 */
export interface PromptParams {
message: string
images?: ImageInput[]
streamingBehavior?: ("followUp" | "steer")
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ImageInput".
 */
export interface ImageInput {
data: string
mimeType: ("image/gif" | "image/jpeg" | "image/png" | "image/webp")
}
/**
 * How the run that a prompt started ended.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "PromptOutcome".
 */
export interface PromptOutcome {
stopReason?: ("aborted" | "error" | "length" | "stop" | "toolUse")
usage?: Usage
errorMessage?: string
queued?: ("followUp" | "steer")
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "Usage".
 */
export interface Usage {
input?: number
output?: number
cacheRead?: number
cacheWrite?: number
reasoning?: number
totalTokens?: number
cost?: Cost
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "Cost".
 */
export interface Cost {
input?: number
output?: number
cacheRead?: number
cacheWrite?: number
total?: number
totalFromProvider?: boolean
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "QueueParams".
 */
export interface QueueParams {
message: string
images?: ImageInput[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "QueueContents".
 */
export interface QueueContents {
steering: string[]
followUp: string[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolList".
 */
export interface ToolList {
tools: ToolInfo[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SetActiveToolsParams".
 */
export interface SetActiveToolsParams {
names: string[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ActiveTools".
 */
export interface ActiveTools {
active: string[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CommandList".
 */
export interface CommandList {
commands: SlashCommand[]
}
/**
 * A `/name` a user can start a prompt with: a prompt template or a skill (`skill:name`).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SlashCommand".
 */
export interface SlashCommand {
name: string
description: string
source: ("prompt" | "skill")
path: string
scope: string
argumentHint?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "BashParams".
 */
export interface BashParams {
command: string
excludeFromContext?: boolean
}
/**
 * Pi's `BashResult`: the (tail of the) output, and how the command ended.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "BashResult".
 */
export interface BashResult {
output: string
exitCode: (number | null)
cancelled: boolean
truncated: boolean
fullOutputPath?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CompactParams".
 */
export interface CompactParams {
customInstructions?: string
}
/**
 * What `compact` answers (Pi's `CompactionResult`, with 0.81's estimate of the compacted
 * context and the summary requests' usage).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CompactionResult".
 */
export interface CompactionResult {
summary: string
firstKeptEntryId: string
tokensBefore: number
estimatedTokensAfter: number
usage?: Usage
details: CompactionDetails
}
/**
 * A compaction entry's `details`, as Pi writes them (both lists always present).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CompactionDetails".
 */
export interface CompactionDetails {
readFiles: string[]
modifiedFiles: string[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SessionState".
 */
export interface SessionState {
model: (Model | null)
thinkingLevel: ("high" | "low" | "medium" | "minimal" | "off" | "xhigh")
isStreaming: boolean
steeringMode: ("all" | "one-at-a-time")
followUpMode: ("all" | "one-at-a-time")
sessionId: string
messageCount: number
pendingMessageCount: number
cwd: string
activeTools: string[]
scripted: boolean
sessionFile: (string | null)
sessionName: (string | null)
approvalPolicy: ("acceptEdits" | "ask" | "auto" | "readOnly")
pendingApprovals: string[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "MessageList".
 */
export interface MessageList {
messages: (UserMessage | AssistantMessage | ToolResultMessage | SystemMessage | BashExecutionMessage | CompactionSummaryMessage | BranchSummaryMessage | CustomMessage)[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "UserMessage".
 */
export interface UserMessage {
role: "user"
content: (string | (TextContent | ImageContent)[])
timestamp?: number
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TextContent".
 */
export interface TextContent {
type: "text"
text: string
textSignature?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ImageContent".
 */
export interface ImageContent {
type: "image"
data: string
mimeType: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "AssistantMessage".
 */
export interface AssistantMessage {
role: "assistant"
content: (TextContent | ThinkingContent | ToolCall)[]
api: string
provider: string
model: string
usage?: Usage
stopReason?: (("aborted" | "error" | "length" | "stop" | "toolUse") | "pending")
errorMessage?: string
timestamp?: number
responseId?: string
responseModel?: string
rawStopReason?: string
durationMs?: number
thinkingLevel?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ThinkingContent".
 */
export interface ThinkingContent {
type: "thinking"
thinking: string
thinkingSignature?: string
redacted?: boolean
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolCall".
 */
export interface ToolCall {
type: "toolCall"
id: string
name: string
arguments: {

}
thoughtSignature?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolResultMessage".
 */
export interface ToolResultMessage {
role: "toolResult"
toolCallId: string
toolName: string
content: (TextContent | ImageContent)[]
isError: boolean
details?: ToolResultDetails
durationMs?: number
timestamp?: number
}
/**
 * `details` of a read result: present only when the text was cut.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ReadDetails".
 */
export interface ReadDetails {
truncation: Truncation
}
/**
 * Spec 7.3: what was cut, travelling in `details.truncation` (camelCase on the wire).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "Truncation".
 */
export interface Truncation {
truncated: boolean
truncatedBy: (("bytes" | "lines") | null)
totalLines: number
totalBytes: number
outputLines: number
outputBytes: number
lastLinePartial: boolean
firstLineExceedsLimit: boolean
maxLines: number
maxBytes: number
}
/**
 * `details` of a bash result or update; both fields absent unless the output was truncated.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "BashDetails".
 */
export interface BashDetails {
truncation?: Truncation
fullOutputPath?: string
}
/**
 * `details` of an edit result: the display diff, the unified patch, the first changed line.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "EditDetails".
 */
export interface EditDetails {
diff: string
patch: string
firstChangedLine?: number
hunks?: HunkOutcome
}
/**
 * `details.hunks` of a call the user approved in part: the kept and rejected hunk indices,
 * and the rejected hunks themselves.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "HunkOutcome".
 */
export interface HunkOutcome {
kept: number[]
rejected: number[]
rejectedHunks: DiffHunk[]
}
/**
 * One `@@` hunk of a preview's patch, numbered from 0 in patch order: 1-based first lines and
 * line counts of both sides (as the `@@` header, but a start is never 0), and its text (header
 * and body, as in the patch).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "DiffHunk".
 */
export interface DiffHunk {
index: number
oldStart: number
oldLines: number
newStart: number
newLines: number
text: string
}
/**
 * `details` of a write approved in part (an edit's details carry `hunks` beside its diff).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "HunkDetails".
 */
export interface HunkDetails {
hunks: HunkOutcome
}
/**
 * `details` of a grep result, in notice order; each field absent unless its limit was hit.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "GrepDetails".
 */
export interface GrepDetails {
matchLimitReached?: number
truncation?: Truncation
linesTruncated?: boolean
}
/**
 * `details` of a find result; each field absent unless its limit was hit.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "FindDetails".
 */
export interface FindDetails {
resultLimitReached?: number
truncation?: Truncation
}
/**
 * `details` of an ls result; each field absent unless its limit was hit.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "LsDetails".
 */
export interface LsDetails {
entryLimitReached?: number
truncation?: Truncation
}
/**
 * A transcript entry that (re)declares the callable tools (spec 15.12).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SystemMessage".
 */
export interface SystemMessage {
role: "system"
content?: string
sections?: {
[k: string]: string | null
}
toolsAdded?: Tool[]
toolsRemoved?: ToolRef[]
timestamp?: number
}
/**
 * The declaration layer (spec 1.2): name, description, JSON Schema parameters.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "Tool".
 */
export interface Tool {
name: string
description: string
parameters: {

}
constrainedSampling?: (JsonSchemaSampling | GrammarSampling)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "JsonSchemaSampling".
 */
export interface JsonSchemaSampling {
type: "json_schema"
strict?: ("prefer" | "require")
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "GrammarSampling".
 */
export interface GrammarSampling {
type: "grammar"
variants: GrammarVariants
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "GrammarVariants".
 */
export interface GrammarVariants {
openaiLark?: string
openaiRegex?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolRef".
 */
export interface ToolRef {
name: string
}
/**
 * A command the user ran (Pi's `bash` command, `!cmd`), kept as Pi keeps it: in the transcript,
 * the session file and `get_messages` with its own role. It is no provider message: the model
 * reads it as user text, made at the one conversion point (`agent/llm_messages.py`).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "BashExecutionMessage".
 */
export interface BashExecutionMessage {
role: "bashExecution"
command: string
output: string
cancelled: boolean
truncated: boolean
exitCode?: number
fullOutputPath?: string
excludeFromContext?: boolean
timestamp?: number
}
/**
 * Where a compaction replaced the older turns (Pi's `compactionSummary`): the first message of
 * a compacted transcript after the system message the compaction kept, made from the session
 * file's compaction entry. The model reads it as user text (`agent/llm_messages.py`).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CompactionSummaryMessage".
 */
export interface CompactionSummaryMessage {
role: "compactionSummary"
summary: string
tokensBefore: number
timestamp?: number
}
/**
 * What a branch the conversation came back from did (Pi's `branchSummary`, from a Pi session
 * file's `branch_summary` entry); read by the model as user text.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "BranchSummaryMessage".
 */
export interface BranchSummaryMessage {
role: "branchSummary"
summary: string
fromId: string
timestamp?: number
}
/**
 * A message a Pi extension added (Pi's `custom`, from a `custom_message` entry): the model
 * reads its content as the user's; `display` says whether Pi shows it in the chat.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CustomMessage".
 */
export interface CustomMessage {
role: "custom"
customType: string
content: (string | (TextContent | ImageContent)[])
display: boolean
details?: unknown
timestamp?: number
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ModelList".
 */
export interface ModelList {
models: Model[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SetModelParams".
 */
export interface SetModelParams {
provider: string
modelId: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SetThinkingParams".
 */
export interface SetThinkingParams {
level: ("high" | "low" | "medium" | "minimal" | "off" | "xhigh")
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ThinkingLevels".
 */
export interface ThinkingLevels {
level: ("high" | "low" | "medium" | "minimal" | "off" | "xhigh")
available: ("high" | "low" | "medium" | "minimal" | "off" | "xhigh")[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "NewSession".
 */
export interface NewSession {
sessionId: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SessionList".
 */
export interface SessionList {
sessions: SessionSummary[]
}
/**
 * One stored session, for `session/list`.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SessionSummary".
 */
export interface SessionSummary {
sessionId: string
path: string
started: string
modified: string
messageCount: number
firstMessage: string
name?: (string | null)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "LoadSessionParams".
 */
export interface LoadSessionParams {
sessionId: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "LoadedSession".
 */
export interface LoadedSession {
sessionId: string
messageCount: number
}
/**
 * Pi's `get_session_stats`: counts, tokens and dollars of the current transcript.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SessionStats".
 */
export interface SessionStats {
sessionId: string
sessionFile: (string | null)
userMessages: number
assistantMessages: number
toolCalls: number
toolResults: number
totalMessages: number
tokens: TokenTotals
cost: number
contextUsage?: ContextUsage
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TokenTotals".
 */
export interface TokenTotals {
input: number
output: number
cacheRead: number
cacheWrite: number
total: number
}
/**
 * How full the model's context window is: the last request's reported size plus estimates.
 * `tokens` and `percent` are null right after a compaction, until the next reply reports them.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ContextUsage".
 */
export interface ContextUsage {
tokens: (number | null)
contextWindow: number
percent: (number | null)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ForkPoints".
 */
export interface ForkPoints {
forkPoints: ForkPoint[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ForkPoint".
 */
export interface ForkPoint {
entryId: string
text: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ForkParams".
 */
export interface ForkParams {
entryId: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ForkedSession".
 */
export interface ForkedSession {
sessionId: string
text: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "EntriesParams".
 */
export interface EntriesParams {
since?: string
limit?: number
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "EntryList".
 */
export interface EntryList {
entries: SessionEntry[]
leafId: (string | null)
}
/**
 * One entry of a session's branch, as `session/entries` lists it.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SessionEntry".
 */
export interface SessionEntry {
id: string
parentId: (string | null)
type: string
timestamp: string
message?: (UserMessage | AssistantMessage | ToolResultMessage | SystemMessage | BashExecutionMessage | CompactionSummaryMessage | BranchSummaryMessage | CustomMessage)
summary?: string
firstKeptEntryId?: string
tokensBefore?: number
customType?: string
name?: string
provider?: string
modelId?: string
thinkingLevel?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SetNameParams".
 */
export interface SetNameParams {
name: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SessionName".
 */
export interface SessionName {
name: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "Checkpoints".
 */
export interface Checkpoints {
checkpoints: CheckpointInfo[]
}
/**
 * The restore point before one user message: what its run changed, what was not captured.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CheckpointInfo".
 */
export interface CheckpointInfo {
entryId: string
text: string
timestamp: string
files: CheckpointFile[]
notCaptured: string[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CheckpointFile".
 */
export interface CheckpointFile {
path: string
change: ("created" | "deleted" | "modified")
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "RewindParams".
 */
export interface RewindParams {
entryId: string
restore: ("both" | "conversation" | "files")
force?: boolean
preview?: boolean
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "RewindResult".
 */
export interface RewindResult {
entryId: string
restored: string[]
conflicts: RewindConflict[]
notRestored: string[]
sessionId?: string
text?: string
diffs?: RewindDiff[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "RewindConflict".
 */
export interface RewindConflict {
path: string
diff: string
}
/**
 * A file a previewed rewind would restore, and how (a preview writes nothing).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "RewindDiff".
 */
export interface RewindDiff {
path: string
diff: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SetApprovalPolicyParams".
 */
export interface SetApprovalPolicyParams {
policy: ("acceptEdits" | "ask" | "auto" | "readOnly")
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ApprovalPolicyResult".
 */
export interface ApprovalPolicyResult {
policy: ("acceptEdits" | "ask" | "auto" | "readOnly")
}
/**
 * A tool call waiting for the user's approval: the call, and what it will do.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ApprovalRequest".
 */
export interface ApprovalRequest {
toolCallId: string
toolName: string
args: unknown
cwd: string
title: string
preview: ToolPreview
suggestedRule: string
}
/**
 * What a call is about to do, told before it runs, for the user who approves it.
 * 
 * For edit and write the change is computed from the current file, nothing written: `old_text`
 * and `new_text` are the whole file before and after (empty old text for a new file), `patch`
 * a unified diff with line numbers. For a shell tool, `command`.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolPreview".
 */
export interface ToolPreview {
title: string
path?: string
command?: string
oldText?: string
newText?: string
patch?: string
hunks?: DiffHunk[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ApprovalDecision".
 */
export interface ApprovalDecision {
outcome: ("allow" | "allowAlways" | "reject")
reason?: string
rule?: string
save?: boolean
hunks?: number[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ReadTextFileParams".
 */
export interface ReadTextFileParams {
path: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TextFileContent".
 */
export interface TextFileContent {
content: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "WriteTextFileParams".
 */
export interface WriteTextFileParams {
path: string
content: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "AgentStart".
 */
export interface AgentStart {
type: "agent_start"
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "AgentEnd".
 */
export interface AgentEnd {
type: "agent_end"
messages: (UserMessage | AssistantMessage | ToolResultMessage | SystemMessage | BashExecutionMessage | CompactionSummaryMessage | BranchSummaryMessage | CustomMessage)[]
willRetry?: boolean
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TurnStart".
 */
export interface TurnStart {
type: "turn_start"
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TurnEnd".
 */
export interface TurnEnd {
type: "turn_end"
message: AssistantMessage
toolResults: ToolResultMessage[]
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "MessageStart".
 */
export interface MessageStart {
type: "message_start"
message: (UserMessage | AssistantMessage | ToolResultMessage | SystemMessage | BashExecutionMessage | CompactionSummaryMessage | BranchSummaryMessage | CustomMessage)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "MessageUpdate".
 */
export interface MessageUpdate {
type: "message_update"
assistantMessageEvent: (StartEvent | TextStartEvent | TextDeltaEvent | TextEndEvent | ThinkingStartEvent | ThinkingDeltaEvent | ThinkingEndEvent | ToolcallStartEvent | ToolcallDeltaEvent | ToolcallEndEvent | DoneEvent | ErrorEvent)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "StartEvent".
 */
export interface StartEvent {
type: "start"
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TextStartEvent".
 */
export interface TextStartEvent {
type: "text_start"
contentIndex: number
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TextDeltaEvent".
 */
export interface TextDeltaEvent {
type: "text_delta"
contentIndex: number
delta: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "TextEndEvent".
 */
export interface TextEndEvent {
type: "text_end"
contentIndex: number
content: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ThinkingStartEvent".
 */
export interface ThinkingStartEvent {
type: "thinking_start"
contentIndex: number
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ThinkingDeltaEvent".
 */
export interface ThinkingDeltaEvent {
type: "thinking_delta"
contentIndex: number
delta: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ThinkingEndEvent".
 */
export interface ThinkingEndEvent {
type: "thinking_end"
contentIndex: number
content: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolcallStartEvent".
 */
export interface ToolcallStartEvent {
type: "toolcall_start"
contentIndex: number
id: string
toolName: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolcallDeltaEvent".
 */
export interface ToolcallDeltaEvent {
type: "toolcall_delta"
contentIndex: number
delta: string
arguments?: {

}
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolcallEndEvent".
 */
export interface ToolcallEndEvent {
type: "toolcall_end"
contentIndex: number
toolCall: ToolCall
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "DoneEvent".
 */
export interface DoneEvent {
type: "done"
reason: ("length" | "stop" | "toolUse")
usage: Usage
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ErrorEvent".
 */
export interface ErrorEvent {
type: "error"
reason: ("aborted" | "error")
errorMessage: string
usage: Usage
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "MessageEnd".
 */
export interface MessageEnd {
type: "message_end"
message: (UserMessage | AssistantMessage | ToolResultMessage | SystemMessage | BashExecutionMessage | CompactionSummaryMessage | BranchSummaryMessage | CustomMessage)
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolExecutionStart".
 */
export interface ToolExecutionStart {
type: "tool_execution_start"
toolCallId: string
toolName: string
args: {

}
parentToolCallId?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolExecutionUpdate".
 */
export interface ToolExecutionUpdate {
type: "tool_execution_update"
toolCallId: string
toolName: string
args: {

}
partialResult: AgentToolResult
parentToolCallId?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "AgentToolResult".
 */
export interface AgentToolResult {
content?: (TextContent | ImageContent)[]
details?: ToolResultDetails
structuredContent?: unknown
isError?: boolean
terminate?: boolean
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolExecutionEnd".
 */
export interface ToolExecutionEnd {
type: "tool_execution_end"
toolCallId: string
toolName: string
result: AgentToolResult
isError: boolean
durationMs?: number
parentToolCallId?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "AutoRetryStart".
 */
export interface AutoRetryStart {
type: "auto_retry_start"
attempt: number
maxAttempts: number
delayMs: number
errorMessage: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "AutoRetryEnd".
 */
export interface AutoRetryEnd {
type: "auto_retry_end"
success: boolean
attempt: number
finalError?: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "QueueUpdate".
 */
export interface QueueUpdate {
type: "queue_update"
steering: string[]
followUp: string[]
}
/**
 * The run waits for the user to approve a tool call (between tool_execution_start and end).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolApprovalRequest".
 */
export interface ToolApprovalRequest {
type: "tool_approval_request"
request: ApprovalRequest
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "ToolApprovalEnd".
 */
export interface ToolApprovalEnd {
type: "tool_approval_end"
toolCallId: string
outcome: ("allow" | "allowAlways" | "cancelled" | "reject" | "timeout")
}
/**
 * The session is idle again: after agent_end, and once queued work has drained.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "AgentSettled".
 */
export interface AgentSettled {
type: "agent_settled"
aborted?: boolean
}
/**
 * A session entry written outside a message's end (Pi 1.6.0's session event): the
 * `context_edit` that takes a retried run's failed reply out of the context.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "EntryAppended".
 */
export interface EntryAppended {
type: "entry_appended"
entry: {

}
}
/**
 * Output of a command the user runs (`bash`), as it arrives; `id` names the run.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "BashExecutionUpdate".
 */
export interface BashExecutionUpdate {
type: "bash_execution_update"
id: string
delta: string
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CompactionStart".
 */
export interface CompactionStart {
type: "compaction_start"
reason: ("manual" | "overflow" | "threshold")
}
/**
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "CompactionEnd".
 */
export interface CompactionEnd {
type: "compaction_end"
reason: ("manual" | "overflow" | "threshold")
result?: unknown
aborted?: boolean
willRetry?: boolean
errorMessage?: string
}
/**
 * A compaction's summary request failed for a passing reason; it is asked again after `delayMs`
 * (Pi 0.81.1: the retry settings, as for a run's auto-retry).
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SummarizationRetryScheduled".
 */
export interface SummarizationRetryScheduled {
type: "summarization_retry_scheduled"
attempt: number
maxAttempts: number
delayMs: number
errorMessage: string
}
/**
 * The wait is over and the summary is asked for again; `source` is what is summarised.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SummarizationRetryAttemptStart".
 */
export interface SummarizationRetryAttemptStart {
type: "summarization_retry_attempt_start"
source: ("branchSummary" | "compaction")
reason?: ("manual" | "overflow" | "threshold")
}
/**
 * The retried summary request ended: answered, failed for good, or cancelled.
 * 
 * This interface was referenced by `PiProtocolRoot`'s JSON-Schema
 * via the `definition` "SummarizationRetryFinished".
 */
export interface SummarizationRetryFinished {
type: "summarization_retry_finished"
}

/** Every request: its params and result. */
export interface Methods {
  "initialize": { params: InitializeParams; result: InitializeResult };
  "shutdown": { params: Empty; result: null };
  "prompt": { params: PromptParams; result: PromptOutcome };
  "abort": { params: Empty; result: null };
  "steer": { params: QueueParams; result: null };
  "followUp": { params: QueueParams; result: null };
  "clearQueue": { params: Empty; result: QueueContents };
  "tools/list": { params: Empty; result: ToolList };
  "tools/setActive": { params: SetActiveToolsParams; result: ActiveTools };
  "commands/list": { params: Empty; result: CommandList };
  "bash": { params: BashParams; result: BashResult };
  "abortBash": { params: Empty; result: null };
  "compact": { params: CompactParams; result: CompactionResult };
  "state": { params: Empty; result: SessionState };
  "messages": { params: Empty; result: MessageList };
  "models/list": { params: Empty; result: ModelList };
  "model/set": { params: SetModelParams; result: Model };
  "thinking/set": { params: SetThinkingParams; result: ThinkingLevels };
  "session/new": { params: Empty; result: NewSession };
  "session/list": { params: Empty; result: SessionList };
  "session/load": { params: LoadSessionParams; result: LoadedSession };
  "session/stats": { params: Empty; result: SessionStats };
  "session/forkPoints": { params: Empty; result: ForkPoints };
  "session/fork": { params: ForkParams; result: ForkedSession };
  "session/clone": { params: Empty; result: NewSession };
  "session/entries": { params: EntriesParams; result: EntryList };
  "session/setName": { params: SetNameParams; result: SessionName };
  "session/checkpoints": { params: Empty; result: Checkpoints };
  "session/rewind": { params: RewindParams; result: RewindResult };
  "approval/setPolicy": { params: SetApprovalPolicyParams; result: ApprovalPolicyResult };
}
/** Notifications the daemon sends. */
export interface ServerNotifications {
  "agent/event": AgentStart | AgentEnd | TurnStart | TurnEnd | MessageStart | MessageUpdate | MessageEnd | ToolExecutionStart | ToolExecutionUpdate | ToolExecutionEnd | AutoRetryStart | AutoRetryEnd | QueueUpdate | ToolApprovalRequest | ToolApprovalEnd | AgentSettled | EntryAppended | BashExecutionUpdate | CompactionStart | CompactionEnd | SummarizationRetryScheduled | SummarizationRetryAttemptStart | SummarizationRetryFinished;
}
/** Requests the daemon sends to the client (approvals, the editor's files). */
export interface ServerRequests {
  "approval/request": { params: ApprovalRequest; result: ApprovalDecision };
  "fs/readTextFile": { params: ReadTextFileParams; result: TextFileContent };
  "fs/writeTextFile": { params: WriteTextFileParams; result: null };
}
/** Notifications the client sends. */
export interface ClientNotifications {
  "exit": Empty;
}
/** The `details` of each built-in tool's results, by tool name (see ToolResultDetails). */
export interface ToolDetails {
  "read": ReadDetails;
  "bash": BashDetails;
  "powershell": BashDetails;
  "edit": EditDetails;
  "write": HunkDetails;
  "grep": GrepDetails;
  "find": FindDetails;
  "ls": LsDetails;
}
