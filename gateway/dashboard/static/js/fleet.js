// Fleet view: each robot (peer) with status and confirmed faults, the fleet's fault list, and a
// live timeline from /faults/stream. A single gateway shows itself as the one robot.
import {ctx, get, vx} from './api.js';
import {ago, clear, describe, duration, errorBox, every, h, patchChildren, selectionIn, setText, sevBadge, svg, time} from './dom.js';
import {addEvent} from './eventlog.js';
import {isPassed, lastTime, messageOf, millis, severityOf, sourceOf, statusOf} from './faultshape.js';
import {filterBar, filterFaults, filterState, groupByCode, severityName} from './faultfilter.js';
import {MissedEvents} from './missed.js';
import {followFaults} from './pagestream.js';
import {TIMELINE_S, axisView, eventsView, timelineView} from './timeline.js';
import {entityIndex, entityOfFault} from './tree.js';

const SEVERITIES = ['CRITICAL', 'ERROR', 'WARN', 'INFO'];
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
  const bar = filterBar(() => drawList(), () => robotsOf(health).map((r) => r.key));
  faultsBox.before(bar);
  let drawn = '';  // the fault list is redrawn only when it or the filters changed
  const drawList = () => {
    const sig = JSON.stringify([filterState, faults]);
    if (sig === drawn || selectionIn(faultsBox)) return;  // never under a selection
    drawn = sig;
    const box = h('div', {});
    drawFaultView(box, faults);
    patchChildren(faultsBox, [...box.childNodes]);  // a changed time is a changed text, not a new table
  };
  const draw = () => {
    drawRobots(cards, health, faults, down);
    bar.refreshRobots();
    drawList();
  };
  const drawEvents = eventsView(list, events);
  const drawTimeline = timelineView(line, events);
  const drawAxis = axisView(axis);
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
      drawn = '';
      clear(faultsBox, errorBox(e));
    }
  };
  // A robot's events that reached the list but not the stream go on the timeline, marked,
  // and the line above says whose events arrive late (e.g. its relay was refused a slot).
  const missedNote = h('span', {class: 'behind', id: 'stream-missed', hidden: true});
  const noteMissed = (found) => {
    for (const f of found) {
      const at = lastTime(f);
      const gone = addEvent(events, {at: Number.isFinite(at) ? at : Date.now(), id: null, type: 'from-list',
        data: {event_type: `fault_${statusOf(f).toLowerCase()}`, from_list: true, fault: f, [ctx.xv]: {peer: vx(f).peer}}});
      if (gone) seenIds.delete(gone.id);
    }
    if (found.length) { drawEvents(); drawTimeline(); }
    const robots = [...missed.byRobot].map(([r, n]) => `${r} (${n})`);
    missedNote.hidden = !robots.length;
    setText(missedNote, robots.length ? ` behind: changes the stream did not bring, read from the fault list instead: ${robots.join(', ')}` : '');
  };
  const stopPoll = every(3000, load);
  const tick = every(1000, () => { drawTimeline(); drawAxis(); drawEvents(); if (health) drawRobots(cards, health, faults, down); });
  drawEvents();
  const live = document.getElementById('live');
  const behind = h('span', {class: 'behind', id: 'stream-behind', hidden: true});
  status.after(behind, missedNote);
  const setBehind = (text) => { behind.hidden = !text; setText(behind, text ? ` ${text}` : ''); };
  const stopStream = followFaults((ev) => {
    let data;
    try { data = JSON.parse(ev.data); } catch (e) { return; }
    if (ev.id !== null) {
      if (seenIds.has(ev.id)) return;
      seenIds.add(ev.id);
      if (seenIds.size > 2000) seenIds.delete(seenIds.values().next().value);  // repeats keep no row of their own
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
    const gone = addEvent(events, {at: Number.isFinite(at) ? at : Date.now(), id: ev.id, type: ev.event, data});
    if (gone) seenIds.delete(gone.id);
    drawEvents();
    drawTimeline();
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

// Confirmed faults whose condition is still present, per robot and severity.
export function activeCounts(robots, faults) {
  const counts = new Map(robots.map((r) => [r.key, Object.fromEntries(SEVERITIES.map((s) => [s, 0]))]));
  for (const f of faults) {
    if (statusOf(f) !== 'CONFIRMED' || isPassed(f)) continue;
    const c = counts.get(vx(f).peer || 'local');
    const s = severityOf(f);
    if (c && s in c) c[s]++;
  }
  return counts;
}

// One card per robot, made once: later draws only change its texts, classes and hidden parts
// (card text stays selectable; "online for" ticks as text).
export function drawRobots(el, health, faults, down = null) {
  const robots = robotsOf(health);
  const counts = activeCounts(robots, faults);
  const cards = el.cards || (el.cards = new Map());
  if (!cards.size) el.replaceChildren();
  const seen = new Set();
  for (const r of robots) {
    seen.add(r.name);
    let c = cards.get(r.name);
    if (!c) { c = robotCard(r.name); cards.set(r.name, c); el.append(c.el); }
    const on = !down && (r.status === 'online' || r.status === 'healthy');
    c.el.className = 'card robot' + (on ? '' : ' offline') + (down ? ' unreachable' : '');
    c.dot.className = 'dot' + (on ? '' : ' off');
    setText(c.status, down ? `unknown: the gateway is not answering (for ${duration((Date.now() - down.since) / 1000)})`
      : `${on ? 'online' : 'offline'}${r.since ? ` for ${ago(r.since)}` : ''}${r.reason ? ` (${r.reason})` : ''}`);
    setText(c.url, r.url || '');
    c.error.hidden = !down;
    setText(c.error, down ? describe(down.error) : '');
    const n = counts.get(r.key);
    c.counts.hidden = !!down;
    for (const s of SEVERITIES) { c.sev[s].hidden = !n[s]; setText(c.num[s], String(n[s])); }
    c.none.hidden = SEVERITIES.some((s) => n[s]);
  }
  for (const [name, c] of cards) if (!seen.has(name)) { c.el.remove(); cards.delete(name); }
}

function robotCard(name) {
  const c = {dot: h('span', {class: 'dot'}), status: h('div', {class: 'muted status'}, ''), url: h('div', {class: 'muted mono'}, ''),
    error: h('div', {class: 'error', hidden: true}, ''), sev: {}, num: {}, none: h('span', {class: 'ok'}, 'no confirmed faults active')};
  for (const s of SEVERITIES) {
    c.num[s] = h('span', {class: 'num', 'data-sev': s}, '0');
    c.sev[s] = h('span', {hidden: true}, sevBadge(s), ' ', c.num[s]);
  }
  c.counts = h('div', {class: 'counts'}, SEVERITIES.map((s) => c.sev[s]), c.none);
  c.el = h('div', {class: 'card robot', 'data-robot': name}, h('div', {}, c.dot, h('strong', {}, name)), c.status, c.url, c.error, c.counts);
  return c;
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
  // the most severe and recent are listed, in an order a new occurrence does not shuffle
  const open = all.slice(0, MAX_LISTED).sort((a, b) => isPassed(a) - isPassed(b) || rank(a) - rank(b)
    || String(a.fault_code).localeCompare(b.fault_code) || String(vx(a).peer || '').localeCompare(vx(b).peer || ''));
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
        h('td', {}, messageOf(f)), h('td', {}, statusPill(f)), h('td', {class: 'mono source'}, sourceOf(f)), h('td', {}, time(lastTime(f))));
    })));
}

// Active faults carry their status; a passed one says its condition is gone.
export function statusPill(f) {
  const st = statusOf(f);
  return isPassed(f) ? h('span', {class: 'pill passed', title: 'the condition has passed'}, `passed (${st.toLowerCase()})`)
    : h('span', {class: 'pill active'}, st.toLowerCase() || '?');
}
