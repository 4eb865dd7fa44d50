"""Approvals: which tool calls run at once, wait for the user, or are refused (the gate and its rules),
the shell commands as those rules parse them, and an answer that keeps only some hunks of an edit."""
