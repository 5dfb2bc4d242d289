"""Ranking a query over the sites: lexical (BM25F), semantic (embeddings), and how the two are blended."""
