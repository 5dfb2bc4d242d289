"""Code blocks as results of their own: cut out of the index, named by language, ranked."""
