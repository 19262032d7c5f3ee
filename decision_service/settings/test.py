"""Test runs: the same database choice as ``DATABASE_URL`` gives, fast hashing, no debug."""

from decision_service.settings.base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
