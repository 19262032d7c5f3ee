"""The reference agent: an after-sales customer-service bot on arbiter-client (see README.md here)."""
