// Locks: who holds the entity's lock, on what, until when; acquire, extend and release.
// Lock changes carry this page's client id (X-Client-Id), kept in memory for the page's life.
import {api, enc, get} from './api.js';
import {clear, duration, errorBox, every, h} from './dom.js';

export const CLIENT_ID = `dashboard-${Math.random().toString(36).slice(2, 10)}`;
const COLLECTIONS = ['configurations', 'operations', 'data', 'faults', 'bulk-data', 'logs', 'status', 'scripts'];

export function renderLocks(el, ent) {
  const list = h('div', {}, h('p', {class: 'muted'}, 'Loading locks…'));
  const msg = h('div', {});
  const seconds = h('input', {type: 'number', name: 'lock_expiration', min: 1, value: 300});
  const scopes = h('select', {name: 'scopes', multiple: true, size: 4}, COLLECTIONS.map((c) => h('option', {value: c}, c)));
  const breakIt = h('input', {type: 'checkbox', name: 'break_lock'});
  const headers = {'X-Client-Id': CLIENT_ID};
  const act = async (fn) => {
    msg.replaceChildren();
    try { await fn(); await load(); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  const acquire = (e) => {
    e.preventDefault();
    const chosen = [...scopes.selectedOptions].map((o) => o.value);
    const body = {lock_expiration: Number(seconds.value)};
    if (chosen.length) body.scopes = chosen;
    if (breakIt.checked) body.break_lock = true;
    act(() => api('POST', `${ent.path}/locks`, {body, headers}));
  };
  const load = async () => {
    try {
      const locks = (await get(`${ent.path}/locks`, {headers})).items || [];
      drawLocks(list, ent, locks, headers, act);
    } catch (e) {
      clear(list, errorBox(e));
    }
  };
  clear(el, list, msg,
    h('form', {class: 'box lock-form', onsubmit: acquire},
      h('strong', {}, 'Acquire a lock'), ' ',
      h('label', {}, 'for ', seconds, ' s'), ' ',
      h('label', {}, 'on ', scopes, ' (none: every collection)'), ' ',
      h('label', {}, breakIt, ' break an existing lock'), ' ',
      h('button', {type: 'submit', class: 'primary'}, 'Acquire'),
      h('p', {class: 'muted'}, `This page acts as client ${CLIENT_ID}.`)));
  return every(3000, load);
}

function drawLocks(el, ent, locks, headers, act) {
  if (!locks.length) { clear(el, h('p', {class: 'ok', 'data-locks': '0'}, 'Not locked.')); return; }
  clear(el, h('table', {class: 'locks'},
    h('tr', {}, h('th', {}, 'Lock'), h('th', {}, 'Held by'), h('th', {}, 'Scopes'), h('th', {}, 'Until'), h('th', {}, '')),
    locks.map((l) => {
      const until = new Date(typeof l.lock_expiration === 'number' ? l.lock_expiration : Date.parse(l.lock_expiration));
      const left = (until.getTime() - Date.now()) / 1000;
      const url = `${ent.path}/locks/${enc(l.id)}`;
      return h('tr', {class: 'lock', 'data-lock': l.id},
        h('td', {class: 'mono'}, l.id),
        h('td', {}, l.owned ? h('strong', {}, 'this page') : 'another client'),
        h('td', {}, (l.scopes || ['every collection']).join(', ')),
        h('td', {}, Number.isNaN(until.getTime()) ? String(l.lock_expiration) : `${until.toLocaleTimeString()} (in ${duration(Math.max(0, left))})`),
        h('td', {}, l.owned ? [
          h('button', {type: 'button', class: 'extend', onclick: () => act(() => api('PUT', url, {body: {lock_expiration: 600}, headers}))}, 'Extend 10 min'), ' ',
          h('button', {type: 'button', class: 'danger release', onclick: () => act(() => api('DELETE', url, {headers}))}, 'Release')] : null));
    })));
}
