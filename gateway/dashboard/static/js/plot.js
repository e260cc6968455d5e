// Time-series plots of numeric fields: 10 minutes of history per field, many fields on one
// chart with axes, units and hover values, zoom (drag; wheel) and pan (shift+wheel). The
// chart is uPlot (MIT, static/vendor/), loaded on first use.
import {h} from './dom.js';

export const HISTORY_S = 600;
const VENDOR = '/dashboard/vendor/uPlot.iife.min.js';
const COLORS = ['#1f6feb', '#d1242f', '#1a7f37', '#bf8700', '#8250df', '#0a7ea4', '#bc4c00', '#57606a'];

// Units of common message fields (ROS messages carry none; these are the REP-103 ones).
const UNITS = {
  'sensor_msgs/msg/Temperature|temperature': '°C',
  'sensor_msgs/msg/FluidPressure|fluid_pressure': 'Pa',
  'sensor_msgs/msg/Illuminance|illuminance': 'lx',
  'sensor_msgs/msg/Range|range': 'm',
  'sensor_msgs/msg/BatteryState|voltage': 'V',
  'sensor_msgs/msg/BatteryState|current': 'A',
  'sensor_msgs/msg/BatteryState|temperature': '°C',
  'sensor_msgs/msg/BatteryState|charge': 'Ah',
  'sensor_msgs/msg/BatteryState|capacity': 'Ah',
  'sensor_msgs/msg/NavSatFix|latitude': '°',
  'sensor_msgs/msg/NavSatFix|longitude': '°',
  'sensor_msgs/msg/NavSatFix|altitude': 'm',
  'sensor_msgs/msg/LaserScan|range_min': 'm',
  'sensor_msgs/msg/LaserScan|range_max': 'm',
  'sensor_msgs/msg/LaserScan|scan_time': 's',
};
const SUFFIX_UNITS = [[/(^|\.)linear_acceleration\.[xyz]$/, 'm/s²'], [/(^|\.)angular_velocity\.[xyz]$/, 'rad/s'],
  [/(^|\.)linear\.[xyz]$/, 'm/s'], [/(^|\.)angular\.[xyz]$/, 'rad/s'], [/(^|\.)position\.[xyz]$/, 'm']];

export function unitOf(type, field) {
  const u = UNITS[`${type}|${field}`];
  if (u) return u;
  for (const [re, unit] of SUFFIX_UNITS) if (re.test(field)) return unit;
  return '';
}

// Timestamped samples per key (topic|field), the last HISTORY_S seconds.
export class Series {
  constructor(seconds = HISTORY_S) { this.seconds = seconds; this.data = new Map(); }
  push(key, value, t = Date.now() / 1000) {
    let s = this.data.get(key);
    if (!s) this.data.set(key, (s = {t: [], v: []}));
    s.t.push(t);
    s.v.push(value);
    let drop = 0;
    while (drop < s.t.length && s.t[drop] < t - this.seconds) drop++;
    if (drop) { s.t.splice(0, drop); s.v.splice(0, drop); }
  }
  get(key) { return this.data.get(key) || {t: [], v: []}; }
}

// Join several series on one time axis (uPlot's [xs, ys1, ys2, ...], null where a series has no sample).
export function align(list) {
  const xs = [...new Set(list.flatMap((s) => s.t))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  return [xs, ...list.map((s) => {
    const ys = new Array(xs.length).fill(null);
    s.t.forEach((t, i) => { ys[index.get(t)] = s.v[i]; });
    return ys;
  })];
}

// Room for the y axis: its widest tick label plus the ticks and the axis label beside them.
export function axisSize(u, values) {
  const widest = Math.max(3, ...(values || []).map((v) => String(v ?? '').length));
  return 28 + widest * 7;
}

let loading = null;
function loadUplot() {
  if (window.uPlot) return Promise.resolve(window.uPlot);
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      const css = h('link', {rel: 'stylesheet', href: '/dashboard/vendor/uPlot.min.css'});
      const js = h('script', {src: VENDOR});
      js.addEventListener('load', () => resolve(window.uPlot));
      js.addEventListener('error', () => { loading = null; reject(new Error('the chart library did not load')); });
      document.head.append(css, js);
    });
  }
  return loading;
}

// A chart of the chosen fields; toggle(key, label, unit) adds or removes one; update() redraws.
export function plotPanel(series) {
  const chosen = new Map();  // key -> {label, unit}
  const box = h('div', {class: 'plot', hidden: true});
  const note = h('p', {class: 'muted plot-note'}, 'Click a field name to plot it. Drag to zoom, wheel to zoom, shift+wheel to pan, double-click to follow live again.');
  const holder = h('div', {class: 'plot-chart'});
  const follow = h('button', {type: 'button', class: 'follow', hidden: true, onclick: () => { zoomed = false; follow.hidden = true; update(); }}, 'Follow live');
  box.append(note, follow, holder);
  let chart = null, zoomed = false, keys = '';
  const build = async () => {
    const U = await loadUplot();
    if (chart) { chart.destroy(); chart = null; }
    const list = [...chosen.entries()];
    if (!list.length) { box.hidden = true; return; }
    box.hidden = false;
    const units = [...new Set(list.map(([, c]) => c.unit))];
    const width = Math.max(320, (box.clientWidth || holder.clientWidth || 800) - 8);
    chart = new U({
      width, height: 260,
      scales: {x: {time: true}},
      // tick labels get the room they need and their spacing (they never overlap the axis label)
      axes: [{space: 90}, {label: units.length === 1 && units[0] ? units[0] : 'value', space: 30, labelSize: 18, size: axisSize}],
      series: [{}, ...list.map(([, c], i) => ({label: c.unit ? `${c.label} [${c.unit}]` : c.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true}))],
      cursor: {drag: {x: true, y: false}},
      hooks: {setSelect: [() => { zoomed = true; follow.hidden = false; }]},
    }, align(list.map(([k]) => series.get(k))), holder);
    chart.over.addEventListener('wheel', (e) => wheel(chart, e));
    chart.over.addEventListener('dblclick', () => { zoomed = false; follow.hidden = true; });
  };
  const wheel = (c, e) => {
    e.preventDefault();
    const {min, max} = c.scales.x;
    const span = max - min;
    if (e.shiftKey) {
      const d = span * 0.1 * Math.sign(e.deltaY || e.deltaX);
      c.setScale('x', {min: min + d, max: max + d});
    } else {
      const at = c.posToVal(e.offsetX, 'x');
      const f = e.deltaY < 0 ? 0.8 : 1.25;
      c.setScale('x', {min: at - (at - min) * f, max: at + (max - at) * f});
    }
    zoomed = true;
    follow.hidden = false;
  };
  const update = () => {
    const now = [...chosen.keys()].join('\n');
    if (now !== keys) { keys = now; build(); return; }
    if (!chart) return;
    chart.setData(align([...chosen.keys()].map((k) => series.get(k))), !zoomed);
  };
  return {
    el: box,
    toggle(key, label, unit) {
      if (chosen.has(key)) chosen.delete(key); else chosen.set(key, {label, unit});
      update();
      return chosen.has(key);
    },
    has: (key) => chosen.has(key),
    update,
    get chart() { return chart; },
    destroy() { if (chart) chart.destroy(); chart = null; },
  };
}
