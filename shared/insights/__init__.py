"""Usage insights for the people who own the documentation: what agents asked, what they read after a search, what
they could not find and what they said was wrong (`docs/insights.md`).

`events` is what is kept (scrubbed, pseudonymous); `store` keeps it in blob storage beside the index cache;
`recorder` takes events off the request path in batches; `report` makes the report and the evaluation set.
"""
