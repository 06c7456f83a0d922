"""Developer tools: the sqllogictest runner (`sqlkv.tools.slt`)."""
