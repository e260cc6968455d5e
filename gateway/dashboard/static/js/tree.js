// The entity tree: areas > components > apps when a manifest gives areas; components > apps;
// functions > apps; apps on no component. Unavailable entities are greyed.
import {get, vx} from './api.js';
import {clear, errorBox, h} from './dom.js';

export const entityIndex = {apps: [], components: [], areas: [], functions: []};
let treeEl = null;
let selected = null;

function link(type, e) {
  const x = vx(e);
  const off = x.available === false || x.is_online === false;
  const a = h('a', {href: `#/e/${type}/${encodeURIComponent(e.id)}`, 'data-entity': `${type}/${e.id}`,
    title: off ? `${e.id}: not available` : e.id}, h('span', {class: 'kind'}, type.slice(0, -1)), e.name || e.id);
  return h('li', {class: off ? 'unavailable' : ''}, a);
}

async function children(path) {
  try { return (await get(path)).items || []; } catch (e) { return null; }
}

export async function loadTree(el, filter) {
  treeEl = el;
  try {
    const [areas, components, apps, functions] = await Promise.all(
      ['/areas', '/components', '/apps', '/functions'].map((p) => get(p).then((b) => b.items || [])));
    Object.assign(entityIndex, {areas, components, apps, functions});
    const hosts = new Map(await Promise.all(components.map(async (c) =>
      [c.id, await children(`/components/${encodeURIComponent(c.id)}/hosts`)])));
    const placed = new Set();
    const compNode = (c) => {
      const li = link('components', c);
      const kids = hosts.get(c.id) || [];
      kids.forEach((a) => placed.add(a.id));
      if (kids.length) li.append(h('ul', {}, kids.map((a) => link('apps', apps.find((x) => x.id === a.id) || a))));
      return li;
    };
    const sections = [];
    const inArea = new Set();
    if (areas.length) {
      const areaNodes = await Promise.all(areas.map(async (a) => {
        const comps = (await children(`/areas/${encodeURIComponent(a.id)}/components`)) || [];
        comps.forEach((c) => inArea.add(c.id));
        const li = link('areas', a);
        if (comps.length) li.append(h('ul', {}, comps.map((c) => compNode(components.find((x) => x.id === c.id) || c))));
        return li;
      }));
      sections.push(h('li', {class: 'sec'}, 'Areas'), ...areaNodes);
    }
    const loose = components.filter((c) => !inArea.has(c.id));
    if (loose.length) sections.push(h('li', {class: 'sec'}, 'Components'), ...loose.map(compNode));
    components.filter((c) => inArea.has(c.id)).forEach((c) => (hosts.get(c.id) || []).forEach((a) => placed.add(a.id)));
    const unplaced = apps.filter((a) => !placed.has(a.id));
    if (unplaced.length) sections.push(h('li', {class: 'sec'}, 'Apps'), ...unplaced.map((a) => link('apps', a)));
    if (functions.length) {
      const fnNodes = await Promise.all(functions.map(async (f) => {
        const li = link('functions', f);
        const kids = (await children(`/functions/${encodeURIComponent(f.id)}/hosts`)) || [];
        if (kids.length) li.append(h('ul', {}, kids.map((a) => link('apps', apps.find((x) => x.id === a.id) || a))));
        return li;
      }));
      sections.push(h('li', {class: 'sec'}, 'Functions'), ...fnNodes);
    }
    clear(el, h('div', {class: 'tree'}, h('ul', {}, sections)));
    if (!sections.length) el.append(h('p', {class: 'muted'}, 'No entities discovered yet.'));
    filter.addEventListener('input', () => applyFilter(filter.value));
    applyFilter(filter.value);
    if (selected) selectInTree(...selected);
  } catch (e) {
    clear(el, errorBox(e));
  }
}

function applyFilter(text) {
  const q = text.trim().toLowerCase();
  for (const li of treeEl.querySelectorAll('li:not(.sec)')) {
    const own = li.firstElementChild ? li.firstElementChild.textContent.toLowerCase() : '';
    const any = !q || own.includes(q) || [...li.querySelectorAll('a')].some((a) => a.textContent.toLowerCase().includes(q));
    li.hidden = !any;
  }
}

export function selectInTree(type, id) {
  selected = type ? [type, id] : null;
  if (!treeEl) return;
  for (const a of treeEl.querySelectorAll('a.sel')) a.classList.remove('sel');
  if (type) for (const a of treeEl.querySelectorAll('a[data-entity]')) if (a.dataset.entity === `${type}/${id}`) a.classList.add('sel');
}

// The app whose node reported a fault (by node name and gateway), for links from fleet lists.
export function entityOfFault(fault) {
  const x = vx(fault);
  const node = String(fault.source || (x.reporting_sources || [])[0] || '');
  const name = node.split('/').pop();
  const peer = x.peer || 'local';
  const apps = entityIndex.apps.filter((a) => a.name === name || a.id === name);
  const match = apps.find((a) => (vx(a).contributors || ['local']).includes(peer)) || apps[0];
  if (match) return ['apps', match.id];
  const comp = entityIndex.components[0];
  return comp ? ['components', comp.id] : null;
}
