"""The decisions room: the decision log and what reads or sweeps it."""
