"""Compaction: when a conversation is compacted and where it is cut, the summary request and its
retries, the files the summarised turns touched, and the compaction as a session runs it."""
