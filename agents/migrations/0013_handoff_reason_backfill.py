"""Every session waiting in its machine's handoff state says why (agents.sessions.handoff).

Until now only the model-failure policy and the timeout sweep set ``handoff_reason``; a session a
decision, a fallback or the agent moved there had none. Rows waiting now get the reason from the move
that brought them there (the transition numbered with the session's ``seq``), or ``started`` when there
was none. The mapping is written out here, as it stood, so that later code cannot change the past.
"""

from django.db import migrations

_REASON_BY_KIND = {
    "decision": "rule",
    "fallback": "fallback",
    "timeout": "timeout",
    "model_failure": "model_failure",
    "move": "agent",
    "interrupt": "agent",
    "resume": "agent",
}


def backfill(apps, schema_editor):
    Session = apps.get_model("agents", "Session")
    Transition = apps.get_model("agents", "Transition")
    StateMachine = apps.get_model("rules", "StateMachine")
    for machine in StateMachine.objects.all():
        waiting = Session.objects.filter(machine=machine, state=machine.handoff_state, handoff_reason="")
        for session in waiting.iterator():
            last = Transition.objects.filter(session=session, seq=session.seq).values_list("kind", flat=True).first()
            reason = "started" if last is None else _REASON_BY_KIND.get(last, last)
            Session.objects.filter(pk=session.pk, handoff_reason="").update(handoff_reason=reason)


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0012_i18n_labels"),
        ("rules", "0017_decision_session_overruled_index"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
