"""Names `vulture` (run by `make lint`) would report as unused, and why each is used after all.

vulture only parses this file; nothing imports it. Add a name here only with its reason: code that
nothing reads belongs deleted, not listed.
"""

# ruff: noqa
# mypy: ignore-errors

# --- read by a framework or a protocol SDK, by name ----------------------------------------------
# The ACP SDK's router calls AcpAgent's methods by name with keyword arguments; the parameters it
# passes must exist even where we ignore them (modes/acp/agent.py).
_.on_connect
_.initialize
_.set_session_mode
_.client_info
_.additional_directories
_.cursor
_.kwargs
_.authenticate  # ACP authenticate, session/resume, session/close
_.resume_session
_.close_session
# pygls registers these LSP feature handlers and commands by decorator (modes/lsp/server.py).
_.lsp_exit
_.did_change_configuration
_.code_action
_.send_chat
_.run_action
# The ACP SDK's Transport protocol (modes/acp/transport.py).
_.receive
# argparse.Action.__call__'s signature (cli.py).
_.namespace
_.option_string
# decimal.localcontext(): setting the precision is the point (tools/truncate.py).
_.prec
# The demo renderer dispatches events with getattr(self, "on_" + type) (demo/client.py).
_.on_message_update
_.on_tool_execution_start
_.on_tool_execution_update
_.on_tool_execution_end
_.on_agent_end

# --- msgspec fields: encoded to the wire or decoded from it, never read by attribute -------------
_.assistant_message  # agent/types.py: turn_end, message events
_.tool_results  # agent/types.py TurnEnd, session/types.py SessionStats
_.duration_ms  # agent/types.py
_.raw_stop_reason  # ai/types.py AssistantMessage: the provider's own stop reason, for clients
_.total_from_provider  # ai/types.py Cost: whether the total is the provider's bill
_.disposition  # modes/pi/commands.py Disposition: a prompt's, steer's or follow-up's response data
_.reasoning_content  # ai/providers/openai_chunks.py: decoded from servers that send it
_.reasoning_text
_.client_info  # modes/jsonrpc/protocol.py InitializeParams
_.server_info  # modes/jsonrpc/protocol.py InitializeResult
_.jsonrpc  # modes/jsonrpc/protocol.py AgentEventNotification
_.parent_session  # modes/pi/commands.py: Pi's new_session field
_.is_compacting  # modes/pi/commands.py PiState: Pi's get_state shape
_.auto_compaction_enabled
_.queued  # session/types.py PromptOutcome
_.pending_approvals  # session/types.py SessionState
_.user_messages  # session/types.py SessionStats
_.percent  # session/types.py ContextUsage
_.will_retry  # agent/types.py: a wire event field
_.parent_tool_call_id  # agent/types.py: tool_execution_* of a codemode script's call, for clients to nest
_.since  # modes/pi/commands.py: Pi's command and response fields
_.is_scoped
_.source_info
_.first_kept_entry_id  # session/compaction/planning.py CompactionResult: Pi's compact answer
_.estimated_tokens_after
_.wall_time_seconds  # tools/bash.py BashOutput: Pi's structuredContent of a bash result
_.image_unsupported_by_model  # tools/read.py ImageReadDetails: Pi's details of an image read
_.mimeType  # tools/read.py ImageReadOutput: Pi's structuredContent of an image read
_.from_id  # ai/types.py BranchSummaryMessage: Pi's branchSummary field
_.leaf_id  # modes/jsonrpc/protocol.py EntryList: the cursor a client sends back
_.assistant_messages
_.total_messages
_.first_changed_line  # tools/edit.py EditDetails
_.match_limit_reached  # tools/grep.py, find.py, ls.py Details: set by name from a listing Notice
_.result_limit_reached
_.entry_limit_reached

# --- API the tests (and clients) drive; nothing in the daemon calls it ---------------------------
_.get_model  # ai/models.py: tests/unit/ai, tests/providers
_.notify  # demo/rpc_client.py DaemonClient: tests/e2e, tests/reliability
_.wait_for_type
_.wait_for_log
_.ignore  # tools/find.py GlobOptions: for a custom glob operation
_.raw_bytes  # tools/output.py: tests/unit/tools/test_output.py, bench
_.retained_bytes
_.live  # tools/process.py ProcessTable: tests/unit/tools/test_bash.py
_.create_client  # ai/http.py: a one-off client for tests/providers/test_http.py (the daemon pools its own)
_.running  # session/user_bash.py UserBash: tests/unit/session/test_user_bash.py
