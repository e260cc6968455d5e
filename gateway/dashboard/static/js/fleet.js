// Fleet view: each robot (peer) with status and confirmed faults, the fleet's fault list, and a
// live timeline from /faults/stream. A single gateway shows itself as the one robot.
import {ctx, get, vx} from './api.js';
import {ago, clear, describe, duration, errorBox, every, h, selectionIn, sevBadge, svg, time} from './dom.js';
import {isPassed, lastTime, messageOf, millis, severityOf, statusOf} from './faultshape.js';
import {filterBar, filterFaults, filterState, groupByCode, severityName} from './faultfilter.js';
import {MissedEvents} from './missed.js';
import {followFaults} from './pagestream.js';
import {entityIndex, entityOfFault} from './tree.js';

const SEVERITIES = ['CRITICAL', 'ERROR', 'WARN', 'INFO'];
const SEV_COLOR = {CRITICAL: '#8e1111', ERROR: '#d1242f', WARN: '#bf8700', WARNING: '#bf8700', INFO: '#1f6feb'};
const TIMELINE_S = 600;
const events = [];  // kept across visits of the view, newest last
const seenIds = new Set();
let lastSeen = '0';  // first visit: the gateway replays the events it keeps
const missed = new MissedEvents();  // changes the stream did not bring (a robot's relay down)

