"""Side-by-side benchmark of the rule engine backends (native, durable, GoRules zen-engine)."""
