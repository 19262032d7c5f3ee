"""Sessions under state machines: moves, anomalies, feedback hints, timeouts, and the decide-with-session flow."""