export function renderFleet(main) {
  const cards = h('div', {class: 'cards', id: 'robots'}, h('p', {class: 'muted'}, 'Loading…'));
  const faultsBox = h('div', {id: 'fleet-faults'}, h('p', {class: 'muted'}, 'Loading faults…'));
  const line = svg('svg', {class: 'timeline', id: 'timeline', viewBox: '0 0 1000 46', preserveAspectRatio: 'none'});
  const list = h('div', {class: 'events', id: 'events'});
  const axis = h('div', {class: 'timeline-axis', id: 'timeline-axis'});
  const status = h('span', {class: 'pill', id: 'stream-state'}, 'connecting');
  clear(main,
    h('h2', {}, 'Fleet'),
    cards,
    h('h3', {}, 'Fault timeline ', status, h('small', {class: 'muted'}, ` last ${TIMELINE_S / 60} min, live over this page's one stream`)),
    line, axis, list,
    h('h3', {}, 'Faults'),
    faultsBox);
  let faults = [];
  let health = null;
  let refreshTimer = null;

  let down = null;  // {since, error} while this gateway does not answer
  const bar = filterBar(() => drawFaultView(faultsBox, faults), () => robotsOf(health).map((r) => r.key));
  faultsBox.before(bar);
  const draw = () => {
    drawRobots(cards, health, faults, down);
    bar.refreshRobots();
    if (!selectionIn(faultsBox)) drawFaultView(faultsBox, faults);  // never under a selection
  };
  const load = async () => {
    try {
      [health, faults] = await Promise.all([
        get('/health'),
        get('/faults?status=all').then((b) => b.items || []),
      ]);
      down = null;
      draw();
      noteMissed(missed.read(faults));
    } catch (e) {
      // The gateway itself is not answering: no card may go on saying online with old counts.
      down = {since: down ? down.since : Date.now(), error: e};
      drawRobots(cards, health, faults, down);
      clear(faultsBox, errorBox(e));
    }
  };
  // A robot's events that reached the list but not the stream go on the timeline, marked,
  // and the line above says whose events arrive late (e.g. its relay was refused a slot).
  const missedNote = h('span', {class: 'behind', id: 'stream-missed', hidden: true});
  const noteMissed = (found) => {
    for (const f of found) {
      const at = lastTime(f);
      events.push({at: Number.isFinite(at) ? at : Date.now(), id: null, type: 'from-list',
        data: {event_type: `fault_${statusOf(f).toLowerCase()}`, from_list: true, fault: f, [ctx.xv]: {peer: vx(f).peer}}});
    }
    if (found.length) { events.sort((a, b) => a.at - b.at); drawEvents(list); drawTimeline(line); }
    const robots = [...missed.byRobot].map(([r, n]) => `${r} (${n})`);
    missedNote.hidden = !robots.length;
    missedNote.textContent = robots.length ? ` behind: changes the stream did not bring, read from the fault list instead: ${robots.join(', ')}` : '';
  };
  const stopPoll = every(3000, load);
  const tick = every(1000, () => { drawTimeline(line); drawAxis(axis); if (list.dataset.stale) drawEvents(list); if (health) drawRobots(cards, health, faults, down); });
  drawEvents(list);
  const live = document.getElementById('live');
  const behind = h('span', {class: 'behind', id: 'stream-behind', hidden: true});
  status.after(behind, missedNote);
  const setBehind = (text) => { behind.hidden = !text; behind.textContent = text ? ` ${text}` : ''; };
  const stopStream = followFaults((ev) => {
    let data;
    try { data = JSON.parse(ev.data); } catch (e) { return; }
    if (ev.id !== null) {
      if (seenIds.has(ev.id)) return;
      seenIds.add(ev.id);
      lastSeen = ev.id;
    }
    if (ev.event === 'refetch') {
      // Events after the page's last id are no longer kept: say so, and read the list again.
      // a primary's refetch for one robot (its relay could not resume) names it instead
      const robot = (data[ctx.xv] || {}).peer;
      setBehind(robot ? `behind: events of ${robot} were missed (${data.reason}); the fault list was read again`
        : `behind: events ${data.last_event_id}..${data.oldest_kept_id} were missed; the fault list was read again`);
      load();
      return;
    }
    missed.heardOf(data.fault, data[ctx.xv]);
    const at = millis(data.timestamp);
    events.push({at: Number.isFinite(at) ? at : Date.now(), id: ev.id, type: ev.event, data});
    events.sort((a, b) => a.at - b.at);
    if (events.length > 500) seenIds.delete(events.shift().id);
    drawEvents(list);
    drawTimeline(line);
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(load, 300);
  }, (state, detail) => {
    const text = state === 'live' ? 'live' : state === 'retrying' ? 'reconnecting' : 'paused';
    if (state === 'retrying') setBehind(`behind: the stream is down${detail ? ` (${detail.message || detail})` : ''}; it resumes after event ${lastSeen}`);
    else if (state === 'live' && behind.textContent.includes('stream is down')) setBehind('');
    for (const el of [status, live]) {
      el.textContent = text;
      el.className = 'pill ' + (state === 'live' ? 'live' : state === 'retrying' ? 'down' : '');
      el.title = detail ? `fault stream: ${detail.message || detail}` : 'fault stream (fleet view)';
    }
    live.hidden = state === 'closed';
  }, lastSeen === '0' ? '0' : lastSeen);
  return () => { stopPoll(); tick(); stopStream(); clearTimeout(refreshTimer); live.hidden = true; };
}

function robotsOf(health) {
  const peers = (health && health.peers) || null;
  const robots = [];
  const localApps = entityIndex.apps.filter((a) => (vx(a).contributors || ['local']).includes('local'));
  if (!peers || localApps.length) {
    // it answered /health, so it is online; a status other than healthy is said beside it
    robots.push({name: peers ? 'local' : 'this gateway', key: 'local', status: health ? 'online' : '?', url: location.origin, since: null,
      reason: health && health.status && health.status !== 'healthy' ? health.status : null});
  }
  for (const p of peers || []) {
    robots.push({name: p.name, key: p.name, status: p.status, url: p.url, since: vx(p).status_since, reason: vx(p).last_reason});
  }
  return robots;
}

