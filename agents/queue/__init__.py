"""The human queue: sessions waiting in their machine's handoff state, claimed, released, returned, resolved."""
