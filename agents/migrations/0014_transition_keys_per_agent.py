"""Moves' Idempotency-Keys join the agent's one key table (rules.DecisionIdempotencyKey, issue 23).

Until now a move's key was unique per session, on its transition row; now every write of the agent API
shares one key space per agent. The transitions keep their keys (the column and its constraint stay, as
a record); each key is copied into the key table as a move's, so a retry made across the upgrade still
replays its move. Where two sessions of one agent used the same key (allowed until now), or a decision
of the agent already holds it, the earliest holder keeps it: a retry of the other move is refused as
``idempotency_conflict`` rather than answered with another session's move.
"""

from django.db import migrations


def copy_keys(apps, schema_editor):
    Transition = apps.get_model("agents", "Transition")
    Key = apps.get_model("rules", "DecisionIdempotencyKey")
    moves = (
        Transition.objects.exclude(idempotency_key="")
        .order_by("created_at", "pk")
        .values_list("session__agent_id", "idempotency_key", "request_digest", "session__key", "seq", "kind", "created_at")
    )
    taken = set(Key.objects.values_list("agent_id", "key"))
    batch = []
    for agent_id, key, digest, session_key, seq, kind, created_at in moves.iterator(chunk_size=2000):
        if (agent_id, key) in taken:
            continue
        taken.add((agent_id, key))
        batch.append(
            Key(
                agent_id=agent_id,
                key=key,
                operation="transition",
                request_digest=digest,
                target={"session_id": session_key, "seq": seq},
                created_at=created_at,
            )
        )
        if len(batch) >= 2000:
            Key.objects.bulk_create(batch)
            batch = []
    Key.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0013_handoff_reason_backfill"),
        ("rules", "0021_idempotency_key_every_write"),
    ]

    operations = [migrations.RunPython(copy_keys, migrations.RunPython.noop)]