export function drawRobots(el, health, faults, down = null) {
  const robots = robotsOf(health);
  if (down) {
    clear(el, robots.map((r) => h('div', {class: 'card robot offline unreachable', 'data-robot': r.name},
      h('div', {}, h('span', {class: 'dot off'}), h('strong', {}, r.name)),
      h('div', {class: 'muted status'}, `unknown: the gateway is not answering (for ${duration((Date.now() - down.since) / 1000)})`),
      h('div', {class: 'muted mono'}, r.url),
      h('div', {class: 'error'}, describe(down.error)))));
    return;
  }
  const counts = new Map(robots.map((r) => [r.key, Object.fromEntries(SEVERITIES.map((s) => [s, 0]))]));
  for (const f of faults) {
    if (statusOf(f) !== 'CONFIRMED') continue;
    const c = counts.get(vx(f).peer || 'local');
    const s = severityOf(f);
    if (c && s in c) c[s]++;
  }
  clear(el, robots.map((r) => {
    const on = r.status === 'online' || r.status === 'healthy';
    const c = counts.get(r.key);
    return h('div', {class: 'card robot' + (on ? '' : ' offline'), 'data-robot': r.name},
      h('div', {}, h('span', {class: 'dot' + (on ? '' : ' off')}), h('strong', {}, r.name)),
      h('div', {class: 'muted status'}, on ? 'online' : 'offline', r.since ? ` for ${ago(r.since)}` : '', r.reason ? ` (${r.reason})` : ''),
      h('div', {class: 'muted mono'}, r.url),
      h('div', {class: 'counts'}, SEVERITIES.map((s) => c[s] ? h('span', {}, sevBadge(s), ' ', h('span', {class: 'num', 'data-sev': s}, String(c[s]))) : null),
        SEVERITIES.every((s) => !c[s]) ? h('span', {class: 'ok'}, 'no confirmed faults') : null));
  }));
}

function faultLink(f) {
  const ent = entityOfFault(f);
  return ent ? `#/e/${ent[0]}/${encodeURIComponent(ent[1])}/faults/${encodeURIComponent(f.fault_code)}` : null;
}

const MAX_LISTED = 200;  // a fleet of 32 robots can hold thousands; the worst come first

function rank(f) {
  const i = SEVERITIES.indexOf(severityOf(f));
  return i < 0 ? SEVERITIES.length : i;
}

// The fleet's faults as the filter bar asks: a list, or one row per code across robots.
export function drawFaultView(el, faults) {
  const shown = filterFaults(faults, filterState);
  if (filterState.group) drawGroups(el, shown.filter((f) => statusOf(f) !== 'CLEARED'));
  else drawFaults(el, shown);
  if (shown.length < faults.length) el.prepend(h('p', {class: 'muted filtered'}, `${shown.length} of ${faults.length} faults match the filters.`));
}

function drawGroups(el, faults) {
  const groups = groupByCode(faults);
  if (!groups.length) { clear(el, h('p', {class: 'ok'}, 'No faults.')); return; }
  clear(el, h('table', {class: 'faults grouped'},
    h('tr', {}, h('th', {}, 'Worst'), h('th', {}, 'Code'), h('th', {}, 'Robots'), h('th', {}, 'Active'), h('th', {}, 'Passed'), h('th', {}, 'Message'), h('th', {}, 'Last')),
    groups.map((g) => h('tr', {class: 'group', 'data-code': g.code, 'data-robots': String(g.robots.size)},
      h('td', {}, sevBadge(severityName(g.worst))), h('td', {class: 'mono'}, g.code),
      h('td', {}, `${g.robots.size}: ${[...g.robots].sort().join(', ')}`), h('td', {class: 'num'}, String(g.active)),
      h('td', {class: 'num'}, String(g.passed)), h('td', {}, g.message), h('td', {}, time(g.last))))));
}

