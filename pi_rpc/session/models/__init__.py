"""Model choice: which model a session starts on and how a client switches, Pi's model names and
`--models` scope, and the next model and thinking level of Pi's cycle commands."""
