"""Documentation providers: each answers search and (optionally) get its own way, behind one contract (`base`)."""
