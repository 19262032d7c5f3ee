"""Decisions: the log, decide's pure compute, the statements that write the log, replay, retention, partitions."""
