// Data: each topic's newest value (cyclic subscriptions, polling where refused), sparklines, publish form.
import {api, enc, get, vx} from './api.js';
import {clear, describe, errorBox, every, h, pretty, selectionIn, setText} from './dom.js';
import {buildForm} from './form.js';
import {watch} from './pagestream.js';
import {History, numericArrays, numericLeaves, sparkline} from './spark.js';
import {Series, plotPanel, unitOf} from './plot.js';

const POLL_MS = 1000;
const MAX_POLLED = 24;
const SILENT_MS = 5000;  // ten missed frames of the page stream's 500 ms interval
const INTERVAL_MS = {fast: 50, normal: 200, slow: 500};
const PAGE_INTERVAL = 'slow';  // the page stream's interval (gateway/dashboard/page_watch.py)

export function renderData(el, ent) {
  const history = new History(60);
  const series = new Series();  // 10 minutes per numeric field, for the plot
  const plot = plotPanel(series);
  const redraw = setInterval(() => plot.update(), 1000);
  let stopPoll = () => {};
  let gone = false;
  const unwatch = [];
  clear(el, h('p', {class: 'muted'}, 'Loading data items…'));
  (async () => {
    let items;
    try { items = (await get(`${ent.path}/data`)).items || []; } catch (e) { clear(el, errorBox(e)); return; }
    if (gone) return;
    if (!items.length) { clear(el, h('p', {class: 'muted'}, 'No topics.')); return; }
    const rows = items.map((it) => dataRow(ent, it, history, series, plot));
    const mode = h('p', {class: 'mode muted', 'data-mode': 'starting'}, 'Live values: subscribing…');
    clear(el, mode, plot.el, h('table', {class: 'data'},
      h('tr', {}, h('th', {}, 'Topic'), h('th', {}, 'Type'), h('th', {}, 'Value'), h('th', {}, '')),
      rows.map((r) => r.tr)),
    items.length > MAX_POLLED ? h('p', {class: 'muted'}, `Live values for the first ${MAX_POLLED} topics; open a topic's entity for the rest.`) : null);
    const watched = rows.slice(0, MAX_POLLED);
    let reason = null;
    const showMode = () => {
      const live = watched.filter((r) => r.mode === 'sse').length;
      const polled = watched.length - live;
      const kind = !polled ? 'subscription' : live ? 'mixed' : 'polling';
      mode.dataset.mode = kind;
      clear(mode,
        live ? h('span', {class: 'pill live'}, 'cyclic subscription') : null,
        live ? ` ${live} topic${live > 1 ? 's' : ''} pushed every ${INTERVAL_MS[PAGE_INTERVAL]} ms over this page's one SSE stream. ` : null,
        polled ? h('span', {class: 'pill poll'}, 'polling') : null,
        polled ? ` ${polled} topic${polled > 1 ? 's' : ''} read every ${POLL_MS / 1000} s` : null,
        polled && reason ? h('span', {class: 'reason'}, ` (${reason})`) : null);
    };
    watched.forEach((r) => { r.setMode('poll'); r.refresh(); });  // a first value (or 'no publisher') at once
    // Every watched topic rides the page's one stream; a refused one (or a stream that
    // cannot open, e.g. 503 at sse.max_clients) is polled instead.
    for (const row of watched) {
      const onSample = (data) => {
        row.pushedAt = Date.now();
        if (row.mode === 'poll' && row.silent) { row.silent = false; row.setMode('sse'); showMode(); }
        row.show(data);
      };
      unwatch.push(watch(`${ent.path}/data/${enc(row.item.id)}`, onSample, (state, err) => {
        if (gone) return;
        row.silent = false;
        if (state === 'live') row.pushedAt = Date.now();  // accepted: frames are due from now
        row.setMode(state === 'live' ? 'sse' : 'poll');
        if (state !== 'live' && err) reason = describe(err);
        if (state === 'live' && watched.every((r) => r.mode === 'sse')) reason = null;
        showMode();
      }));
    }
    // The mode line says "subscribing…" until the stream answers (live, refused or down).
    // A topic accepted but silent (no frame for SILENT_MS) is polled until frames come: it is
    // never shown "live" with a value that does not move.
    stopPoll = every(POLL_MS, () => {
      const now = Date.now();
      for (const r of watched) {
        if (r.mode === 'sse' && now - (r.pushedAt || now) > SILENT_MS) {
          r.silent = true;
          r.setMode('poll');
          reason = `no pushed value for ${SILENT_MS / 1000} s: read instead`;
          showMode();
        }
      }
      return Promise.all(watched.filter((r) => r.mode !== 'sse').map((r) => r.refresh()));
    });
  })();
  return () => { gone = true; stopPoll(); clearInterval(redraw); plot.destroy(); for (const off of unwatch) off(); };
}

