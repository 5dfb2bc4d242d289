"""What a site publishes, read into an index, and a location resolved against it."""
