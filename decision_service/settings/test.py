"""Test runs: the same database choice as ``DATABASE_URL`` gives, fast hashing, no debug."""

from decision_service import env
from decision_service.settings.base import *  # noqa: F403

SECRET_KEY = env.local_secret_key()
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests change the configuration and decide at once: look for a new revision on every request.
ARBITER_REVISION_CHECK_SECONDS = 0.0
