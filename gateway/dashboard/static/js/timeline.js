// The fleet view's live timeline: dots on a 10-minute line, clock marks under it, and the list
// of events. Elements are made once and then moved or re-labelled: at rest nothing is rebuilt.
import {ctx} from './api.js';
import {clear, h, selectionIn, setText, sevBadge, svg, time} from './dom.js';
import {messageOf, severityOf} from './faultshape.js';

export const TIMELINE_S = 600;
const SEV_COLOR = {CRITICAL: '#8e1111', ERROR: '#d1242f', WARN: '#bf8700', WARNING: '#bf8700', INFO: '#1f6feb'};
const LISTED = 100;

function label(e) {
  const f = e.data.fault || {};
  return `${time(e.at)} ${e.data.event_type || e.type} ${f.fault_code || ''}${e.count > 1 ? ` (${e.count} times)` : ''}`;
}

// Dots of the events of the last TIMELINE_S; a dot is made when its event arrives and then
// only moved (an attribute), so the line is not rebuilt every second.
export function timelineView(el, events) {
  el.replaceChildren(svg('line', {x1: 0, y1: 23, x2: 1000, y2: 23, stroke: '#dde1e7'}));
  for (let m = 1; m < TIMELINE_S / 60; m++) {
    const x = 1000 - (m * 60 * 1000) / TIMELINE_S;
    el.append(svg('line', {x1: x, y1: 18, x2: x, y2: 28, stroke: '#dde1e7'}));
  }
  const dots = new Map();  // event -> {c, title}
  return (now = Date.now()) => {
    const keep = new Set();
    for (const e of events) {
      const age = (now - e.at) / 1000;
      if (age > TIMELINE_S) continue;
      keep.add(e);
      let d = dots.get(e);
      if (!d) {
        const cleared = /clear|heal|pass/i.test(e.data.event_type || '');
        const title = svg('title', {}, '');
        const c = svg('circle', {cy: cleared ? 34 : 12, r: 4, fill: cleared ? '#1a7f37' : (SEV_COLOR[severityOf(e.data.fault)] || '#8c959f')}, title);
        el.append(c);
        dots.set(e, (d = {c, title}));
      }
      const cx = (994 - (Math.max(0, age) * 988) / TIMELINE_S).toFixed(1);
      if (d.c.getAttribute('cx') !== cx) d.c.setAttribute('cx', cx);
      setText(d.title, label(e));
    }
    for (const [e, d] of dots) if (!keep.has(e)) { d.c.remove(); dots.delete(e); }
  };
}

// Clock times under the timeline, every 2 minutes back from now (made once, text updated).
export function axisView(el) {
  const marks = [];
  for (let m = 0; m <= TIMELINE_S / 60; m += 2) {
    const s = h('span', {}, '');
    s.style.left = `${(1 - (m * 60) / TIMELINE_S) * 100}%`;
    marks.push([m, s]);
  }
  el.replaceChildren(...marks.map(([, s]) => s));
  return (now = Date.now()) => {
    for (const [m, s] of marks) setText(s, m ? new Date(now - m * 60000).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'}) : 'now');
  };
}

// The last LISTED events, newest first; rebuilt only when an event came or a row's count
// moved, and never under a selection (then once it ends).
export function eventsView(el, events) {
  let shown = '';
  return () => {
    const last = events.slice(-LISTED).reverse();
    const sig = last.map((e) => `${e.id}:${e.at}:${e.version || 0}`).join(',');
    if (sig === shown && el.firstChild) return;
    if (selectionIn(el)) { el.dataset.stale = '1'; return; }
    delete el.dataset.stale;
    shown = sig;
    if (!events.length) { clear(el, h('p', {class: 'muted'}, 'No fault events since this page opened.')); return; }
    clear(el, h('table', {}, last.map((e) => {
      const f = e.data.fault || {};
      const x = e.data[ctx.xv] || {};
      return h('tr', {class: 'event' + (e.data.from_list ? ' from-list' : ''), 'data-code': f.fault_code, 'data-event': e.data.event_type || e.type, 'data-count': e.count > 1 ? String(e.count) : null},
        h('td', {}, time(e.at)),
        h('td', {}, e.data.event_type || e.type, e.data.from_list ? h('div', {class: 'muted'}, 'from the fault list') : null,
          e.count > 1 ? h('div', {class: 'muted repeat'}, `${e.count} times since ${time(e.first)}`) : null),
        h('td', {}, sevBadge(severityOf(f))), h('td', {class: 'mono'}, f.fault_code || ''), h('td', {}, x.peer || (x.entity_id || '')), h('td', {}, messageOf(f)));
    })));
  };
}
