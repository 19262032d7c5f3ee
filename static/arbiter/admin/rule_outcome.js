'use strict';
// Add-rule page: the outcome list is grouped by decision point; offer only the chosen point's outcomes.
(function() {
    function filterOutcomes() {
        const point = document.getElementById('id_point');
        const outcome = document.getElementById('id_outcome');
        if (!point || !outcome || !outcome.querySelector('optgroup')) {
            return;
        }
        const chosen = point.selectedIndex >= 0 && point.value ? point.options[point.selectedIndex].text : null;
        outcome.querySelectorAll('optgroup').forEach((group) => {
            const match = chosen === null || group.label === chosen;
            group.hidden = !match;
            group.disabled = !match;
        });
        const selected = outcome.selectedOptions[0];
        if (selected && selected.parentElement.disabled) {
            outcome.value = '';
        }
    }

    document.addEventListener('change', (event) => {
        if (event.target.id === 'id_point') {
            filterOutcomes();
        }
    });
    window.addEventListener('load', filterOutcomes);
})();
