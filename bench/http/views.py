"""The yardstick: what any Django view that parses a JSON body and inserts one row costs on this server.

Same server, same middleware, same table as the decision log (a row of the same width), no DRF, no
authentication, no engine: ``POST /bench/bare`` with ``{"point": …, "input": …}``.
"""

from __future__ import annotations

import json

from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from rules.models import DecisionRecord

BARE_AGENT = "bench_bare"


@csrf_exempt
def bare_insert(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    row = DecisionRecord.objects.create(
        created_at=timezone.now(),
        point=body["point"],
        agent_id=0,
        agent_name=BARE_AGENT,
        input=body["input"],
        decision="general_query",
        ruled_by="llm_candidate",
        revision=0,
        engine="none",
    )
    return JsonResponse({"id": str(row.pk)}, status=201)
