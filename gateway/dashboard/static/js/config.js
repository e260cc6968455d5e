// Configurations: node parameters with typed editing, reset one, reset all.
import {api, enc, get, vx} from './api.js';
import {clear, errorBox, h} from './dom.js';

export function renderConfigurations(el, ent) {
  let gone = false;
  const load = async () => {
    let body;
    try { body = await get(`${ent.path}/configurations`); } catch (e) { clear(el, errorBox(e)); return; }
    if (gone) return;
    const items = body.items || [];
    const x = vx(body);
    const resetAll = h('button', {type: 'button', class: 'danger', onclick: async () => {
      if (!confirm(`Reset every parameter of ${ent.id} to the value first seen?`)) return;
      try { await api('DELETE', `${ent.path}/configurations`); await load(); } catch (e) { el.prepend(errorBox(e)); }
    }}, 'Reset all');
    clear(el,
      x.partial ? h('div', {class: 'error'}, 'Partial answer: nodes not answering: ',
        [...(x.unavailable_nodes || []), ...(x.failed_nodes || [])].join(', ') || 'unknown') : null,
      items.length ? h('table', {class: 'params'},
        h('tr', {}, h('th', {}, 'Parameter'), h('th', {}, 'Type'), h('th', {}, 'Value'), h('th', {}, ''), h('th', {}, 'Default')),
        items.map((p) => paramRow(ent, p))) : h('p', {class: 'muted'}, 'No parameters.'),
      items.length ? h('div', {class: 'row'}, resetAll) : null);
  };
  clear(el, h('p', {class: 'muted'}, 'Loading parameters…'));
  load();
  return () => { gone = true; };
}

function paramRow(ent, p) {
  const x = vx(p);
  const type = (x.ros2 && x.ros2.type) || (p.type !== 'parameter' ? p.type : '') || typeof p.value;
  const input = editor(type, p.value, x.read_only);
  const msg = h('div', {class: 'msg'});
  const url = `${ent.path}/configurations/${enc(p.id)}`;
  const save = async (e) => {
    e.preventDefault();
    clear(msg);
    let value;
    try { value = readValue(type, input); } catch (x2) { msg.append(errorBox(x2)); return; }
    try {
      await api('PUT', url, {body: {value}});
      const now = await get(url);
      setValue(input, type, now.value);
      msg.append(h('span', {class: 'ok'}, 'Saved: ' + JSON.stringify(now.value)));
    } catch (x2) {
      msg.append(errorBox(x2));
    }
  };
  const reset = async () => {
    clear(msg);
    try {
      await api('DELETE', url);
      const now = await get(url);
      setValue(input, type, now.value);
      msg.append(h('span', {class: 'ok'}, 'Reset to ' + JSON.stringify(now.value)));
    } catch (x2) {
      msg.append(errorBox(x2));
    }
  };
  return h('tr', {'data-param': p.id},
    h('td', {class: 'mono'}, p.id, p.description ? h('div', {class: 'muted'}, p.description) : null),
    h('td', {class: 'mono'}, type),
    h('td', {}, h('form', {class: 'row', onsubmit: save}, input, h('button', {type: 'submit', disabled: Boolean(x.read_only)}, 'Save')), msg),
    h('td', {}, h('button', {type: 'button', onclick: reset, disabled: Boolean(x.read_only)}, 'Reset')),
    h('td', {class: 'mono muted'}, x.default_value === undefined ? '' : JSON.stringify(x.default_value)));
}

function editor(type, value, readOnly) {
  if (type === 'bool') {
    const select = h('select', {name: 'value', disabled: Boolean(readOnly)},
      h('option', {value: 'true'}, 'true'), h('option', {value: 'false'}, 'false'));
    setValue(select, type, value);
    return select;
  }
  const input = type === 'integer' || type === 'double'
    ? h('input', {name: 'value', type: 'text', inputmode: 'decimal', disabled: Boolean(readOnly)})
    : h('input', {name: 'value', type: 'text', disabled: Boolean(readOnly), size: 28});
  setValue(input, type, value);
  return input;
}

function setValue(input, type, value) {
  if (input.tagName === 'SELECT') input.value = value ? 'true' : 'false';
  else input.value = type.endsWith('_array') || (typeof value === 'object' && value !== null) ? JSON.stringify(value) : String(value ?? '');
}

// The typed value of an editor; an Error naming the problem when it does not fit the type.
export function readValue(type, input) {
  const text = input.value;
  if (type === 'bool') return text === 'true';
  if (type === 'integer') {
    if (!/^[-+]?\d+$/.test(text.trim())) throw new Error(`'${text}' is not an integer`);
    return Number(text);
  }
  if (type === 'double') {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n)) throw new Error(`'${text}' is not a number`);
    return n;
  }
  if (type.endsWith('_array')) {
    let v;
    try { v = JSON.parse(text); } catch (e) { throw new Error(`not a JSON array: ${e.message}`); }
    if (!Array.isArray(v)) throw new Error('a JSON array is required');
    const kind = type.slice(0, -6);
    const ok = {string: (e) => typeof e === 'string', integer: Number.isInteger, byte: Number.isInteger,
      double: (e) => typeof e === 'number', bool: (e) => typeof e === 'boolean'}[kind];
    if (ok && !v.every(ok)) throw new Error(`every element must be a ${kind}`);
    return v;
  }
  return text;
}
