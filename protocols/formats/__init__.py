"""The text protocols a route prompts for (JSON-mix, Morph-XML, Qwen3-Coder), each
registered by name, with the pieces of prompt they share, forced calls and free-form
tools. A new protocol belongs here; a format models write unasked is a dialect."""
