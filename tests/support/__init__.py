"""Test helpers: a static documentation origin, uvicorn in a thread, and the built MkDocs fixture sites."""
