"""The interactive side of goat: a terminal-free Session, and the prompt-toolkit REPL."""
