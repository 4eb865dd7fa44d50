"""How a session is configured: `SessionConfig`, the one way a session for a folder is set up
(`open_folder`), the user's and the workspace's `settings.json`, and workspace trust."""
