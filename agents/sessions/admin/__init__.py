"""The sessions' admin pages: sessions (list, page, timeline) and anomalies."""
