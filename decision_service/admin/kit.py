"""The admin kit every app's admin builds on: every write through a service, one submission one change.

How a submission becomes exactly one change: ``changeform_view`` (and ``delete_view``, the revert view
and the bulk delete action) run inside ``change_scope(actor, reason)``. The kit's default is one
transaction; an app whose services group writes in a change of their own returns that instead
(``rules`` returns its configuration change, so a form and all its inline rows are one configuration
revision), and every service called inside joins it.

How a service's refusal reaches the form: Django only re-renders a form whose validation failed, but
a service refuses while *saving*, after validation passed. So a refusal is raised as
``ServiceRefused``, which rolls the whole submission back, and the view runs a second time on the
same POST with the refusal's messages injected into the form and inline rows as validation errors.
The second pass cannot save (its forms are invalid), so nothing is written twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.options import InlineModelAdmin
from django.contrib.admin.utils import unquote
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import NON_FIELD_ERRORS, ImproperlyConfigured, PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Model, ProtectedError, QuerySet, RestrictedError
from django.forms.models import BaseInlineFormSet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from simple_history.admin import SimpleHistoryAdmin

from decision_service.admin.forms import (
    DEFAULT_REASON,
    DELETE_REASON,
    REASON_FIELD,
    REVERT_REASON,
    AuditedModelForm,
    Problem,
)
from decision_service.errors import Deferred, DomainError

Actor = AbstractBaseUser | None

REFUSALS = (ValidationError, DomainError)
_REFUSAL_ATTR = "_arbiter_refusal"
_DEFAULT_REASON_ATTR = "_arbiter_default_reason"
_HELD_MESSAGES_ATTR = "_arbiter_held_messages"


def reason_from(request: HttpRequest, default: str | None = None) -> str:
    """The reason typed into the form; when left empty, ``default`` or the view's default."""
    typed = str(request.POST.get(REASON_FIELD) or "").strip()[:500]
    return typed or default or str(getattr(request, _DEFAULT_REASON_ATTR, DEFAULT_REASON))


def actor_of(request: HttpRequest) -> Actor:
    """The signed-in user the services record as the actor (admin views only admit staff)."""
    user = request.user
    return user if isinstance(user, AbstractBaseUser) else None


def problems_of(exc: Exception) -> list[Problem]:
    """A service refusal as ``(field or None, message)`` pairs."""
    if isinstance(exc, ValidationError):
        if hasattr(exc, "error_dict"):
            return [
                (None if name == NON_FIELD_ERRORS else name, message)
                for name, messages_ in exc.message_dict.items()
                for message in messages_
            ]
        return [(None, message) for message in exc.messages]
    if isinstance(exc, DomainError):
        return [(None, exc.detail)]
    return [(None, str(exc))]


def refusal_text(exc: Exception) -> str:
    return " ".join(message if name is None else f"{name}: {message}" for name, message in problems_of(exc))


@dataclass
class Refusal:
    """What a service refused, addressed to the main form and to inline rows (by formset prefix and row)."""

    form: list[Problem] = field(default_factory=list)
    inlines: dict[str, dict[int | None, list[Problem]]] = field(default_factory=dict)


class ServiceRefused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__("a service refused the admin submission")
        self.refusal = refusal


@contextmanager
def refused_on_form(*, field: str | None = None) -> Iterator[None]:
    """Turn a service refusal into ``ServiceRefused`` addressed to the main form (or one of its fields)."""
    try:
        yield
    except REFUSALS as exc:
        problems = [(field or name, message) for name, message in problems_of(exc)]
        raise ServiceRefused(Refusal(form=problems)) from exc


def inline_problems(
    formset: forms.BaseFormSet, obj: Model, exc: Exception, *, deleting: bool
) -> dict[int | None, list]:
    """Address a refusal to the inline row that holds ``obj`` (rows being deleted: to the whole group)."""
    problems = problems_of(exc)
    index = None if deleting else next((i for i, f in enumerate(formset.forms) if f.instance is obj), None)
    if index is None:
        could_not = (
            gettext("Could not delete “%(record)s”: %(problem)s")
            if deleting
            else gettext("Could not save “%(record)s”: %(problem)s")
        )
        problems = [(None, could_not % {"record": obj, "problem": message}) for _, message in problems]
    return {index: problems}


