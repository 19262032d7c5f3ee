"""Agent runtimes: who may call the agent API — tokens, the principal cache, the points they may ask, rate limits."""
