"""Documentation retrieval for AI agents: search several MkDocs sites and get whole pages as Markdown."""

__version__ = "0.1.0"
