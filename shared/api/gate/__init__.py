"""What every request passes before a route runs: callers' credentials and sign-in, their limits, bodies and
disconnects, and the access log."""
