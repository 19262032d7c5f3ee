"""The admin in Chinese, in a real browser: English by default, Simplified Chinese for a browser that
asks for it (``Accept-Language: zh-hans``) and for an operator who picks it in the header's language
switch (Django's ``set_language``, which sets the language cookie).

Screenshots (/tmp/arbiter-admin-zh-*.png) need a CJK font on the machine (fonts-noto-cjk); the text
assertions do not.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model

from tests.support import load_demo

USERNAME, PASSWORD = "ops_zh", "ops-password-zh"
SCREENSHOTS = Path("/tmp")  # noqa: S108 - beside the other admin screenshots


def _log_in(page, base: str) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def _rules_changelist(page, base: str) -> tuple[str, str]:
    """The rules list's column headers and its filter panel, as shown."""
    page.goto(f"{base}/admin/rules/rule/")
    page.wait_for_selector("#result_list")
    return page.inner_text("#result_list thead"), page.inner_text("#changelist-filter")


def test_admin_index_and_rules_list_in_english_then_chinese(
    live_server,
    transactional_db,
    chromium_page,
):
    get_user_model().objects.create_user(username=USERNAME, password=PASSWORD, is_staff=True, is_superuser=True)
    load_demo()
    page = chromium_page
    base = live_server.url

    # English unless asked otherwise (Playwright's Chromium sends Accept-Language: en-US).
    _log_in(page, base)
    assert page.get_attribute("html", "lang") == "en"
    index = page.inner_text("#content")
    assert "Decision rules, thresholds and agents" in index
    assert "Decision points" in index and "Keyword lists" in index
    head, filters = _rules_changelist(page, base)
    assert "PRIORITY" in head.upper() and "OUTCOME" in head.upper() and "CONDITIONS" in head.upper()
    assert "High-risk (compliance, risk)" in filters

    # A browser that prefers Simplified Chinese gets it, with no cookie set.
    assert not [c for c in page.context.cookies() if c["name"] == settings.LANGUAGE_COOKIE_NAME]
    page.set_extra_http_headers({"Accept-Language": "zh-hans,zh;q=0.9"})
    page.goto(f"{base}/admin/")
    assert page.get_attribute("html", "lang") == "zh-hans"
    index = page.inner_text("#content")
    for label in ("决策规则、阈值与智能体", "决策点", "关键词列表", "阈值", "状态机", "决策日志", "变更请求", "会话"):
        assert label in index, label
    assert "Decision points" not in index
    assert page.locator("#arbiter-language-select").input_value() == "zh-hans"
    page.screenshot(path=str(SCREENSHOTS / "arbiter-admin-zh-index.png"), full_page=True)
    head, filters = _rules_changelist(page, base)
    for label in ("键", "决策点", "优先级", "类别", "高风险", "模式", "结果", "条件"):
        assert label in head, label
    assert "高风险（合规、风险）" in filters
    assert "合规" in page.inner_text("#result_list tbody")  # the category column's choice labels
    page.screenshot(path=str(SCREENSHOTS / "arbiter-admin-zh-rules.png"), full_page=True)

    # The switch in the header: back to English, kept in the cookie even though the browser asks for Chinese.
    # The switch posts to set_language, which redirects back here: wait for that navigation, not for a
    # URL the page already has.
    with page.expect_navigation(url=f"{base}/admin/rules/rule/"):
        page.select_option("#arbiter-language-select", "en")
    page.wait_for_selector("#result_list")
    assert page.get_attribute("html", "lang") == "en"
    cookie = {c["name"]: c["value"] for c in page.context.cookies()}.get(settings.LANGUAGE_COOKIE_NAME)
    assert cookie == "en"
    assert "High-risk (compliance, risk)" in page.inner_text("#changelist-filter")

    # And to Chinese with the switch, for a browser that asks for English: the cookie wins.
    page.set_extra_http_headers({"Accept-Language": "en-US,en;q=0.9"})
    page.goto(f"{base}/admin/")
    assert page.get_attribute("html", "lang") == "en"
    with page.expect_navigation(url=f"{base}/admin/"):
        page.select_option("#arbiter-language-select", "zh-hans")
    assert page.get_attribute("html", "lang") == "zh-hans"
    assert "决策规则、阈值与智能体" in page.inner_text("#content")
    head, _ = _rules_changelist(page, base)
    assert "优先级" in head
