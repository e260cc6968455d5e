// Logs: a live tail of the entity's /rosout entries with a severity filter and a search box.
// Rows are added, never redrawn: a selection or a copied line stays while the tail goes on.
import {get} from './api.js';
import {clear, errorBox, every, h, selectionIn} from './dom.js';

const LEVELS = ['debug', 'info', 'warning', 'error', 'fatal'];
const KEEP = 1000;
const SHOWN = 300;

export function renderLogs(el, ent) {
  const seen = new Map();  // key -> {entry, tr}
  const level = h('select', {name: 'severity'}, LEVELS.map((l) => h('option', {value: l}, l + ' and above')));
  const search = h('input', {type: 'search', name: 'search', placeholder: 'search messages and nodes'});
  const pause = h('input', {type: 'checkbox'});
  const count = h('span', {class: 'muted count'});
  const body = h('tbody', {});
  const empty = h('tr', {class: 'empty'}, h('td', {colspan: 4, class: 'muted'}, 'No entries at this level yet.'));
  const table = h('table', {class: 'logs'}, h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Severity'), h('th', {}, 'Node'), h('th', {}, 'Message'))), body);
  const err = h('div', {});
  clear(el, h('div', {class: 'row'}, 'Show ', level, ' ', search, h('label', {}, pause, ' pause'), ' ', count), err, table);
  const row = (e) => h('tr', {class: 'log log-' + e.severity, 'data-severity': e.severity},
    h('td', {class: 'mono'}, (e.timestamp || '').replace('T', ' ').slice(0, 23)), h('td', {}, e.severity),
    h('td', {class: 'mono'}, (e.context && e.context.node) || ''), h('td', {class: 'mono'}, e.message));
  const matches = (e) => {
    if (LEVELS.indexOf(e.severity) < LEVELS.indexOf(level.value)) return false;
    const q = search.value.trim().toLowerCase();
    return !q || String(e.message || '').toLowerCase().includes(q) || String((e.context && e.context.node) || '').toLowerCase().includes(q);
  };
  // Show or hide rows (no element is rebuilt); the newest SHOWN matching entries are visible.
  const apply = () => {
    let shown = 0;
    for (const tr of body.children) {
      const item = tr.entry;
      const on = item && matches(item) && shown < SHOWN;
      if (on) shown++;
      tr.hidden = !on;
    }
    empty.hidden = shown > 0;
    if (!empty.parentNode) body.append(empty);
    count.textContent = `${shown} shown of ${seen.size}`;
  };
  level.addEventListener('change', apply);
  search.addEventListener('input', apply);
  const stop = every(1000, async () => {
    if (pause.checked) return;
    try {
      const items = (await get(`${ent.path}/logs`)).items || [];
      const fresh = [];
      for (const e of items) {
        const key = e.id + '|' + e.timestamp;
        if (seen.has(key)) continue;
        const tr = row(e);
        tr.entry = e;
        seen.set(key, tr);
        fresh.push(tr);
      }
      err.replaceChildren();
      if (fresh.length) body.prepend(...fresh.reverse());  // newest first
      // trim the oldest, but never a row holding the person's selection
      while (seen.size > KEEP) {
        const [key, tr] = seen.entries().next().value;
        if (selectionIn(tr)) break;
        seen.delete(key);
        tr.remove();
      }
      apply();
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  });
  return stop;
}
