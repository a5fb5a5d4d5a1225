// Sluice dashboard: progressive enhancement only. Every page works without
// this file; it adds copy buttons, confirmation prompts, the live debugger's
// short poll, hiding empty URL rows, loading a file of ids, and refreshing a delivery log that has
// pending deliveries. Served as a file: the CSP allows no inline script.
'use strict';

document.addEventListener('DOMContentLoaded', () => {
  // Copy buttons: <button data-copy="element-id" hidden>.
  for (const button of document.querySelectorAll('button[data-copy]')) {
    if (!navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener('click', async () => {
      const el = document.getElementById(button.dataset.copy);
      if (!el) return;
      try {
        await navigator.clipboard.writeText(el.textContent.trim());
        const label = button.textContent;
        button.textContent = 'Copied';
        setTimeout(() => { button.textContent = label; }, 2000);
      } catch {
        button.textContent = 'Copy failed: select the text';
      }
    });
  }

  // Forms that ask before doing something hard to undo.
  for (const form of document.querySelectorAll('form[data-confirm]')) {
    form.addEventListener('submit', (e) => {
      if (!window.confirm(form.dataset.confirm)) e.preventDefault();
    });
  }

  // New destination: show URL rows one at a time.
  const add = document.getElementById('add-url');
  if (add) {
    const rows = [...document.querySelectorAll('[data-url-row]')];
    const filled = (row) => [...row.querySelectorAll('input, textarea')]
      .some((f) => f.value.trim() !== '' || f.getAttribute('aria-invalid') === 'true');
    let shown = Math.max(1, rows.reduce((n, row, i) => (filled(row) ? i + 1 : n), 0));
    const update = () => {
      rows.forEach((row, i) => { row.hidden = i >= shown; });
      add.hidden = shown >= rows.length;
    };
    add.addEventListener('click', () => {
      shown += 1;
      update();
      rows[shown - 1].querySelector('input').focus();
    });
    update();
  }

  // A file of ids (one per line) loaded into the textarea it names, where
  // it can be checked before sending; the form itself stays a plain form.
  for (const input of document.querySelectorAll('input[type=file][data-fill]')) {
    const target = document.getElementById(input.dataset.fill);
    const wrap = input.closest('[hidden]');
    if (!target || !wrap) continue;
    wrap.hidden = false;
    input.addEventListener('change', async () => {
      const file = input.files && input.files[0];
      if (!file) return;
      target.value = (await file.text()).replace(/\r\n?/g, '\n');
      target.dispatchEvent(new Event('input'));
    });
  }

  // A field marked invalid by the server is unmarked once it is edited.
  for (const field of document.querySelectorAll('[aria-invalid="true"]')) {
    field.addEventListener('input', () => {
      field.removeAttribute('aria-invalid');
      const msg = document.getElementById(`${field.id}-error`);
      if (msg) msg.hidden = true;
    }, { once: true });
  }

  // Error summary: move focus to it so screen readers announce it.
  const errors = document.getElementById('errors');
  if (errors) errors.focus();

  // Live debugger: poll for newer calls and put them on top.
  const list = document.querySelector('ol[data-poll]');
  if (list) {
    // The words only: the status line also holds the Pause link.
    const status = document.getElementById('live-text') || document.getElementById('live-status');
    const poll = async () => {
      try {
        const sep = list.dataset.poll.includes('?') ? '&' : '?';
        const res = await fetch(`${list.dataset.poll}${sep}after=${encodeURIComponent(list.dataset.after)}`,
          { credentials: 'same-origin', headers: { accept: 'text/html' } });
        if (res.ok && res.headers.get('x-sluice-fragment') === '1') {
          if (res.headers.get('x-sluice-more') === '1' && !document.querySelector('details[open]')) {
            // A whole page arrived since the last poll: start from the newest.
            window.location.reload();
            return;
          }
          const html = await res.text();
          if (html.trim() !== '') {
            list.insertAdjacentHTML('afterbegin', html);
            const first = list.querySelector('li[data-seq]');
            if (first) list.dataset.after = first.dataset.seq;
            for (const li of list.querySelectorAll('li:not(.seen)')) li.classList.add('fresh', 'seen');
            const empty = document.getElementById('empty');
            if (empty) empty.remove();
          }
          if (status) status.textContent = 'Live: new calls appear at the top.';
        } else if (status) {
          status.textContent = 'Live updates paused: reload the page (signed out?).';
        }
      } catch {
        if (status) status.textContent = 'Live updates paused: the server did not answer.';
      }
      setTimeout(poll, 2000);
    };
    for (const li of list.querySelectorAll('li')) li.classList.add('seen');
    setTimeout(poll, 2000);
  }

  // Delivery log with pending deliveries, a running regulation: refresh until
  // they settle, unless
  // the user has opened something or focused a control.
  const pending = document.querySelector('[data-refresh]');
  if (pending) {
    setTimeout(() => {
      const busy = document.querySelector('details[open]')
        || (document.activeElement && document.activeElement !== document.body);
      if (!busy) window.location.reload();
    }, Number(pending.dataset.refresh));
  }
});
