// The entity tree: areas > components > apps when a manifest gives areas; components > apps;
// functions > apps; apps on no component. Unavailable entities are greyed.
import {get, vx} from './api.js';
import {clear, errorBox, every, h} from './dom.js';

const TREE_REFRESH_MS = 5000;

export const entityIndex = {apps: [], components: [], areas: [], functions: []};
let treeEl = null;
let selected = null;

// The robots (peers of a primary) an app runs on; none on a robot's own gateway.
export function robotsOf(e) {
  return (vx(e).contributors || []).filter((c) => c !== 'local');
}

function link(type, e) {
  const x = vx(e);
  const off = x.available === false || x.is_online === false;
  const a = h('a', {href: `#/e/${type}/${encodeURIComponent(e.id)}`, 'data-entity': `${type}/${e.id}`,
    title: off ? `${e.id}: not available` : e.id}, h('span', {class: 'kind'}, type.slice(0, -1)), e.name || e.id,
    type === 'apps' && robotsOf(e).length ? h('span', {class: 'robot-tag muted'}, ` · ${robotsOf(e).join(', ')}`) : null);
  return h('li', {class: off ? 'unavailable' : ''}, a);
}

async function children(path) {
  try { return (await get(path)).items || []; } catch (e) { return null; }
}

// Build the tree now and again every few seconds; redrawn only when the answer changed.
export function loadTree(el, filter) {
  treeEl = el;
  filter.addEventListener('input', () => applyFilter(filter.value));
  let last = null;
  every(TREE_REFRESH_MS, async () => {
    try {
      const model = await fetchTree();
      const sig = JSON.stringify(model);
      if (sig === last) return;
      last = sig;
      drawTree(el, model);
      applyFilter(filter.value);
      if (selected) selectInTree(...selected);
    } catch (e) {
      if (last === null) clear(el, errorBox(e));
    }
  });
}

// The top-level lists hold no subareas or subcomponents: walk them level by level.
async function withNested(list, type, sub) {
  const all = [...list];
  let level = list;
  while (level.length) {
    const found = (await Promise.all(level.map((e) =>
      children(`/${type}/${encodeURIComponent(e.id)}/${sub}`)))).flat().filter(Boolean);
    level = found.filter((k, i) => !all.some((x) => x.id === k.id) &&
      found.findIndex((x) => x.id === k.id) === i);
    all.push(...level);
  }
  return all;
}

async function fetchTree() {
  const [top, topComponents, apps, functions] = await Promise.all(
    ['/areas', '/components', '/apps', '/functions'].map((p) => get(p).then((b) => b.items || [])));
  const [areas, components] = await Promise.all([withNested(top, 'areas', 'subareas'),
    withNested(topComponents, 'components', 'subcomponents')]);
  const kids = async (list, sub) => Object.fromEntries(await Promise.all(list.map(async (e) =>
    [e.id, ((await children(`/${sub[0]}/${encodeURIComponent(e.id)}/${sub[1]}`)) || []).map((x) => x.id)])));
  const [hosts, areaComps, fnHosts, subAreas, subComps] = await Promise.all([
    kids(components, ['components', 'hosts']), kids(areas, ['areas', 'components']),
    kids(functions, ['functions', 'hosts']), kids(areas, ['areas', 'subareas']),
    kids(components, ['components', 'subcomponents'])]);
  Object.assign(entityIndex, {areas, components, apps, functions});
  return {areas, components, apps, functions, hosts, areaComps, fnHosts, subAreas, subComps};
}

