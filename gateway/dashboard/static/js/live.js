// Live values: one cyclic subscription per resource read over SSE; callers poll where refused.
import {api, authHeaders, ApiError, BASE, enc} from './api.js';
import {readEvents} from './sse.js';

export const INTERVAL = 'slow';  // 500 ms frames
const DURATION_S = 600;  // renewed when the stream ends at its expiry
// Each stream holds one of the browser's six connections to the gateway (HTTP/1.1):
// leave the others to the page's requests.
export const MAX_STREAMS = 4;

const open = new Set();  // subscriptions of this page, deleted when it unloads

addEventListener('pagehide', () => {
  for (const sub of open) {
    fetch(sub.url, {method: 'DELETE', headers: authHeaders(), keepalive: true, credentials: 'omit'}).catch(() => {});
  }
});

// Subscribe to a topic of an entity by a cyclic subscription; onData(message) per frame. Resolves once the stream is
// open, rejects (ApiError) when the gateway refuses, with nothing left behind.
// onEnd(error) runs when a live stream stops for good (not after close()).
export function subscribeTopic(ent, topic, onData, onEnd) {
  return subscribe(ent, `/data/${enc(topic)}`, onData, onEnd);
}

// The same for any resource of the entity below its path (e.g. `/x-vendor-graph`).
export async function subscribe(ent, resource, onData, onEnd) {
  let sub = null, stopped = false, ctrl = null;
  const start = async () => {
    const body = {resource: `${BASE}${ent.path}${resource}`, interval: INTERVAL, duration: DURATION_S};
    const created = await api('POST', `${ent.path}/cyclic-subscriptions`, {body, noAuthRetry: true});
    sub = {url: `${BASE}${ent.path}/cyclic-subscriptions/${enc(created.id)}`, id: created.id};
    open.add(sub);
    ctrl = new AbortController();
    let resp;
    try {
      resp = await fetch(sub.url + '/events', {headers: {Accept: 'text/event-stream', ...authHeaders()},
        signal: ctrl.signal, cache: 'no-store', credentials: 'omit'});
    } catch (e) {
      await drop();
      throw e;
    }
    if (!resp.ok) {
      let b = null;
      try { b = await resp.json(); } catch (e) { /* not JSON */ }
      await drop();
      throw new ApiError(resp.status, b, 'GET', sub ? sub.url : resource);
    }
    return resp;
  };
  // Forget the subscription; delete it unless the gateway already ended it (a stream that
  // closed cleanly: its duration ran out), so no request answers 404.
  const drop = async (ended = false) => {
    const s = sub;
    sub = null;
    if (!s) return;
    open.delete(s);
    if (ended) return;
    try { await api('DELETE', s.url, {noAuthRetry: true}); } catch (e) { /* gone already */ }
  };
  const pump = async (resp) => {
    for (;;) {
      let failure = null;
      try {
        await readEvents(resp, (ev) => {
          if (ev.event === 'error') { failure = new ApiError(500, safeJson(ev.data), 'GET', 'events'); return; }
          const frame = safeJson(ev.data);
          if (frame && frame.payload) onData(frame.payload.data);
        });
      } catch (e) {
        if (!stopped) failure = e;
      }
      if (stopped) return;
      await drop(!failure);
      if (failure) { onEnd(failure); return; }
      try { resp = await start(); } catch (e) { if (!stopped) onEnd(e); return; }  // expired: renew
      if (stopped) return;
    }
  };
  const first = await start();
  pump(first);
  return {
    get id() { return sub && sub.id; },
    // Delete first: the gateway then ends the stream itself. Aborting first would end the
    // subscription with its connection and leave the DELETE a 404.
    async close() { stopped = true; await drop(); if (ctrl) ctrl.abort(); },
  };
}

function safeJson(text) {
  try { return JSON.parse(text); } catch (e) { return null; }
}
