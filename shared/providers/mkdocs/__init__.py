"""The MkDocs fallback provider: each site's published search index, location resolution and page fetch."""