// The tree of a fetched model: areas > subareas > components > subcomponents > apps.
export function drawTree(el, m) {
  const byId = (list, id) => list.find((x) => x.id === id) || {id, name: id};
  const placed = new Set();
  const shown = new Set();  // each component once, even if a model names it twice
  const compNode = (c, seen = new Set()) => {
    shown.add(c.id);
    const li = link('components', c);
    const subs = (m.subComps[c.id] || []).filter((id) => !seen.has(id) && id !== c.id && !shown.has(id));
    const ids = m.hosts[c.id] || [];
    ids.forEach((id) => placed.add(id));
    const kids = [...subs.map((id) => compNode(byId(m.components, id), new Set([...seen, c.id]))),
      ...ids.map((id) => link('apps', byId(m.apps, id)))];
    if (kids.length) li.append(h('ul', {}, kids));
    return li;
  };
  const areaNode = (a, seen = new Set()) => {
    const li = link('areas', a);
    const subs = (m.subAreas[a.id] || []).filter((id) => !seen.has(id) && id !== a.id);
    const comps = m.areaComps[a.id] || [];
    // a subcomponent whose parent is in the same area is drawn under its parent only
    const own = comps.filter((id) => !comps.some((p) => p !== id && (m.subComps[p] || []).includes(id)));
    // each component is drawn once, where it is met first (a subarea's module is not drawn
    // again under its parent component elsewhere)
    const kids = [...subs.map((id) => areaNode(byId(m.areas, id), new Set([...seen, a.id]))),
      ...own.filter((id) => !shown.has(id)).map((id) => compNode(byId(m.components, id)))];
    if (kids.length) li.append(h('ul', {}, kids));
    return li;
  };
  const sections = [];
  // A fleet (apps relayed from robots): a robot level first, each robot with its own apps.
  const robots = [...new Set(m.apps.flatMap(robotsOf))].sort();
  if (robots.length) {
    sections.push(h('li', {class: 'sec'}, 'Robots'), ...robots.map((r) => {
      const mine = m.apps.filter((a) => robotsOf(a).includes(r));
      return h('li', {class: 'robot', 'data-robot': r}, h('span', {class: 'robot-name'}, h('span', {class: 'kind'}, 'robot'), r),
        h('ul', {}, mine.map((a) => link('apps', a))));
    }));
  }
  const nestedAreas = new Set(Object.values(m.subAreas || {}).flat());
  const topAreas = m.areas.filter((a) => !nestedAreas.has(a.id));
  if (m.areas.length) sections.push(h('li', {class: 'sec'}, 'Areas'), ...(topAreas.length ? topAreas : m.areas).map((a) => areaNode(a)));
  const nestedComps = new Set(Object.values(m.subComps || {}).flat());
  const loose = m.components.filter((c) => !shown.has(c.id) && !nestedComps.has(c.id));
  if (loose.length) sections.push(h('li', {class: 'sec'}, 'Components'), ...loose.map((c) => compNode(c)));
  const unplaced = m.apps.filter((a) => !placed.has(a.id));
  if (unplaced.length) sections.push(h('li', {class: 'sec'}, 'Apps'), ...unplaced.map((a) => link('apps', a)));
  if (m.functions.length) {
    sections.push(h('li', {class: 'sec'}, 'Functions'), ...m.functions.map((f) => {
      const li = link('functions', f);
      const ids = m.fnHosts[f.id] || [];
      if (ids.length) li.append(h('ul', {}, ids.map((id) => link('apps', byId(m.apps, id)))));
      return li;
    }));
  }
  clear(el, sections.length ? h('div', {class: 'tree'}, h('ul', {}, sections)) : h('p', {class: 'muted'}, 'No entities discovered yet.'));
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
  const node = String(fault.source || (x.reporting_sources || fault.reporting_sources || [])[0] || '');
  const peer = x.peer || 'local';
  // A plugin entity's faults (e.g. the graph watchdog app) name it: /x-plugin/<plugin>/<type>/<id>.
  const plugin = /^\/x-plugin\/[^/]+\/(apps|components|areas|functions)\/(.+)$/.exec(node);
  if (plugin) {
    const [, kind, id] = plugin;
    const same = (entityIndex[kind] || []).filter((e) => e.id === id || e.name === id);
    const mine = same.find((e) => (vx(e).contributors || ['local']).includes(peer)) || same[0];
    return [kind, mine ? mine.id : id];
  }
  const name = node.split('/').pop();
  const apps = entityIndex.apps.filter((a) => a.name === name || a.id === name);
  const match = apps.find((a) => (vx(a).contributors || ['local']).includes(peer)) || apps[0];
  if (match) return ['apps', match.id];
  const comp = entityIndex.components[0];
  return comp ? ['components', comp.id] : null;
}
