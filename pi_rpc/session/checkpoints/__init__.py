"""Checkpoints and rewind: the files each user message's run changed, recorded before its tools run,
kept beside the session's file, the snapshots around a shell command, and putting files back."""
