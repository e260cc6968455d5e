// Sparklines: a small SVG polyline of a numeric series; numeric leaves of a message.
import {svg} from './dom.js';

export function sparkline(values, width = 120, height = 24) {
  const el = svg('svg', {class: 'spark', width, height, viewBox: `0 0 ${width} ${height}`});
  const pts = values.filter((v) => Number.isFinite(v));
  if (pts.length < 2) return el;
  let lo = Math.min(...pts), hi = Math.max(...pts);
  if (hi === lo) { hi += 1; lo -= 1; }
  const step = width / (pts.length - 1);
  const coords = pts.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - ((v - lo) / (hi - lo)) * (height - 4)).toFixed(1)}`);
  el.append(svg('polyline', {points: coords.join(' ')}));
  return el;
}

// [path, number, isBool] for each numeric or boolean leaf (booleans as 0/1); long arrays are left out (shown as a chart instead).
export function numericLeaves(value, prefix = '', out = [], maxArray = 8) {
  if (typeof value === 'number') out.push([prefix || 'value', value]);
  else if (typeof value === 'boolean') out.push([prefix || 'value', value ? 1 : 0, true]);
  else if (Array.isArray(value)) {
    if (value.length <= maxArray) value.forEach((v, i) => numericLeaves(v, `${prefix}[${i}]`, out, maxArray));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'stamp' || k === 'header') continue;  // timestamps are not signals
      numericLeaves(v, prefix ? `${prefix}.${k}` : k, out, maxArray);
    }
  }
  return out;
}

// Long numeric arrays (e.g. scan ranges) as [path, array].
export function numericArrays(value, prefix = '', out = []) {
  if (Array.isArray(value)) {
    if (value.length > 8 && value.every((v) => typeof v === 'number' || v === null)) out.push([prefix, value]);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) numericArrays(v, prefix ? `${prefix}.${k}` : k, out);
  }
  return out;
}

export class History {
  constructor(size = 60) { this.size = size; this.series = new Map(); }
  push(key, v) {
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = []));
    s.push(v);
    if (s.length > this.size) s.shift();
    return s;
  }
}
