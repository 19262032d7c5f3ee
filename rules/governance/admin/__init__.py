"""Change requests and the rule simulator in the admin."""