@contextmanager
def messages_held(request: HttpRequest) -> Iterator[None]:
    """Keep what Django's views say while a submission runs ("… was changed successfully.") until it is
    known to have happened: the change is settled only when its scope closes, and a scope that ends
    with ``Deferred`` (or a refusal) changed nothing, so those messages would be untrue. Only the
    ``AuditedAdmin.message_user`` of the kit's admins is held."""
    held: list[tuple[Any, ...]] = []
    setattr(request, _HELD_MESSAGES_ATTR, held)
    try:
        yield
    finally:
        delattr(request, _HELD_MESSAGES_ATTR)
    # Reached only when the block did not raise.
    for message, level, extra_tags, fail_silently in held:
        messages.add_message(request, level, message, extra_tags=extra_tags, fail_silently=fail_silently)


class AuditedInlineFormSet(BaseInlineFormSet):
    """An inline formset that can show, as validation errors, what a service refused on the first pass."""

    audited_inline: AuditedInline | None = None

    def __init__(self, *args: Any, injected_problems: dict[int | None, list[Problem]] | None = None, **kwargs: Any):
        self.injected_problems = injected_problems or {}
        super().__init__(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        stray: list[str] = []
        for index, problems in self.injected_problems.items():
            form = self.forms[index] if index is not None and index < len(self.forms) else None
            deleted = form is not None and self.can_delete and self._should_delete_form(form)  # type: ignore[attr-defined]
            for name, message in problems:
                if form is None or deleted:
                    stray.append(message)
                elif name is not None and name in form.fields:
                    form.add_error(name, message)
                else:
                    form.add_error(None, message if name is None else f"{name.replace('_', ' ')}: {message}")
        if stray:
            raise ValidationError(stray)


class AuditedInline(InlineModelAdmin):
    """Inline rows saved and deleted one by one through services (``save_record`` / ``delete_record``).

    Combine with Django's layout: ``class TermInline(AuditedInline, admin.TabularInline)``.
    """

    formset = AuditedInlineFormSet

    def save_record(self, obj: Any, *, actor: Actor, reason: str) -> None:
        raise NotImplementedError

    def delete_record(self, obj: Any, *, actor: Actor, reason: str) -> None:
        raise NotImplementedError

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> type[BaseInlineFormSet]:
        formset = super().get_formset(request, obj, **kwargs)
        formset.audited_inline = self  # type: ignore[attr-defined]
        return formset


class AuditedAdmin(SimpleHistoryAdmin):
    """An audited record's admin: presentation here, every write through the record's services."""

    form = AuditedModelForm
    readonly_after_create: Sequence[str] = ("key",)
    delete_confirmation_template = "admin/arbiter/delete_confirmation.html"
    delete_selected_confirmation_template = "admin/arbiter/delete_selected_confirmation.html"
    reason_fieldset_title = _("Why")
    # django-simple-history's list, but a version is a link only for those who may open it (see below).
    object_history_list_template = "admin/arbiter/object_history_list.html"

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css", "arbiter/admin/lists.css")}

    # --- the two hooks each admin implements -------------------------------------------------------

    def save_record(self, obj: Any, *, actor: Actor, reason: str) -> None:
        raise NotImplementedError

    def delete_record(self, obj: Any, *, actor: Actor, reason: str) -> None:
        raise NotImplementedError

    def change_scope(self, *, actor: Actor, reason: str) -> AbstractContextManager[Any]:
        """What one submission runs in; services called inside join it (see the module docstring)."""
        return transaction.atomic()

    def deferred_response(self, request: HttpRequest, deferred: Deferred) -> HttpResponse:
        """Where a submission goes when its change was recorded to be made later (e.g. once approved)."""
        self.message_user(request, deferred.detail, messages.WARNING)
        opts = self.model._meta
        return HttpResponseRedirect(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))

    def message_user(
        self,
        request: HttpRequest,
        message: Any,
        level: int = messages.INFO,
        extra_tags: str = "",
        fail_silently: bool = False,
    ) -> None:
        held = getattr(request, _HELD_MESSAGES_ATTR, None)
        if held is None:
            super().message_user(request, message, level, extra_tags, fail_silently)
        else:
            held.append((message, level, extra_tags, fail_silently))

    # --- presentation --------------------------------------------------------------------------------

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Sequence[str]:
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            readonly += [name for name in self.readonly_after_create if name not in readonly]
        return readonly

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[tuple[str | None, dict[str, Any]]]:
        fieldsets = []
        for title, options in super().get_fieldsets(request, obj):
            names = [f for f in options["fields"] if f != REASON_FIELD]
            if names:
                fieldsets.append((title, {**options, "fields": names}))
        if obj is None or self.has_change_permission(request, obj):
            fieldsets.append((self.reason_fieldset_title, {"fields": [REASON_FIELD]}))
        return fieldsets

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        refusal: Refusal | None = getattr(request, _REFUSAL_ATTR, None)
        if refusal is not None:
            problems = list(refusal.form)
            if refusal.inlines:
                problems.append((None, gettext("Nothing was saved: see the errors in the rows below.")))
            form = type(form.__name__, (form,), {"injected_problems": problems})
        return form

    def get_formset_kwargs(self, request: HttpRequest, obj: Any, inline: Any, prefix: str) -> dict[str, Any]:
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        refusal: Refusal | None = getattr(request, _REFUSAL_ATTR, None)
        if refusal is not None and prefix in refusal.inlines:
            kwargs["injected_problems"] = refusal.inlines[prefix]
        return kwargs

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if "delete_selected" in actions:
            _, name, description = actions["delete_selected"]
            actions["delete_selected"] = (delete_selected_audited, name, description)
        return actions

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, Any, Any]:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if protected:
            if request.method == "POST" and request.POST.get("post"):
                # Confirmed: let the delete service decide and explain (see delete_view).
                protected = []
            else:
                protected = self.describe_protected(objs) or protected
        return deleted, counts, perms_needed, protected

    def describe_protected(self, objs: Any) -> list[str]:
        """What keeps ``objs`` from being deleted, in words for the confirmation page."""
        return []

    # --- writes ---------------------------------------------------------------------------------------

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        with refused_on_form():
            self.save_record(obj, actor=actor_of(request), reason=reason_from(request))

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        inline = getattr(formset, "audited_inline", None)
        if inline is None:
            raise ImproperlyConfigured(f"{type(self).__name__}: inlines must use AuditedInline.")
        actor, reason = actor_of(request), reason_from(request)
        instances = formset.save(commit=False)
        refused: dict[int | None, list[Problem]] = {}
        for obj in formset.deleted_objects:
            try:
                inline.delete_record(obj, actor=actor, reason=reason)
            except REFUSALS as exc:
                for index, problems in inline_problems(formset, obj, exc, deleting=True).items():
                    refused.setdefault(index, []).extend(problems)
        for obj in instances:
            try:
                inline.save_record(obj, actor=actor, reason=reason)
            except REFUSALS as exc:
                for index, problems in inline_problems(formset, obj, exc, deleting=False).items():
                    refused.setdefault(index, []).extend(problems)
        if refused:
            raise ServiceRefused(Refusal(inlines={formset.prefix: refused}))
        formset.save_m2m()

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_record(obj, actor=actor_of(request), reason=reason_from(request, DELETE_REASON))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        actor, reason = actor_of(request), reason_from(request, DELETE_REASON)
        with self.change_scope(actor=actor, reason=reason):
            for obj in queryset:
                self.delete_record(obj, actor=actor, reason=reason)

    # --- views: one submission, one transaction, one revision -------------------------------------------

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        view = partial(super().changeform_view, request, object_id, form_url, extra_context)
        return self._audited(request, view, DEFAULT_REASON)

    def history_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        may_open = obj is not None and self.has_change_permission(request, obj)
        return super().history_view(request, object_id, {**(extra_context or {}), "may_open_versions": may_open})

    def history_form_view(
        self, request: HttpRequest, object_id: str, version_id: str, extra_context: Any = None
    ) -> HttpResponse:
        # django-simple-history admits anyone who may *view* the record, then saves the POST, and
        # ``revert_disabled`` only hides the button. A revert is a change: its page needs the change
        # permission (as the change form does), and a record whose revert is disabled is never saved
        # from it, whoever asks (its history lacks what a revert would have to restore).
        version = self.history_version(object_id, version_id)
        if not self.has_change_permission(request, version):
            raise PermissionDenied
        if request.method == "POST" and self.revert_disabled(request, version):
            raise PermissionDenied
        view = partial(super().history_form_view, request, object_id, version_id, extra_context)
        return self._audited(request, view, REVERT_REASON)

    def history_version(self, object_id: str, version_id: str) -> Any:
        """The record as it was in one history row (404 for a row of another record, or no such row)."""
        history = getattr(self.model, self.model._meta.simple_history_manager_attribute).model
        try:
            row = get_object_or_404(history, **{self.model._meta.pk.attname: object_id, "history_id": version_id})
        except (ValueError, ValidationError) as exc:  # an id that is not a number
            raise Http404 from exc
        return row.instance

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        if request.method != "POST":
            return super().delete_view(request, object_id, extra_context)
        try:
            with (
                messages_held(request),
                self.change_scope(actor=actor_of(request), reason=reason_from(request, DELETE_REASON)),
            ):
                return super().delete_view(request, object_id, extra_context)
        except Deferred as deferred:
            return self.deferred_response(request, deferred)
        except (*REFUSALS, ProtectedError, RestrictedError) as exc:
            self.message_user(request, gettext("Not deleted. %(why)s") % {"why": refusal_text(exc)}, messages.ERROR)
            opts = self.model._meta
            return HttpResponseRedirect(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[object_id]))

    def _audited(self, request: HttpRequest, view: Callable[[], HttpResponse], default_reason: str) -> HttpResponse:
        if request.method != "POST":
            return view()
        setattr(request, _DEFAULT_REASON_ATTR, default_reason)
        try:
            with messages_held(request), self.change_scope(actor=actor_of(request), reason=reason_from(request)):
                return view()
        except Deferred as deferred:
            return self.deferred_response(request, deferred)
        except ServiceRefused as refused:
            setattr(request, _REFUSAL_ATTR, refused.refusal)
        # Second pass over the same POST, outside any change: the injected errors make it re-render.
        return view()


class ReadOnlyAdmin(admin.ModelAdmin):
    """A log, not a record anyone edits: viewing only, for staff with the view (or change) permission."""

    class Media:
        css = {"all": ("arbiter/admin/arbiter.css", "arbiter/admin/lists.css")}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.action(permissions=["delete"], description=_("Delete selected %(verbose_name_plural)s"))
def delete_selected_audited(modeladmin: AuditedAdmin, request: HttpRequest, queryset: QuerySet) -> Any:
    """Django's bulk delete, run as one change; a refusal deletes nothing and says why."""
    if not request.POST.get("post"):
        return delete_selected(modeladmin, request, queryset)
    try:
        with (
            messages_held(request),
            modeladmin.change_scope(actor=actor_of(request), reason=reason_from(request, DELETE_REASON)),
        ):
            return delete_selected(modeladmin, request, queryset)
    except Deferred as deferred:
        return modeladmin.deferred_response(request, deferred)
    except (*REFUSALS, ProtectedError, RestrictedError) as exc:
        modeladmin.message_user(
            request, gettext("Nothing was deleted. %(why)s") % {"why": refusal_text(exc)}, messages.ERROR
        )
        return None
