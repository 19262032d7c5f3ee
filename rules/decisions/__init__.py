"""The decisions room: the decision log, decide's pure compute, the statements that write the log, replay,
retention, partitions, and what reads or sweeps the log."""
