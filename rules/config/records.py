"""Create, update and delete configuration records through one audited path.

Admin classes, YAML import and the shell all call these; none of them saves a model directly.
"""

from __future__ import annotations

from typing import TypeVar

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, gettext_noop

from rules.config.condition_kinds import unused_inputs
from rules.config.revisions import Actor, audited_delete, audited_save, config_change
from rules.config.validators import same_terms
from rules.engine.normalize import normalize_term
from rules.hooks import point_deleting
from rules.models import Condition, DecisionPoint, KeywordList, KeywordTerm, Rule, Threshold

M = TypeVar("M", bound=models.Model)


def threshold_save(*, threshold: Threshold, actor: Actor, reason: str) -> Threshold:
    """Create or update a threshold; the value must stay within its bounds."""
    audited_save(threshold, actor=actor, reason=reason)
    return threshold


def threshold_delete(*, threshold: Threshold, actor: Actor, reason: str) -> None:
    _refuse_if_used(
        threshold,
        gettext_noop("The threshold %(record)s is used by rules %(rules)s; change those rules first."),
        Condition.objects.filter(threshold=threshold),
    )
    audited_delete(threshold, actor=actor, reason=reason)


def keyword_list_save(*, keyword_list: KeywordList, actor: Actor, reason: str) -> KeywordList:
    with config_change(actor=actor, reason=reason):
        audited_save(keyword_list, actor=actor, reason=reason)
        # A change of match mode changes how terms are stored (regexes keep their case, plain terms are
        # folded) and whether they must compile: check every term again and store it as the mode wants.
        terms = list(keyword_list.terms.order_by("id"))
        same = same_terms([t.term for t in terms], keyword_list.match_mode)
        if same:
            later = min(same)
            one, other = terms[later].term, terms[same[later]].term
            raise ValidationError({"match_mode": f"In this mode '{one}' and '{other}' would be the same term."})
        for term in terms:
            term.keyword_list = keyword_list
            if normalize_term(term.term, keyword_list.match_mode) != term.term:
                audited_save(term, actor=actor, reason=reason)  # full_clean stores it in the new form
            else:
                term.full_clean()
    return keyword_list


def keyword_list_delete(*, keyword_list: KeywordList, actor: Actor, reason: str) -> None:
    _refuse_if_used(
        keyword_list,
        gettext_noop("The keyword list %(record)s is used by rules %(rules)s; change those rules first."),
        Condition.objects.filter(keyword_list=keyword_list),
    )
    with config_change(actor=actor, reason=reason):
        for term in list(keyword_list.terms.all()):
            audited_delete(term, actor=actor, reason=reason)
        audited_delete(keyword_list, actor=actor, reason=reason)


def keyword_term_save(*, term: KeywordTerm, actor: Actor, reason: str) -> KeywordTerm:
    """Save one term, normalised (NFKC, case-folded; regexes only trimmed); duplicates are refused."""
    term.term = normalize_term(term.term or "", term.keyword_list.match_mode)
    audited_save(term, actor=actor, reason=reason)
    return term


def keyword_term_delete(*, term: KeywordTerm, actor: Actor, reason: str) -> None:
    audited_delete(term, actor=actor, reason=reason)


def keyword_terms_add(*, keyword_list: KeywordList, terms: list[str], actor: Actor, reason: str) -> list[KeywordTerm]:
    """Add many terms at once (the admin's paste box); refuses the whole batch if any is a duplicate."""
    normalised = [normalize_term(t, keyword_list.match_mode) for t in terms]
    normalised = [t for t in normalised if t]
    existing = list(keyword_list.terms.values_list("term", flat=True)) if keyword_list.pk else []
    same = same_terms([*existing, *normalised], keyword_list.match_mode)
    dupes = [normalised[i - len(existing)] for i in same if i >= len(existing)]
    if dupes:
        raise ValidationError(
            gettext("Already in list %(list)s: %(terms)s.")
            % {"list": keyword_list.key, "terms": ", ".join(sorted(set(dupes)))}
        )
    created = []
    with config_change(actor=actor, reason=reason):
        for t in normalised:
            created.append(
                keyword_term_save(term=KeywordTerm(keyword_list=keyword_list, term=t), actor=actor, reason=reason)
            )
    return created


def point_save(*, point: DecisionPoint, actor: Actor, reason: str) -> DecisionPoint:
    audited_save(point, actor=actor, reason=reason)
    return point


def point_delete(*, point: DecisionPoint, actor: Actor, reason: str) -> None:
    """Delete a point with its rules. ``point_deleting`` lets the apps built on rules drop what refers to
    it first, in the same change (agent runtimes lose access to it, in their history too)."""
    with config_change(actor=actor, reason=reason):
        point_deleting.ask(point=point, actor=actor, reason=reason)
        for rule in list(point.rules.all()):
            rule_delete(rule=rule, actor=actor, reason=reason)
        audited_delete(point, actor=actor, reason=reason)


def rule_save(*, rule: Rule, actor: Actor, reason: str) -> Rule:
    audited_save(rule, actor=actor, reason=reason)
    return rule


def rule_delete(*, rule: Rule, actor: Actor, reason: str) -> None:
    with config_change(actor=actor, reason=reason):
        for condition in list(rule.conditions.all()):
            audited_delete(condition, actor=actor, reason=reason)
        audited_delete(rule, actor=actor, reason=reason)


def condition_save(*, condition: Condition, actor: Actor, reason: str) -> Condition:
    """Save a condition, emptying the inputs its kind does not use."""
    for name, empty in unused_inputs(condition.kind).items():
        setattr(condition, name, empty)
    audited_save(condition, actor=actor, reason=reason)
    return condition


def condition_delete(*, condition: Condition, actor: Actor, reason: str) -> None:
    audited_delete(condition, actor=actor, reason=reason)


def _refuse_if_used(instance: models.Model, message: str, conditions: models.QuerySet[Condition]) -> None:
    users = sorted({str(c.rule) for c in conditions.select_related("rule__point")})
    if users:
        raise ValidationError(gettext(message) % {"record": instance, "rules": ", ".join(users)})
