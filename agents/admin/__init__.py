"""The agents admin: presentation only; every write goes through the services."""

from agents.admin import anomalies, runtimes, sessions

__all__ = ["anomalies", "runtimes", "sessions"]
