// Server-sent events over fetch (EventSource cannot send a token), resuming with Last-Event-ID.
import {BASE, authHeaders, ApiError} from './api.js';

// Split a text buffer into complete events; returns {events, rest}.
export function parseEvents(buffer) {
  const events = [];
  // A chunk ending in CR may be half of a CRLF: keep it for the next chunk.
  const held = buffer.endsWith('\r') ? '\r' : '';
  const blocks = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/g, '\n').split('\n\n');
  const rest = blocks.pop() + held;
  for (const block of blocks) {
    const ev = {id: null, event: 'message', data: []};
    for (const line of block.split('\n')) {
      if (!line || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'data') ev.data.push(value);
      else if (field === 'id') ev.id = value;
      else if (field === 'event') ev.event = value;
    }
    if (ev.data.length || ev.id !== null) events.push({...ev, data: ev.data.join('\n')});
  }
  return {events, rest};
}

// Read an event-stream response to its end, calling onEvent for each complete event.
export async function readEvents(resp, onEvent) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    const parsed = parseEvents(buf + value);
    buf = parsed.rest;
    for (const ev of parsed.events) onEvent(ev);
  }
}

// Follow a stream until close(); onEvent(ev), onState('live'|'retrying'|'closed', detail).
export function follow(path, onEvent, onState, fromId = null) {
  let lastId = fromId;
  let stopped = false;
  let ctrl = null;
  let delay = 500;
  const run = async () => {
    while (!stopped) {
      ctrl = new AbortController();
      try {
        const headers = {Accept: 'text/event-stream', ...authHeaders()};
        if (lastId !== null) headers['Last-Event-ID'] = lastId;
        const resp = await fetch(BASE + path, {headers, signal: ctrl.signal, cache: 'no-store', credentials: 'omit'});
        if (!resp.ok) {
          let body = null;
          try { body = await resp.json(); } catch (e) { /* not JSON */ }
          throw new ApiError(resp.status, body, 'GET', path);
        }
        onState('live');
        delay = 500;
        await readEvents(resp, (ev) => {
          if (ev.id !== null) lastId = ev.id;
          if (ev.data) onEvent(ev);
        });
        if (!stopped) onState('retrying', 'stream ended');
      } catch (e) {
        if (stopped) break;
        onState('retrying', e);
      }
      if (stopped) break;
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 8000);
    }
    onState('closed');
  };
  run();
  return {
    close() { stopped = true; if (ctrl) ctrl.abort(); },
    get lastId() { return lastId; },
  };
}
