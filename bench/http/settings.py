"""The benchmark server: the production settings, with the benchmark's own URLconf on top of the product's."""

from decision_service.settings.production import *  # noqa: F403

ROOT_URLCONF = "bench.http.urls"
