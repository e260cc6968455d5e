// Faults: the entity's list, and a fault's detail with freeze frames and its recordings.
import {BASE, api, ctx, download, enc, get, saveBlob, vx} from './api.js';
import {bytes, clear, errorBox, every, h, json, patchChildren, sevBadge, time} from './dom.js';
import {numericArrays, sparkline} from './spark.js';
import {isPassed, lastTime, messageOf, severityOf, sourceOf} from './faultshape.js';
import {statusPill} from './fleet.js';

const LABELS = {0: 'INFO', 1: 'WARN', 2: 'ERROR', 3: 'CRITICAL'};

export function renderFaults(el, ent, code) {
  if (code) return renderDetail(el, ent, code);
  const list = h('div', {}, h('p', {class: 'muted'}, 'Loading faults…'));
  const showCleared = h('input', {type: 'checkbox'});
  clear(el, h('label', {class: 'row muted'}, showCleared, 'show cleared'), list);
  const load = async () => {
    try {
      const q = showCleared.checked ? '?status=all' : '';
      const items = (await get(`${ent.path}/faults${q}`)).items || [];
      const box = h('div', {});
      drawList(box, ent, items);
      patchChildren(list, [...box.childNodes]);  // unchanged rows stay (and a selection in them)
    } catch (e) {
      clear(list, errorBox(e));
    }
  };
  showCleared.addEventListener('change', load);
  return every(3000, load);
}

function drawList(el, ent, items) {
  if (!items.length) { clear(el, h('p', {class: 'ok'}, 'No faults.')); return; }
  clear(el, h('table', {class: 'faults'},
    h('tr', {}, h('th', {}, 'Severity'), h('th', {}, 'Code'), h('th', {}, 'Message'), h('th', {}, 'Status'), h('th', {}, 'Count'), h('th', {}, 'Last')),
    items.map((f) => {
      const href = `#/e/${ent.type}/${encodeURIComponent(ent.id)}/faults/${encodeURIComponent(f.fault_code)}`;
      return h('tr', {class: 'click' + (isPassed(f) ? ' passed' : ''), 'data-fault': f.fault_code, onclick: () => { location.hash = href; }},
        h('td', {}, sevBadge(severityOf(f))), h('td', {class: 'mono'}, h('a', {href}, f.fault_code)), h('td', {class: 'message'}, messageOf(f)),
        h('td', {}, statusPill(f)), h('td', {class: 'num'}, vx(f).occurrence_count ?? f.occurrence_count ?? ''), h('td', {}, time(lastTime(f))));
    })));
}

function renderDetail(el, ent, code) {
  let gone = false;
  const back = h('a', {href: `#/e/${ent.type}/${encodeURIComponent(ent.id)}/faults`}, '← all faults');
  clear(el, back, h('p', {class: 'muted'}, `Loading ${code}…`));
  (async () => {
    let d;
    try { d = await get(`${ent.path}/faults/${enc(code)}`); } catch (e) { if (!gone) clear(el, back, errorBox(e)); return; }
    if (gone) return;
    const item = d.item || {};
    const x = vx(d);
    const env = d.environment_data || {};
    const ext = env.extended_data_records || {};
    const snaps = env.snapshots || [];
    const frames = snaps.filter((s) => s.type === 'freeze_frame');
    const bags = snaps.filter((s) => s.type === 'rosbag');
    const msg = h('div', {});
    const clearBtn = h('button', {type: 'button', class: 'danger', onclick: async () => {
      try { await api('DELETE', `${ent.path}/faults/${enc(code)}`); location.hash = back.getAttribute('href'); } catch (e) { msg.replaceChildren(errorBox(e)); }
    }}, 'Clear fault');
    const st = item.status || {};
    clear(el, back,
      h('div', {class: 'box fault-detail', 'data-fault': item.code},
        h('div', {class: 'row'}, sevBadge(x.severity_label || LABELS[item.severity]), h('strong', {class: 'mono'}, item.code), h('span', {class: 'pill'}, st.aggregatedStatus || x.status || ''), clearBtn),
        h('p', {class: 'message'}, item.fault_name),
        h('table', {},
          row('Status', `${x.status || ''}  testFailed=${st.testFailed} confirmedDTC=${st.confirmedDTC} pendingDTC=${st.pendingDTC}`),
          row('Occurrences', x.occurrence_count), row('Reported by', (x.reporting_sources || []).map((src) => sourceOf({source: src})).join(', ')),
          row('First', ext.first_occurrence), row('Last', ext.last_occurrence),
          x.confirmed_at ? row('Confirmed', x.confirmed_at) : null, x.cleared_at ? row('Cleared', x.cleared_at) : null),
        msg),
      h('h3', {}, `Recordings (${bags.length})`),
      bags.length ? bags.map(recording) : h('p', {class: 'muted'}, 'No recording (the black-box recorder is off or kept none for this fault).'),
      h('h3', {}, `Freeze frames (${frames.length})`),
      frames.length ? frames.map(frame) : h('p', {class: 'muted'}, 'No freeze frames were captured.'));
  })();
  return () => { gone = true; };
}

function row(k, v) {
  return h('tr', {}, h('th', {}, k), h('td', {class: 'mono'}, v == null ? '' : String(v)));
}

function frame(s) {
  const fx = vx(s);
  const arrays = numericArrays(s.data);
  return h('details', {class: 'frame', open: true},
    h('summary', {}, h('span', {class: 'mono'}, s.name), ' ', h('span', {class: 'muted'}, `${fx.message_type || ''} captured ${fx.captured_at || ''}`)),
    arrays.slice(0, 3).map(([k, v]) => h('div', {}, h('span', {class: 'muted'}, `${k} (${v.length}) `), sparkline(v.map(Number), 360, 40))),
    json(s.data));
}

function recording(b) {
  const url = new URL(BASE + b.bulk_data_uri, location.origin).href;
  const auth = ctx.auth && ctx.auth.enabled ? ' --token "$TOKEN"' : '';
  const cmd = `diag-gateway bag pull ${url}${auth}`;
  const progress = h('progress', {max: 1, value: 0, hidden: true});
  const msg = h('span', {});
  const dl = h('button', {type: 'button', class: 'primary download', onclick: async () => {
    dl.disabled = true;
    progress.hidden = false;
    msg.replaceChildren();
    try {
      const got = await download(b.bulk_data_uri, (n, total) => { progress.max = total || b.size_bytes || 1; progress.value = n; });
      saveBlob(got.blob, got.name);
      msg.replaceChildren(h('span', {class: 'ok downloaded'}, `Downloaded ${got.name} (${bytes(got.size)})`));
    } catch (e) {
      msg.replaceChildren(errorBox(e));
    } finally {
      dl.disabled = false;
    }
  }}, 'Download');
  const code = h('code', {class: 'pull'}, cmd);
  const copy = h('button', {type: 'button', onclick: () => copyText(cmd, copy)}, 'Copy');
  return h('div', {class: 'box recording', 'data-recording': b.name},
    h('div', {class: 'row'}, h('strong', {class: 'mono'}, b.name), h('span', {class: 'size', 'data-bytes': b.size_bytes}, bytes(b.size_bytes)),
      h('span', {class: 'muted'}, `${b.format}, ${b.duration_sec} s`), dl, progress, msg),
    h('div', {class: 'cmd'}, code, copy));
}

async function copyText(text, btn) {
  try {
    await navigator.clipboard.writeText(text);
    btn.textContent = 'Copied';
  } catch (e) {
    btn.textContent = 'Select and copy';
  }
}
