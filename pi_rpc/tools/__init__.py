"""The built-in tools. The registry lives in `pi_rpc.tools.registry`."""