export function drawFaults(el, faults) {
  const all = faults.filter((f) => statusOf(f) !== 'CLEARED');
  if (!all.length) { clear(el, h('p', {class: 'ok'}, 'No faults.')); return; }
  all.sort((a, b) => isPassed(a) - isPassed(b) || rank(a) - rank(b) || (lastTime(b) || 0) - (lastTime(a) || 0));
  const open = all.slice(0, MAX_LISTED);
  const peered = open.some((f) => vx(f).peer);
  clear(el, all.length > open.length ? h('p', {class: 'muted'}, `The ${open.length} most severe and recent of ${all.length} faults; each entity's Faults tab lists all of its own.`) : null,
    h('table', {class: 'faults'},
    h('tr', {}, h('th', {}, 'Severity'), h('th', {}, 'Code'), peered ? h('th', {}, 'Robot') : null, h('th', {}, 'Message'), h('th', {}, 'Status'), h('th', {}, 'Source'), h('th', {}, 'Last')),
    open.map((f) => {
      const href = faultLink(f);
      const passed = isPassed(f);
      return h('tr', {class: 'click' + (passed ? ' passed' : ''), 'data-fault': f.fault_code, 'data-passed': passed ? '1' : null, onclick: () => { if (href) location.hash = href; }},
        h('td', {}, sevBadge(severityOf(f))), h('td', {class: 'mono'}, href ? h('a', {href}, f.fault_code) : f.fault_code),
        peered ? h('td', {}, vx(f).peer || 'local') : null,
        h('td', {}, messageOf(f)), h('td', {}, statusPill(f)), h('td', {class: 'mono'}, f.source || (f.reporting_sources || [])[0] || ''), h('td', {}, time(lastTime(f))));
    })));
}

// Active faults carry their status; a passed one says its condition is gone.
export function statusPill(f) {
  const st = statusOf(f);
  return isPassed(f) ? h('span', {class: 'pill passed', title: 'the condition has passed'}, `passed (${st.toLowerCase()})`)
    : h('span', {class: 'pill active'}, st.toLowerCase() || '?');
}

function drawEvents(el) {
  if (selectionIn(el)) { el.dataset.stale = '1'; return; }  // redrawn once the selection ends
  delete el.dataset.stale;
  if (!events.length) { clear(el, h('p', {class: 'muted'}, 'No fault events since this page opened.')); return; }
  clear(el, h('table', {},
    events.slice(-100).reverse().map((e) => {
      const f = e.data.fault || {};
      const x = e.data[ctx.xv] || {};
      return h('tr', {class: 'event' + (e.data.from_list ? ' from-list' : '')}, h('td', {}, time(e.at)),
        h('td', {}, e.data.event_type || e.type, e.data.from_list ? h('div', {class: 'muted'}, 'from the fault list') : null),
        h('td', {}, sevBadge(severityOf(f))), h('td', {class: 'mono'}, f.fault_code || ''), h('td', {}, x.peer || (x.entity_id || '')), h('td', {}, messageOf(f)));
    })));
}

// Clock times under the timeline, every 2 minutes back from now.
function drawAxis(el) {
  const now = Date.now();
  const marks = [];
  for (let m = 0; m <= TIMELINE_S / 60; m += 2) {
    const at = new Date(now - m * 60000);
    const left = (1 - (m * 60) / TIMELINE_S) * 100;
    marks.push(h('span', {'data-left': left.toFixed(1)}, m ? at.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'}) : 'now'));
  }
  el.replaceChildren(...marks);
  for (const s of el.children) s.style.left = `${s.dataset.left}%`;
}

function drawTimeline(el) {
  const now = Date.now();
  el.replaceChildren(svg('line', {x1: 0, y1: 23, x2: 1000, y2: 23, stroke: '#dde1e7'}));
  for (let m = 1; m < TIMELINE_S / 60; m++) {
    const x = 1000 - (m * 60 * 1000) / TIMELINE_S;
    el.append(svg('line', {x1: x, y1: 18, x2: x, y2: 28, stroke: '#dde1e7'}));
  }
  for (const e of events) {
    const age = (now - e.at) / 1000;
    if (age > TIMELINE_S) continue;
    const f = e.data.fault || {};
    const sev = severityOf(f);
    const cleared = /clear|heal/i.test(e.data.event_type || '');
    const c = svg('circle', {cx: (994 - (age * 988) / TIMELINE_S).toFixed(1), cy: cleared ? 34 : 12, r: 4,
      fill: cleared ? '#1a7f37' : (SEV_COLOR[sev] || '#8c959f')});
    c.append(svg('title', {}, `${time(e.at)} ${e.data.event_type} ${f.fault_code}`));
    el.append(c);
  }
}
