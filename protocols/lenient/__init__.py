"""The lenient readers: JSON, XML, Python calls and values as models really write them,
coerced to the types a tool's schema declares, and tool names as models spell them. A new
repair of what models write belongs here."""
