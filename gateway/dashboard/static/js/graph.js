// The function graph (x-vendor-graph): nodes in columns by topic flow, edges with rates.
import {ctx, get} from './api.js';
import {clear, describe, errorBox, every, h, svg} from './dom.js';
import {ellipsize, placeLabels} from './labels.js';
import {watch} from './pagestream.js';

export function graphPath(id) {
  return `/functions/${encodeURIComponent(id)}/${ctx.xv}-graph`;
}

// Pushed over the page's one stream (a cyclic subscription of the graph); read every 2 s
// while the gateway refuses it or the stream is down.
export function renderGraph(el, ent) {
  const mode = h('p', {class: 'mode muted', 'data-mode': 'starting'}, 'Subscribing…');
  const view = h('div', {});
  clear(el, mode, view);
  let last = null, findings = [];
  const show = (body) => { last = (body && body[`${ctx.xv}-graph`]) || body; drawGraph(view, last, findings); };  // the route wraps it
  let gone = false, stopPoll = null;
  // The graph watchdog's QoS findings (when the plugin runs) mark their edges.
  const stopWatchdog = (ctx.root && (ctx.root.endpoints || []).some((p) => p.endsWith(`/${ctx.xv}-watchdog`))) ? every(3000, async () => {
    try {
      const w = (await get(`/${ctx.xv}-watchdog`))[`${ctx.xv}-watchdog`] || {};
      findings = Object.values(w.detectors || {}).flatMap((d) => d.findings || []);
      if (last) drawGraph(view, last, findings);
    } catch (e) { findings = []; }
  }) : () => {};
  const poll = (err) => {
    if (gone) return;
    mode.dataset.mode = 'polling';
    clear(mode, h('span', {class: 'pill poll'}, 'polling'), ` every 2 s${err ? ` (${describe(err)})` : ''}`);
    if (stopPoll) return;
    stopPoll = every(2000, async () => {
      try { show(await get(graphPath(ent.id))); } catch (e) { clear(view, errorBox(e)); }
    });
  };
  const off = watch(graphPath(ent.id), show, (state, err) => {
    if (gone) return;
    if (state !== 'live') { poll(err); return; }
    if (stopPoll) { stopPoll(); stopPoll = null; }
    mode.dataset.mode = 'subscription';
    clear(mode, h('span', {class: 'pill live'}, 'cyclic subscription'), ' pushed every 500 ms over this page\'s one SSE stream');
  });
  return () => { gone = true; off(); stopWatchdog(); if (stopPoll) stopPoll(); };
}

// Column of each node: longest path from a source (cycles cut by a visit bound).
export function layers(nodes, edges) {
  const col = new Map(nodes.map((n) => [n, 0]));
  for (let i = 0; i < nodes.length; i++) {
    let moved = false;
    for (const e of edges) {
      if (e.source === e.target || !col.has(e.source) || !col.has(e.target)) continue;
      if (col.get(e.target) < col.get(e.source) + 1 && col.get(e.source) + 1 < nodes.length) {
        col.set(e.target, col.get(e.source) + 1);
        moved = true;
      }
    }
    if (!moved) break;
  }
  return col;
}

// A watchdog finding's edge: its key is `<topic>|<subscriber node>` (GRAPH_QOS_MISMATCH).
function flagOf(findings, topic, target) {
  return findings.find((f) => {
    const [t, node] = String(f.key || '').split('|');
    return t === topic && node && node.split('/').pop() === target;
  });
}

export function drawGraph(el, g, findings = []) {
  const nodes = (g.nodes || []).map((n) => n.entity_id);
  const edges = g.edges || [];
  const topics = new Map((g.topics || []).map((t) => [t.topic_id, t.name]));
  const col = layers(nodes, edges);
  const byCol = new Map();
  for (const n of nodes) { const c = col.get(n); if (!byCol.has(c)) byCol.set(c, []); byCol.get(c).push(n); }
  const W = 170, H = 60, GAP = 260, pos = new Map();
  for (const [c, ns] of byCol) ns.forEach((n, i) => pos.set(n, [20 + c * (W + GAP), 20 + i * (H + 30)]));
  const width = 40 + Math.max(1, byCol.size) * (W + GAP) - GAP;
  const height = 40 + Math.max(1, ...[...byCol.values()].map((v) => v.length)) * (H + 30);
  const s = svg('svg', {width, height, viewBox: `0 0 ${width} ${height}`},
    svg('defs', {}, svg('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto'},
      svg('path', {d: 'M0,0 L10,5 L0,10 z', fill: '#8c959f'}))));
  const labels = [];  // drawn last, above the boxes
  const flagged = [];
  for (const e of edges) {
    const a = pos.get(e.source), b = pos.get(e.target);
    if (!a || !b) continue;
    const m = e.metrics || {};
    const x1 = a[0] + W, y1 = a[1] + H / 2, x2 = b[0], y2 = b[1] + H / 2;
    const name = topics.get(e.topic_id) || e.topic_id;
    const flag = flagOf(findings, name, e.target);
    if (flag) flagged.push(flag);
    const path = svg('path', {class: 'e ' + (m.metrics_status || '') + (flag ? ' flagged' : ''), 'data-topic': name, d: `M${x1},${y1} C${x1 + 40},${y1} ${x2 - 40},${y2} ${x2},${y2}`});
    if (flag) path.append(svg('title', {}, `${flag.code}: ${flag.message}`));
    s.append(path);
    const full = `${name}${m.frequency_hz != null ? ` ${Number(m.frequency_hz).toFixed(1)} Hz` : ''}${flag ? ' ⚠' : ''}`;
    labels.push({x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, full, text: ellipsize(full, Math.max(GAP, Math.abs(x2 - x1)) - 12), flag});
  }
  for (const n of g.nodes || []) {
    const [x, y] = pos.get(n.entity_id);
    s.append(svg('g', {class: 'n ' + (n.node_status || '')},
      svg('rect', {x, y, width: W, height: H, rx: 6}, svg('title', {}, n.entity_id)),
      svg('text', {x: x + 8, y: y + 22}, ellipsize(n.entity_id, W - 16)),
      svg('text', {x: x + 8, y: y + 42, fill: '#687384'}, ellipsize(n.node_status || '', W - 16))));
  }
  // edge labels: cut to the gap they sit in, never over a box or another label
  const boxes = [...pos.values()].map(([x, y]) => ({x0: x, y0: y, x1: x + W, y1: y + H}));
  placeLabels(labels, boxes).forEach((y, i) => {
    const l = labels[i];
    if (y !== null) s.append(svg('text', {class: 'lab' + (l.flag ? ' flagged' : ''), x: l.x, y, 'text-anchor': 'middle', 'data-full': l.full}, l.text, svg('title', {}, l.full)));
  });
  clear(el, h('div', {class: 'graph'},
    h('p', {}, 'Pipeline: ', h('strong', {}, g.pipeline_status || '?'), g.bottleneck_edge ? `  bottleneck ${g.bottleneck_edge}` : '',
      flagged.length ? h('span', {class: 'flagged-note'}, ` but the graph watchdog flags ${flagged.length} edge${flagged.length > 1 ? 's' : ''}: `,
        flagged.map((f) => h('span', {class: 'pill down'}, f.code))) : null),
    s,
    flagged.map((f) => h('div', {class: 'error finding'}, `${f.code}: ${f.message}`))));
}
