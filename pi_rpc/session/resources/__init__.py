"""What a session loads from the user's and the project's folders: where skills and prompt
templates are found and how they are read, context files, the bounds of one load, and the pattern
and ignore-file matchers the search uses."""
