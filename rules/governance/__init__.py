"""The governance room: change requests and their four-eyes gate, risk, impact, regressions,
notifications, staff tokens."""
