"""The product's routes, plus the bare endpoint the decide path is measured against (never in the product)."""

from django.urls import path

from bench.http.views import bare_insert
from decision_service.urls import urlpatterns as product

urlpatterns = [path("bench/bare", bare_insert), *product]
