"""`pi-rpc --mode lsp`: the agent as a language server (pygls + lsprotocol)."""
