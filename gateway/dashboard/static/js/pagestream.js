// One SSE stream per page (GET /x-<vendor>-page-stream): the open entity's topics, its graph and
// the fault stream arrive over one connection, so the page holds one of sse.max_clients.
// Whoever watches something registers here; the stream is opened again (after a short pause)
// whenever the set changes, and fault events resume from the last id seen (Last-Event-ID).
import {ApiError, BASE, authHeaders, ctx} from './api.js';
import {readEvents} from './sse.js';

const REOPEN_MS = 60;  // changes within this window share one reconnect
const watches = new Map();  // resource -> Set of {onSample, onState}
const faultFollowers = new Set();  // {onEvent, onState}
let lastFaultId = null;
let ctrl = null, timer = null, generation = 0, delay = 500;
let current = [];  // resources of the open stream, in watch-index order
let state = {name: 'closed', detail: null};

export function streamPath() {
  return `/${ctx.xv}-page-stream`;
}

// Follow one resource's samples: onSample(data), onState('live'|'retrying'|'refused', detail).
export function watch(resource, onSample, onState) {
  const who = {onSample, onState};
  if (!watches.has(resource)) watches.set(resource, new Set());
  watches.get(resource).add(who);
  reopen();
  return () => {
    const set = watches.get(resource);
    if (!set) return;
    set.delete(who);
    if (!set.size) { watches.delete(resource); reopen(); }
  };
}

// Follow the fault stream: onEvent(ev) with ev.id, ev.event, ev.data (text); onState(state, detail).
export function followFaults(onEvent, onState, fromId = null) {
  if (fromId !== null && lastFaultId === null) lastFaultId = fromId;
  const who = {onEvent, onState};
  faultFollowers.add(who);
  reopen();
  return () => { faultFollowers.delete(who); reopen(); };
}

export function streamState() { return state; }

// A page put in the back/forward cache keeps its connections unless told: end the stream
// (the gateway then removes the page's subscriptions) and open it again if the page returns.
addEventListener('pagehide', () => { generation++; if (ctrl) ctrl.abort(); ctrl = null; });
addEventListener('pageshow', (e) => { if (e.persisted) reopen(); });

function reopen() {
  clearTimeout(timer);
  timer = setTimeout(connect, REOPEN_MS);
}

function tell(name, detail) {
  state = {name, detail};
  for (const f of faultFollowers) f.onState(name, detail);
  for (const set of watches.values()) for (const w of set) w.onState(name === 'live' ? 'live' : name, detail);
}

function connect() {
  if (ctrl) ctrl.abort();
  ctrl = null;
  const gen = ++generation;
  current = [...watches.keys()];
  if (!current.length && !faultFollowers.size) { state = {name: 'closed', detail: null}; return; }
  run(gen);
}

async function run(gen) {
  const mine = new AbortController();
  ctrl = mine;
  const resources = current;
  const query = new URLSearchParams();
  if (faultFollowers.size) query.set('faults', '1');
  for (const r of resources) query.append('watch', `${BASE}${r}`);
  while (gen === generation) {
    try {
      const headers = {Accept: 'text/event-stream', ...authHeaders()};
      if (lastFaultId !== null && faultFollowers.size) headers['Last-Event-ID'] = lastFaultId;
      const resp = await fetch(`${BASE}${streamPath()}?${query}`, {headers, signal: mine.signal, cache: 'no-store', credentials: 'omit'});
      if (!resp.ok) {
        let body = null;
        try { body = await resp.json(); } catch (e) { /* not JSON */ }
        throw new ApiError(resp.status, body, 'GET', streamPath());
      }
      delay = 500;
      await readEvents(resp, (ev) => { if (gen === generation) dispatch(ev, resources); });
      if (gen !== generation) return;
      tell('retrying', 'stream ended');
    } catch (e) {
      if (gen !== generation) return;
      tell('retrying', e);
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 8000);
  }
}

function dispatch(ev, resources) {
  if (ev.event === 'watching') {
    const body = safeJson(ev.data) || {};
    state = {name: 'live', detail: null};
    for (const f of faultFollowers) f.onState('live', null);
    for (const a of body.accepted || []) forWatch(resources[a.watch], (w) => w.onState('live', null));
    for (const r of body.refused || []) forWatch(resources[r.watch], (w) => w.onState('refused', new ApiError(r.status, r, 'GET', resources[r.watch])));
    return;
  }
  if (ev.event === 'sample') {
    const body = safeJson(ev.data);
    if (body && body.frame && body.frame.payload) forWatch(resources[body.watch], (w) => w.onSample(body.frame.payload.data));
    return;
  }
  if (ev.event === 'watch-error') {
    const body = safeJson(ev.data) || {};
    forWatch(resources[body.watch], (w) => w.onState('refused', new ApiError(500, body.error, 'GET', resources[body.watch])));
    return;
  }
  if (ev.event === 'watch-end') {
    const body = safeJson(ev.data) || {};
    if (!body.renewed) forWatch(resources[body.watch], (w) => w.onState('refused', new Error('the subscription ended and could not be renewed')));
    return;
  }
  if (ev.id !== null) lastFaultId = ev.id;
  if (ev.data) for (const f of faultFollowers) f.onEvent(ev);
}

function forWatch(resource, fn) {
  const set = resource && watches.get(resource);
  if (set) for (const w of set) fn(w);
}

function safeJson(text) {
  try { return JSON.parse(text); } catch (e) { return null; }
}