// A row's value cell is built once per shape of message and then updated in place: an open
// "message" stays open, and nothing is redrawn while text in the cell is selected.
function dataRow(ent, item, history, series, plot) {
  const x = vx(item);
  const ros = x.ros2 || {};
  const valueCell = h('td', {class: 'value'}, h('span', {class: 'muted'}, '…'));
  const formCell = h('div', {});
  const publish = h('button', {type: 'button', onclick: () => togglePublish(ent, item, formCell)}, 'Publish…');
  const badge = h('span', {class: 'pill'}, '');
  const tr = h('tr', {'data-topic': item.id},
    h('td', {class: 'mono'}, item.id, h('div', {class: 'muted'}, ros.direction || '', ' ', badge), formCell),
    h('td', {class: 'mono'}, ros.type || ''),
    valueCell,
    h('td', {}, publish));
  const pre = h('pre', {});
  const details = h('details', {}, h('summary', {}, 'message'), pre);
  let shape = null, parts = null;
  const build = (leaves, texts, arrays) => {
    parts = {nums: [], sparks: [], texts: [], arrays: []};
    clear(valueCell,
      leaves.slice(0, 8).map(([k, , bool]) => {
        const num = h('span', {class: 'num', 'data-field': k});
        const spark = h('span', {class: 'sparkbox'});
        parts.nums.push(num);
        parts.sparks.push(spark);
        const key = item.id + '|' + k;
        const name = h('span', {class: 'muted plot-field' + (plot.has(key) ? ' plotted' : ''), 'data-plot': k, title: 'plot this field',
          onclick: () => name.classList.toggle('plotted', plot.toggle(key, `${item.id.split('/').pop()} ${k}`, unitOf(ros.type, k)))}, k + ' ');
        return h('div', {class: 'leaf'}, name, num, ' ', spark);
      }),
      leaves.length > 8 ? h('div', {class: 'muted'}, `+${leaves.length - 8} more numeric fields`) : null,
      texts.map(([k]) => { const t = h('span', {class: 'mono', 'data-field': k}); parts.texts.push(t); return h('div', {class: 'leaf'}, h('span', {class: 'muted'}, k + ' '), t); }),
      arrays.map(([k, v]) => { const a = h('span', {class: 'sparkbox'}); parts.arrays.push(a); return h('div', {class: 'leaf'}, h('span', {class: 'muted'}, `${k} (${v.length}) `), a); }),
      details);
  };
  const show = (data) => {
    const leaves = numericLeaves(data);
    const texts = textLeaves(data).slice(0, 4);
    const arrays = numericArrays(data).slice(0, 2);
    leaves.slice(0, 8).forEach(([k, v]) => { history.push(item.id + '|' + k, v); series.push(item.id + '|' + k, v); });
    // While the person selects text in the cell, its text stays still (the charts move on).
    const still = selectionIn(valueCell);
    const next = JSON.stringify([leaves.slice(0, 8).map((l) => l[0]), leaves.length, texts.map((t) => t[0]), arrays.map((a) => a[0])]);
    if (next !== shape || !valueCell.contains(details)) {
      if (still) return;
      shape = next;
      build(leaves, texts, arrays);
    }
    leaves.slice(0, 8).forEach(([k, v, bool], i) => {
      if (!still) setText(parts.nums[i], bool ? String(Boolean(v)) : fmt(v));
      parts.sparks[i].replaceChildren(sparkline(history.series.get(item.id + '|' + k) || []));
    });
    arrays.forEach(([, v], i) => parts.arrays[i].replaceChildren(sparkline(v.map(Number), 240, 28)));
    if (still) return;
    texts.forEach(([, v], i) => setText(parts.texts[i], v));
    setText(pre, pretty(data, ''));
  };
  const note = (node) => { if (!selectionIn(valueCell)) { shape = null; clear(valueCell, node); } };
  const refresh = async () => {
    try {
      const r = await get(`${ent.path}/data/${enc(item.id)}`);
      const rx = vx(r);
      if (rx.status && rx.status !== 'data') {
        note(h('span', {class: 'muted'}, rx.publisher_count === 0 ? 'no publisher' : 'no sample yet'));
        return;
      }
      show(r.data);
    } catch (e) {
      note(errorBox(e));
    }
  };
  const row = {tr, item, refresh, show, mode: 'poll'};
  row.setMode = (m) => {
    row.mode = m;
    tr.dataset.mode = m;
    badge.className = 'pill ' + (m === 'sse' ? 'live' : 'poll');
    badge.textContent = m === 'sse' ? 'live' : 'polled';
  };
  return row;
}

function fmt(v) {
  return Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+$/, '');
}

function togglePublish(ent, item, cell) {
  if (cell.firstChild) { clear(cell); return; }
  const info = vx(item).type_info || {};
  const form = buildForm(info.schema, info.default_value);
  const out = h('div', {});
  const send = async (e) => {
    e.preventDefault();
    clear(out);
    try {
      const body = form.value();
      await api('PUT', `${ent.path}/data/${enc(item.id)}`, {body});
      out.append(h('span', {class: 'ok'}, 'Published.'));
    } catch (x) {
      out.append(errorBox(x));
    }
  };
  cell.append(h('form', {class: 'box publish', onsubmit: send}, form.el, h('button', {type: 'submit', class: 'primary'}, 'Publish'), out));
}

// String leaves as [path, text] (short ones: enums, states, frame ids are left to the JSON).
function textLeaves(value, prefix = '', out = []) {
  if (typeof value === 'string') { if (value.length <= 80) out.push([prefix || 'value', JSON.stringify(value)]); }
  else if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) if (k !== 'header') textLeaves(v, prefix ? `${prefix}.${k}` : k, out);
  }
  return out;
}
