"""The demo project's own app: simulated handlers and the demo operator account."""
