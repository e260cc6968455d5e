// The API client: same origin, token in memory only, errors carry the gateway's message.
// Every fetch omits credentials: the API uses bearer tokens only, and a 401 with a Basic
// challenge (a wrong client secret) must come back to the page instead of opening the
// browser's own login prompt.
export const BASE = '/api/v1';
export const ctx = {vendor: 'vendor', xv: 'x-vendor', root: null, auth: null, peers: null};
// Set by a 429 answer (rate limiting): periodic refreshes wait until then.
export const throttle = {until: 0};

let token = null;
let refresh = null;
let refreshTimer = null;
let signInPrompt = null;  // () => Promise<void>, resolves once signed in
let pending = null;
const listeners = new Set();

export class ApiError extends Error {
  constructor(status, body, method, path) {
    const b = body && typeof body === 'object' ? body : {};
    const code = [b.error_code, b.vendor_code].filter(Boolean).join(' / ');
    const msg = b.message || (typeof body === 'string' && body) || 'no message';
    super(`${status}${code ? ' ' + code : ''}: ${msg}`);
    this.status = status;
    this.body = b;
    this.method = method;
    this.path = path;
  }
}

export function vx(obj) {
  return (obj && obj[ctx.xv]) || {};
}

export function enc(s) {
  return encodeURIComponent(s);
}

export function signedIn() {
  return token !== null;
}

export function onAuthChange(fn) {
  listeners.add(fn);
}

export function setSignInPrompt(fn) {
  signInPrompt = fn;
}

export function authHeaders() {
  return token ? {Authorization: 'Bearer ' + token} : {};
}

function notify(info) {
  for (const fn of listeners) fn(info);
}

async function ensureSignedIn() {
  if (!signInPrompt) throw new Error('sign-in required');
  if (!pending) pending = signInPrompt().finally(() => { pending = null; });
  return pending;
}

async function parse(resp) {
  if (resp.status === 204 || resp.status === 304) return null;
  const type = resp.headers.get('Content-Type') || '';
  if (type.includes('json')) return resp.json();
  return resp.text();
}

export async function api(method, path, opts = {}) {
  const url = path.startsWith('/api/') ? path : BASE + path;
  for (let attempt = 0; ; attempt++) {
    const headers = {...authHeaders(), ...(opts.headers || {})};
    let body = opts.raw;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['Content-Type'] = 'application/json';
    }
    const resp = await fetch(url, {method, headers, body, signal: opts.signal, cache: 'no-store', credentials: 'omit'});
    if (resp.status === 401 && attempt === 0 && !opts.noAuthRetry) {
      await ensureSignedIn();
      continue;
    }
    const data = await parse(resp);
    if (resp.status === 429) {
      const wait = Number(resp.headers.get('Retry-After')) || 5;
      throttle.until = Math.max(throttle.until, Date.now() + wait * 1000);
    }
    if (!resp.ok) throw new ApiError(resp.status, data, method, path);
    if (opts.withResponse) return {data, resp};
    return data;
  }
}

export const get = (path, opts) => api('GET', path, opts);

export async function authorize(clientId, secret) {
  const resp = await fetch(BASE + '/auth/authorize', {
    method: 'POST', headers: {'Content-Type': 'application/json'}, cache: 'no-store', credentials: 'omit',
    body: JSON.stringify({grant_type: 'client_credentials', client_id: clientId, client_secret: secret}),
  });
  const data = await parse(resp);
  if (!resp.ok) {
    const b = data && typeof data === 'object' ? data : {};
    throw new Error(b.error_description || b.message || b.error || ('HTTP ' + resp.status));
  }
  accept(data, clientId);
  return data;
}

let client = null;

function accept(data, who) {
  if (who) client = who;
  token = data.access_token;
  refresh = data.refresh_token || null;
  clearTimeout(refreshTimer);
  const life = Number(data.expires_in) || 0;
  if (refresh && life > 20) refreshTimer = setTimeout(renew, (life - 15) * 1000);
  notify({signedIn: true, who: client, scope: data.scope});
}

async function renew() {
  try {
    const resp = await fetch(BASE + '/auth/token', {
      method: 'POST', headers: {'Content-Type': 'application/json'}, cache: 'no-store', credentials: 'omit',
      body: JSON.stringify({grant_type: 'refresh_token', refresh_token: refresh}),
    });
    if (!resp.ok) throw new Error('refresh refused');
    accept(await resp.json());
  } catch (e) {
    signOutLocal();
  }
}

function signOutLocal() {
  token = null;
  client = null;
  refresh = null;
  clearTimeout(refreshTimer);
  notify({signedIn: false});
}

export async function signOut() {
  const r = refresh;
  signOutLocal();
  if (r) {
    await fetch(BASE + '/auth/revoke', {method: 'POST', headers: {'Content-Type': 'application/json'}, credentials: 'omit',
      body: JSON.stringify({token: r})}).catch(() => {});
  }
}

// Read the root: the vendor word (from the peer-declaration route) and the auth mode.
export async function boot() {
  const root = await get('/');
  ctx.root = root;
  for (const ep of root.endpoints || []) {
    const m = /\/x-([A-Za-z0-9_]+)-entities$/.exec(ep);
    if (m) { ctx.vendor = m[1]; ctx.xv = 'x-' + m[1]; }
  }
  ctx.auth = root.auth || null;
  return root;
}

// Download a file with progress (token attached); returns {blob, name}.
export async function download(path, onProgress) {
  const url = path.startsWith('/api/') ? path : BASE + path;
  let resp = await fetch(url, {headers: authHeaders(), cache: 'no-store', credentials: 'omit'});
  if (resp.status === 401) {
    await ensureSignedIn();
    resp = await fetch(url, {headers: authHeaders(), cache: 'no-store', credentials: 'omit'});
  }
  if (!resp.ok) throw new ApiError(resp.status, await parse(resp), 'GET', path);
  const total = Number(resp.headers.get('Content-Length')) || 0;
  const reader = resp.body.getReader();
  const chunks = [];
  let got = 0;
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    if (onProgress) onProgress(got, total);
  }
  const disp = resp.headers.get('Content-Disposition') || '';
  const m = /filename="?([^";]+)"?/.exec(disp);
  const name = m ? m[1] : url.split('/').pop();
  const blob = new Blob(chunks, {type: resp.headers.get('Content-Type') || 'application/octet-stream'});
  return {blob, name, size: got};
}

export function saveBlob(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}

// Multipart upload with progress (XMLHttpRequest: fetch has no upload progress).
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const send = () => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', BASE + path);
      for (const [k, v] of Object.entries(authHeaders())) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (e) => onProgress && onProgress(e.loaded, e.total);
      xhr.onerror = () => reject(new Error('upload failed: network error'));
      xhr.onload = () => {
        let body = xhr.responseText;
        try { body = JSON.parse(body); } catch (e) { /* keep the text */ }
        if (xhr.status === 401 && !send.retried) {
          send.retried = true;
          ensureSignedIn().then(send, reject);
        } else if (xhr.status >= 200 && xhr.status < 300) resolve(body);
        else reject(new ApiError(xhr.status, body, 'POST', path));
      };
      xhr.send(form);
    };
    send();
  });
}
