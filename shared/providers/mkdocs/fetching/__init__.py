"""Pages read from the origin (raw Markdown, else HTML converted), and pages not where they were asked for."""
