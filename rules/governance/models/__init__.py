"""Governance models (Django loads them through ``rules.models``)."""
