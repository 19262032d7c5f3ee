"""The admin's own words are translated into Simplified Chinese; the API keeps answering in English.

An English string left out of the catalogue would show as English to an operator who chose 简体中文:
every model's name, every field's verbose name and help text, every choice label and each app's name
is checked here under ``zh-hans``. ``bin/check-translations`` keeps the catalogue complete for every
string marked for translation; this test catches a label that was never marked.
"""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.conf import settings
from django.db import models
from django.utils import translation
from django.utils.functional import Promise

from tests.support import agent_api

APPS = ("rules", "agents")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _models() -> list[type[models.Model]]:
    # simple-history's copies ("historical …") are not admin pages of their own.
    return [
        m for label in APPS for m in apps.get_app_config(label).get_models() if not m.__name__.startswith("Historical")
    ]


def _labels() -> list[tuple[str, object]]:
    """(where, label) for every model, field, help text and choice label of the project's apps."""
    found: list[tuple[str, object]] = []
    for label in APPS:
        found.append((f"app {label}", apps.get_app_config(label).verbose_name))
    for model in _models():
        name = model._meta.label
        found.append((f"{name} verbose_name", model._meta.verbose_name))
        found.append((f"{name} verbose_name_plural", model._meta.verbose_name_plural))
        for field in model._meta.get_fields():
            if field.auto_created or not hasattr(field, "verbose_name"):
                continue  # reverse relations and the primary key (Django's own "ID")
            found.append((f"{name}.{field.name} verbose_name", field.verbose_name))
            if field.help_text:
                found.append((f"{name}.{field.name} help_text", field.help_text))
            for value, choice in field.flatchoices:
                if value != choice:  # operators such as "<" are shown as they are
                    found.append((f"{name}.{field.name} choice {value!r}", choice))
    return found


LABELS = _labels()


@pytest.mark.parametrize(("where", "label"), LABELS, ids=[where for where, _ in LABELS])
def test_every_label_is_marked_and_translated(where: str, label: object) -> None:
    assert isinstance(label, Promise), f"{where} is not marked for translation: {label!r}"
    with translation.override("en"):
        english = str(label)
    with translation.override("zh-hans"):
        chinese = str(label)
    assert chinese != english, f"{where}: {english!r} has no zh-hans translation"


def test_the_labels_cover_every_model_field() -> None:
    """The parametrised test above is not vacuous: it sees the fields operators see."""
    where = {w for w, _ in LABELS}
    assert "rules.Rule.priority verbose_name" in where
    assert "agents.Session.claimed_by help_text" in where
    assert "rules.Rule.mode choice 'shadow'" in where
    assert len(LABELS) > 300


def test_the_language_middleware_is_where_django_needs_it() -> None:
    middleware = settings.MIDDLEWARE
    locale = middleware.index("django.middleware.locale.LocaleMiddleware")
    assert middleware.index("django.contrib.sessions.middleware.SessionMiddleware") < locale
    assert locale < middleware.index("django.middleware.common.CommonMiddleware")
    assert [code for code, _ in settings.LANGUAGES] == ["en", "zh-hans"]


@pytest.mark.django_db
@pytest.mark.parametrize("accept", ["zh-hans", "zh-CN,zh;q=0.9,en;q=0.8", "zh"])
def test_the_admin_follows_accept_language(accept: str, client, django_user_model) -> None:
    django_user_model.objects.create_user(username="ops", password="pw-ops-1", is_staff=True, is_superuser=True)
    client.login(username="ops", password="pw-ops-1")
    english = client.get("/admin/rules/rule/")
    assert english["Content-Language"] == "en"
    assert "High-risk (compliance, risk)" in english.text
    chinese = client.get("/admin/rules/rule/", headers={"accept-language": accept})
    assert chinese["Content-Language"] == "zh-hans"
    assert "高风险（合规、风险）" in chinese.text
    assert "High-risk (compliance, risk)" not in chinese.text


@pytest.mark.django_db
def test_the_language_cookie_set_by_the_switch_wins(client, django_user_model) -> None:
    django_user_model.objects.create_user(username="ops", password="pw-ops-1", is_staff=True, is_superuser=True)
    client.login(username="ops", password="pw-ops-1")
    switched = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/admin/"})
    assert switched.status_code == 302
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    page = client.get("/admin/", headers={"accept-language": "en"})
    assert page["Content-Language"] == "zh-hans"
    assert "决策规则、阈值与智能体" in page.text


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["header", "cookie"])
def test_the_api_answers_in_english_whatever_the_language(how: str, demo) -> None:
    """Stable codes and English details: a client asking for Chinese gets the same problem document."""
    api = agent_api()
    if how == "header":
        api.credentials(HTTP_AUTHORIZATION=api._credentials["HTTP_AUTHORIZATION"], HTTP_ACCEPT_LANGUAGE="zh-hans")
    else:
        api.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    refused = api.post("/api/v1/decisions", {"point": "no_such_point", "input": "hi"}, format="json")
    assert refused["Content-Language"] == "en"
    body = refused.json()
    assert body["code"] and not CJK.search(str(body)), body
    anonymous = api.__class__()
    anonymous.credentials(HTTP_ACCEPT_LANGUAGE="zh-hans")
    unauthenticated = anonymous.get("/api/v1/sessions/1")
    assert unauthenticated.status_code == 401
    assert not CJK.search(unauthenticated.json()["detail"]), unauthenticated.json()


def test_the_machine_picture_legend_follows_the_language() -> None:
    from rules.config.machine_diagram import machine_svg

    drawing = {
        "states": ["start", "human", "done"],
        "initial_state": "start",
        "handoff_state": "human",
        "terminal_states": ["done"],
        "transitions": {"start": ["human", "done"], "human": ["start", "done"]},
    }
    with translation.override("en"):
        english = machine_svg(**drawing, title="m")
    with translation.override("zh-hans"):
        chinese = machine_svg(**drawing, title="m")
    assert "handoff (human)" in english and "a move back (closes a loop)" in english
    assert "转人工" in chinese and "回退流转（形成回路）" in chinese
    assert "handoff (human)" not in chinese
