"""Reports over the configuration and the decision log (the decision-point map)."""
