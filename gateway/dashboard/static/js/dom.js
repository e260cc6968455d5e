// Element helpers: every text goes in as a text node, never parsed as markup (API data is untrusted).
import {throttle} from './api.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) el.setAttribute(k, v);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'hidden') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function errorBox(err) {
  return h('div', {class: 'error', role: 'alert'}, describe(err));
}

export function describe(err) {
  if (err && err.status !== undefined) return err.message;
  return String(err && err.message ? err.message : err);
}

export function json(value) {
  return h('pre', {}, pretty(value, ''));
}

// JSON with two-space indents; arrays of scalars stay on one (wrapping) line.
export function pretty(v, ind) {
  if (Array.isArray(v)) {
    if (v.every((x) => x === null || typeof x !== 'object')) return JSON.stringify(v).replace(/,/g, ', ');
    return '[\n' + v.map((x) => ind + '  ' + pretty(x, ind + '  ')).join(',\n') + '\n' + ind + ']';
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (!keys.length) return '{}';
    return '{\n' + keys.map((k) => `${ind}  ${JSON.stringify(k)}: ${pretty(v[k], ind + '  ')}`).join(',\n') + '\n' + ind + '}';
  }
  return JSON.stringify(v);
}

export function bytes(n) {
  if (n == null) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v) + ' ' + units[i];
}

export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  return duration(Math.max(0, now - t) / 1000);
}

export function duration(s) {
  if (s < 60) return Math.floor(s) + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm ' + Math.floor(s % 60) + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
  return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
}

// A time of day from an ISO string or epoch seconds (the medkit profile's times).
export function time(iso) {
  const d = new Date(typeof iso === 'number' ? (iso > 1e11 ? iso : iso * 1000) : iso);
  return Number.isNaN(d.getTime()) ? String(iso ?? '') : d.toLocaleTimeString();
}

const SEV_NUMBERS = ['INFO', 'WARN', 'ERROR', 'CRITICAL'];  // medkit's integer severities

export function sevBadge(label) {
  let s = typeof label === 'number' ? (SEV_NUMBERS[label] || 'UNKNOWN') : String(label || '').toUpperCase();
  if (s === 'WARNING') s = 'WARN';
  return h('span', {class: 'sev sev-' + s}, s || '?');
}

// Run fn now and again `ms` after each run finishes, until stop(); skips while the tab is
// hidden and while the gateway asked to slow down (429 with Retry-After).
export function every(ms, fn) {
  let timer = null, stopped = false;
  const tick = async () => {
    if (stopped) return;
    if (!document.hidden && Date.now() >= throttle.until) {
      try { await fn(); } catch (e) { console.warn(e); }
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

// True while the person has text selected inside el (a redraw there would take it away).
export function selectionIn(el) {
  const sel = window.getSelection();
  if (!sel || sel.isCollapsed || !sel.rangeCount) return false;
  return el.contains(sel.anchorNode) || el.contains(sel.focusNode) || sel.getRangeAt(0).intersectsNode(el);
}

// Set an element's text only when it changed (an unchanged node keeps any selection in it);
// a lone text node is edited in place (no element or node is replaced).
export function setText(el, text) {
  const t = el.firstChild;
  if (t && t === el.lastChild && t.nodeType === Node.TEXT_NODE) { if (t.data !== text) t.data = text; }
  else if (el.textContent !== text) el.textContent = text;
}

// Make el's children look like fresh ones, changing only what differs: a text in place, else
// the smallest differing element is swapped (kept elements keep their listeners).
export function patchChildren(el, fresh) {
  if (el.childNodes.length !== fresh.length) { el.replaceChildren(...fresh); return; }
  [...el.childNodes].forEach((n, i) => patch(n, fresh[i]));
}

function patch(old, fresh) {
  if (old.nodeType === Node.TEXT_NODE && fresh.nodeType === Node.TEXT_NODE) { if (old.data !== fresh.data) old.data = fresh.data; return; }
  if (old.nodeName !== fresh.nodeName || !sameAttrs(old, fresh)) { old.replaceWith(fresh); return; }
  patchChildren(old, [...fresh.childNodes]);
}

function sameAttrs(a, b) {
  if (!a.attributes || !b.attributes) return a.nodeType === b.nodeType;
  if (a.attributes.length !== b.attributes.length) return false;
  for (const {name, value} of a.attributes) if (b.getAttribute(name) !== value) return false;
  return true;
}
