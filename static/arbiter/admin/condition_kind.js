'use strict';
// Rule page: in each condition row, show only the inputs its kind uses, with the kind's own help text
// where it has one. The kind select carries both mappings (data-condition-inputs, data-condition-help),
// written by ConditionForm from the kinds of condition (rules/conditions).
(function() {
    function setVisible(el, visible) {
        if (el && !(el.querySelector && el.querySelector('.errorlist'))) {
            el.style.display = visible ? '' : 'none';
        }
    }

    // An input's help text: the kind's own (plain text) if it has one, otherwise the form's default.
    function updateHelp(select) {
        let help;
        try {
            help = JSON.parse(select.dataset.conditionHelp || '{}');
        } catch (e) {
            return;
        }
        const prefix = select.id.slice(0, -'kind'.length);
        const own = help[select.value] || {};
        const names = new Set(Object.values(help).flatMap((texts) => Object.keys(texts)));
        for (const name of names) {
            const box = document.getElementById(prefix + name + '_helptext');
            const text = box && box.firstElementChild;
            if (!text) {
                continue;
            }
            if (box.dataset.defaultHelp === undefined) {
                box.dataset.defaultHelp = text.innerHTML;
            }
            if (Object.prototype.hasOwnProperty.call(own, name)) {
                text.textContent = own[name];
            } else {
                text.innerHTML = box.dataset.defaultHelp;
            }
        }
    }

    function update(select) {
        updateHelp(select);
        const row = select.closest('.inline-related');
        let inputs;
        try {
            inputs = JSON.parse(select.dataset.conditionInputs);
        } catch (e) {
            return;
        }
        if (!row) {
            return;
        }
        const every = new Set(Object.values(inputs).flat());
        const shown = Object.prototype.hasOwnProperty.call(inputs, select.value) ? new Set(inputs[select.value]) : null;
        for (const name of every) {
            const visible = shown === null || shown.has(name);
            row.querySelectorAll('.fieldBox.field-' + name).forEach((box) => setVisible(box.parentElement, visible));
            row.querySelectorAll('.form-row.field-' + name).forEach((line) => {
                if (!line.querySelector('.form-multiline')) {
                    setVisible(line, visible);
                }
            });
        }
        // A line of several inputs disappears when all of them are hidden.
        row.querySelectorAll('.form-multiline').forEach((multi) => {
            const parts = Array.from(multi.children);
            const anyShown = parts.some((part) => part.style.display !== 'none');
            setVisible(multi.closest('.form-row'), anyShown);
        });
    }

    function updateAll() {
        document.querySelectorAll('select[data-condition-inputs]').forEach(update);
    }

    document.addEventListener('change', (event) => {
        if (event.target.matches && event.target.matches('select[data-condition-inputs]')) {
            update(event.target);
        }
    });
    document.addEventListener('formset:added', updateAll);
    window.addEventListener('load', updateAll);
})();
