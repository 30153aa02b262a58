/*! LiveList drag to reorder: an element with data-drag-action="TYPE" inside a cell is a handle; dropping it
 * on another cell (or section) posts {"type": TYPE, "cell": KEY, "after": KEY or "", "section": KEY} to the
 * list's actions route with the page's CSRF token. The server reorders; the change comes back as moves. */
(() => {
  'use strict';
  let dragged = null;
  const csrf = () => (document.querySelector('meta[name="livelist-csrf"]') || {}).content;
  document.addEventListener('dragstart', e => {
    const handle = e.target.closest && e.target.closest('[data-drag-action]');
    const cell = handle && handle.closest('[data-cell]');
    if (!cell) return;
    dragged = { action: handle.dataset.dragAction, cell: cell.dataset.cell, root: cell.closest('[data-list]') };
    e.dataTransfer.effectAllowed = 'move';
    e.dataTransfer.setData('text/plain', dragged.cell);
  });
  document.addEventListener('dragover', e => {
    if (dragged && e.target.closest && e.target.closest('[data-section]')) e.preventDefault();
  });
  document.addEventListener('drop', e => {
    const section = dragged && e.target.closest && e.target.closest('[data-section]');
    if (!section || !csrf()) return;
    e.preventDefault();
    const target = e.target.closest('[data-cell]');
    let after = '';
    if (target) {
      const box = target.getBoundingClientRect();
      const previous = e.clientY > box.top + box.height / 2 ? target : target.previousElementSibling;
      after = previous && previous.dataset.cell !== undefined ? previous.dataset.cell : '';
    }
    const { action, cell, root } = dragged;
    dragged = null;
    if (after === cell) return;
    fetch('/lists/' + encodeURIComponent(root.dataset.list) + '/actions', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf() },
      body: JSON.stringify({ type: action, cell, after, section: section.dataset.section })
    });
  });
  document.addEventListener('dragend', () => { dragged = null; });
})();
