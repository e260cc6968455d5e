// A form generated from a message's JSON Schema, filled with its default value.
import {h} from './dom.js';

export function buildForm(schema, initial) {
  const root = field(schema || {type: 'object', properties: {}}, initial, '');
  return {el: root.el, value: () => root.read()};
}

function field(schema, init, path) {
  const type = schema.type;
  if (type === 'object' && schema.properties) {
    const kids = Object.entries(schema.properties).map(([name, sub]) =>
      [name, field(sub, init && typeof init === 'object' ? init[name] : undefined, path ? `${path}.${name}` : name)]);
    const box = path ? h('fieldset', {}, h('legend', {}, `${last(path)} (${schema['x-ros-type'] || 'object'})`), kids.map(([, f]) => f.el))
      : h('div', {class: 'form'}, kids.length ? kids.map(([, f]) => f.el) : h('p', {class: 'muted'}, 'No fields.'));
    return {el: box, read: () => Object.fromEntries(kids.map(([n, f]) => [n, f.read()]))};
  }
  const label = (input) => h('label', {class: 'field'}, h('span', {}, last(path)), input,
    h('small', {class: 'muted'}, schema['x-ros-type'] || type || ''));
  if (type === 'boolean') {
    const input = h('input', {type: 'checkbox', name: path, checked: Boolean(init)});
    return {el: label(input), read: () => input.checked};
  }
  if (type === 'integer' || type === 'number') {
    const input = h('input', {type: 'number', name: path, step: type === 'integer' ? '1' : 'any',
      min: schema.minimum, max: schema.maximum, value: String(init ?? 0)});
    return {el: label(input), read: () => checkNumber(input.value, schema, path)};
  }
  if (type === 'string') {
    const input = h('input', {type: 'text', name: path, value: String(init ?? '')});
    return {el: label(input), read: () => input.value};
  }
  const area = h('textarea', {name: path, rows: 2}, JSON.stringify(init ?? (type === 'array' ? [] : null)));
  return {el: label(area), read: () => {
    let v;
    try { v = JSON.parse(area.value); } catch (e) { throw new Error(`${path}: not valid JSON (${e.message})`); }
    if (type === 'array' && !Array.isArray(v)) throw new Error(`${path}: must be a JSON array`);
    if (type === 'array' && schema.items) v.forEach((x, i) => checkItem(x, schema.items, `${path}[${i}]`));
    return v;
  }};
}

function checkItem(x, schema, path) {
  if (schema.type === 'integer' || schema.type === 'number') checkNumber(String(x), schema, path);
  else if (schema.type === 'string' && typeof x !== 'string') throw new Error(`${path}: must be a string`);
  else if (schema.type === 'boolean' && typeof x !== 'boolean') throw new Error(`${path}: must be true or false`);
}

export function checkNumber(text, schema, path) {
  if (String(text).trim() === '') throw new Error(`${path}: a number is required`);
  const n = Number(text);
  if (!Number.isFinite(n)) throw new Error(`${path}: '${text}' is not a number`);
  if (schema.type === 'integer' && !Number.isInteger(n)) throw new Error(`${path}: must be an integer`);
  if (schema.minimum !== undefined && n < schema.minimum) throw new Error(`${path}: must be at least ${schema.minimum}`);
  if (schema.maximum !== undefined && n > schema.maximum) throw new Error(`${path}: must be at most ${schema.maximum}`);
  return n;
}

function last(path) {
  return path.split('.').pop() || 'value';
}
