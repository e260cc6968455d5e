// Logs: a live tail of the entity's /rosout entries with a severity filter.
import {get} from './api.js';
import {clear, errorBox, every, h} from './dom.js';

const LEVELS = ['debug', 'info', 'warning', 'error', 'fatal'];
const KEEP = 1000;

export function renderLogs(el, ent) {
  const seen = new Map();
  const level = h('select', {name: 'severity'}, LEVELS.map((l) => h('option', {value: l}, l + ' and above')));
  const pause = h('input', {type: 'checkbox'});
  const table = h('table', {class: 'logs'});
  const err = h('div', {});
  clear(el, h('div', {class: 'row'}, 'Show ', level, h('label', {}, pause, ' pause')), err, table);
  const draw = () => {
    const min = LEVELS.indexOf(level.value);
    const rows = [...seen.values()].filter((e) => LEVELS.indexOf(e.severity) >= min).slice(-300).reverse();
    clear(table, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Severity'), h('th', {}, 'Node'), h('th', {}, 'Message')),
      rows.map((e) => h('tr', {class: 'log log-' + e.severity, 'data-severity': e.severity},
        h('td', {class: 'mono'}, (e.timestamp || '').replace('T', ' ').slice(0, 23)), h('td', {}, e.severity),
        h('td', {class: 'mono'}, (e.context && e.context.node) || ''), h('td', {class: 'mono'}, e.message))));
    if (!rows.length) table.append(h('tr', {}, h('td', {colspan: 4, class: 'muted'}, 'No entries at this level yet.')));
  };
  level.addEventListener('change', draw);
  const stop = every(1000, async () => {
    if (pause.checked) return;
    try {
      const items = (await get(`${ent.path}/logs`)).items || [];
      for (const e of items) seen.set(e.id + '|' + e.timestamp, e);
      while (seen.size > KEEP) seen.delete(seen.keys().next().value);
      err.replaceChildren();
      draw();
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  });
  return stop;
}
