"""The configuration records in the admin; the shared kit is ``base``."""
