'use strict';
// Rule page: in each condition row, show only the inputs its kind uses.
// The kind select carries the mapping (data-condition-inputs), written by ConditionForm.
(function() {
    function setVisible(el, visible) {
        if (el && !(el.querySelector && el.querySelector('.errorlist'))) {
            el.style.display = visible ? '' : 'none';
        }
    }

    function update(select) {
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
