"""Each site's index loaded, stored, refreshed and warmed, its versions, and what health says of it."""
