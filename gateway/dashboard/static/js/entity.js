// One entity: its header and a tab per collection it serves.
import {ctx, get, vx} from './api.js';
import {clear, errorBox, h} from './dom.js';
import {renderData} from './data.js';
import {renderOperations} from './ops.js';
import {renderConfigurations} from './config.js';
import {renderFaults} from './faults.js';
import {renderLogs} from './logs.js';
import {renderBulk} from './bulk.js';
import {renderLocks} from './locks.js';
import {renderStatus} from './lifecycle.js';
import {renderScripts} from './scripts.js';
import {renderPush} from './pushlist.js';
import {renderGraph, graphPath} from './graph.js';

const TABS = [
  ['data', 'Data', renderData],
  ['operations', 'Operations', renderOperations],
  ['configurations', 'Configurations', renderConfigurations],
  ['faults', 'Faults', renderFaults],
  ['logs', 'Logs', renderLogs],
  ['bulk-data', 'Bulk data', renderBulk],
  ['locks', 'Locks', renderLocks],
  ['status', 'Status', renderStatus],
  ['scripts', 'Scripts', renderScripts],
  ['cyclic-subscriptions', 'Subscriptions', renderPush],
];

export function renderEntity(main, type, id, tab, item) {
  let stop = null;
  let gone = false;
  const path = `/${type}/${encodeURIComponent(id)}`;
  clear(main, h('p', {class: 'muted'}, `Loading ${type} ${id}…`));
  (async () => {
    let detail;
    try {
      detail = await get(path);
    } catch (e) {
      if (!gone) clear(main, h('h2', {}, `${type.slice(0, -1)} ${id}`), errorBox(e));
      return;
    }
    if (gone) return;
    const caps = new Set((detail.capabilities || []).map((c) => c.name));
    const tabs = TABS.filter(([k]) => caps.has(k));
    if (type === 'functions' && hasGraphRoute()) {
      try {
        await get(graphPath(id));  // shown only where the graph route answers 200
        tabs.push(['graph', 'Graph', renderGraph]);
      } catch (e) { /* 501 or 404: no graph for this function */ }
    }
    if (gone) return;
    const current = tabs.find(([k]) => k === tab) || tabs[0];
    const x = vx(detail);
    const off = x.available === false || x.is_online === false;
    const body = h('div', {id: 'panel'});
    clear(main,
      h('h2', {class: off ? 'unavailable' : ''}, h('span', {class: 'muted'}, type.slice(0, -1) + ' '), detail.name || id,
        off ? h('small', {}, ' (not available)') : null),
      h('div', {class: 'muted'}, x.ros2 && x.ros2.node ? h('span', {class: 'mono'}, x.ros2.node + '  ') : null,
        detail.description || '', x.contributors ? ` gateways: ${x.contributors.join(', ')}` : ''),
      nameplate(x.identity),
      h('nav', {class: 'tabs'}, tabs.map(([k, label]) =>
        h('a', {href: `#/e/${type}/${encodeURIComponent(id)}/${k}`, class: current && current[0] === k ? 'sel' : '', 'data-tab': k}, label))),
      body);
    if (!current) { body.append(h('p', {class: 'muted'}, 'This entity serves no collections.')); return; }
    stop = current[2](body, {type, id, path, detail}, item);
  })();
  return () => { gone = true; if (stop) stop(); };
}

// A component's nameplate (manifest or inventory: x-vendor.identity), where it has one.
const PLATE = [['manufacturer', 'Manufacturer'], ['model', 'Model'], ['serialNumber', 'Serial number'],
  ['hardwareRevision', 'Hardware revision'], ['firmwareVersion', 'Firmware'], ['softwareVersion', 'Software']];

function nameplate(identity) {
  if (!identity || typeof identity !== 'object') return null;
  const rows = PLATE.filter(([k]) => identity[k] != null && identity[k] !== '').map(([k, label]) =>
    h('tr', {}, h('th', {}, label), h('td', {class: 'mono', 'data-field': k}, String(identity[k]))));
  for (const [k, v] of Object.entries(identity.extra || {})) rows.push(h('tr', {}, h('th', {}, k), h('td', {class: 'mono'}, String(v))));
  return rows.length ? h('table', {class: 'nameplate box'}, rows) : null;
}

// The root lists built routes only (features answering 501 are left out).
function hasGraphRoute() {
  const want = `GET /api/v1/functions/{function_id}/${ctx.xv}-graph`;
  return (ctx.root && ctx.root.endpoints || []).includes(want);
}
