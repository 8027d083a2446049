// The dashboard page: reads the JSON endpoints beside it and draws with DOM nodes only. Every
// string from Redis (payloads, errors, names) goes in as text, never as markup.
'use strict';

const REFRESH_MS = 5000;
const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);
let readOnly = true;
let openQueue = null;

/** An element with attributes and children (strings become text nodes). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'onclick') node.addEventListener('click', value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

async function getJson(path) {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${(await res.json().catch(() => ({}))).message ?? ''}`);
  return res.json();
}

async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${res.status}: ${answer.message ?? res.statusText}`);
  return answer;
}

function say(text, failed = false) {
  $('message').textContent = text;
  $('message').className = failed ? 'failed' : '';
}

/** Runs an action, says how it went, and redraws. */
async function act(what, call) {
  try {
    const answer = await call();
    say(`${what}: ${JSON.stringify(answer)}`);
  } catch (error) {
    say(`${what} failed: ${error.message}`, true);
  }
  await refresh();
}

const ago = (ms) =>
  ms < 60_000 ? `${Math.round(ms / 1000)} s ago` : ms < 3_600_000 ? `${Math.round(ms / 60_000)} min ago` : `${(ms / 3_600_000).toFixed(1)} h ago`;
const policy = (p) => (p.limit === undefined ? 'per request' : `${p.limit} / ${p.windowMs === undefined ? '?' : `${p.windowMs} ms`}`);

function showHealth({ redis, readOnly: ro }) {
  const figures = [redis.version === undefined ? 'Redis' : `${redis.server} ${redis.version}`, redis.mode];
  if (redis.pingMs !== undefined) figures.push(`PING ${redis.pingMs} ms`);
  if (redis.error !== undefined) figures.push(redis.error);
  $('redis-health').textContent = figures.join(', ');
  $('mode-note').textContent = ro ? 'read-only' : '';
}

function showQueues(queues) {
  const body = $('queues').tBodies[0];
  body.replaceChildren(
    ...queues.map((q) =>
      el(
        'tr',
        { 'data-queue': q.queue },
        el('td', {}, q.queue),
        el('td', { class: 'n' }, q.scheduled),
        el('td', { class: 'n' }, q.inFlight),
        el('td', { class: `n dead-count${q.dead > 0 ? ' some' : ''}` }, q.dead),
        el('td', {}, el('button', { type: 'button', onclick: () => openDead(q.queue) }, 'Dead messages')),
      ),
    ),
  );
  $('no-queues').hidden = queues.length > 0;
}

async function openDead(queue) {
  openQueue = queue;
  await showDead();
}

async function showDead(cursor) {
  if (openQueue === null) return;
  const queue = openQueue;
  const page = await getJson(`api/dead?queue=${encodeURIComponent(queue)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
  $('dead-section').hidden = false;
  $('dead-queue').textContent = queue;
  $('dead-actions').hidden = readOnly;
  const now = Date.now();
  const rows = page.messages.map((m) =>
    el(
      'tr',
      { 'data-id': m.id },
      el('td', {}, m.id),
      el('td', {}, el('pre', {}, JSON.stringify(m.payload, null, 1))),
      el('td', { class: 'n' }, m.attempts),
      el('td', { class: 'error' }, m.error),
      el('td', { title: new Date(m.diedAt).toISOString() }, ago(now - m.diedAt)),
      el(
        'td',
        {},
        ...(readOnly
          ? []
          : [
              el(
                'button',
                { type: 'button', class: 'retry', onclick: () => act(`retry ${m.id}`, () => post('api/dead/retry', { queue, ids: [m.id] })) },
                'Retry',
              ),
              ' ',
              el(
                'button',
                { type: 'button', class: 'purge danger', onclick: () => act(`purge ${m.id}`, () => post('api/dead/purge', { queue, ids: [m.id] })) },
                'Purge',
              ),
            ]),
      ),
    ),
  );
  const body = $('dead').tBodies[0];
  if (cursor) body.append(...rows);
  else body.replaceChildren(...rows);
  $('no-dead').hidden = body.rows.length > 0;
  const more = $('dead-more');
  more.hidden = page.cursor === null;
  more.onclick = () => showDead(page.cursor);
}

/** One route's hour as bars: allowed below, shadow-refused (let through) then refused stacked on
 * top, one bar per minute. */
function routeChart(series, max) {
  const width = 600;
  const height = 40;
  const bar = width / series.allowed.length;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  const rect = (cls, x, y, w, h) => {
    const r = document.createElementNS(SVG, 'rect');
    for (const [k, v] of Object.entries({ class: cls, x, y, width: w, height: h })) r.setAttribute(k, v);
    svg.append(r);
    return r;
  };
  rect('axis', 0, height - 1, width, 1);
  series.allowed.forEach((allowed, i) => {
    const refused = series.refused[i];
    const shadow = series.shadowRefused?.[i] ?? 0;
    const a = (allowed / max) * (height - 2);
    const s = (shadow / max) * (height - 2);
    const r = (refused / max) * (height - 2);
    if (allowed > 0) rect('allowed', i * bar + 0.5, height - 1 - a, bar - 1, a);
    if (shadow > 0) rect('shadow-refused', i * bar + 0.5, height - 1 - a - s, bar - 1, s);
    if (refused > 0) rect('refused', i * bar + 0.5, height - 1 - a - s - r, bar - 1, r);
  });
  return svg;
}

function showDecisions({ routes }) {
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  const max = Math.max(1, ...routes.flatMap((s) => s.allowed.map((a, i) => a + s.refused[i] + (s.shadowRefused?.[i] ?? 0))));
  $('charts').replaceChildren(
    ...routes.map((s) =>
      el(
        'div',
        { class: 'route', 'data-route': s.route },
        el('span', { class: 'route-name' }, s.route),
        routeChart(s, max),
        el('span', { class: 'route-totals' }, `${sum(s.allowed)} / `, el('b', { class: 'refused-total' }, sum(s.refused))),
      ),
    ),
  );
  $('no-decisions').hidden = routes.length > 0;
}

function showLimits(limits) {
  $('limits').tBodies[0].replaceChildren(
    ...limits.map((l) => {
      const limitInput = el('input', { type: 'number', min: '1', step: '1', placeholder: 'limit', 'aria-label': `limit of ${l.name}` });
      const windowInput = el('input', { type: 'number', min: '1', step: '1', placeholder: 'window ms', 'aria-label': `window of ${l.name}` });
      const set = () => {
        const override = { limit: Number(limitInput.value) };
        if (windowInput.value !== '') override.windowMs = Number(windowInput.value);
        const sent = post('api/overrides', { name: l.name, policy: override });
        limitInput.value = windowInput.value = '';
        return act(`override ${l.name}`, () => sent);
      };
      return el(
        'tr',
        { 'data-name': l.name },
        el('td', {}, l.name),
        el('td', {}, ...l.declared.map((d) => el('div', { title: d.at }, `${d.algorithm} ${policy(d)}`))),
        el('td', { class: 'override' }, l.override ? policy(l.override) : '—'),
        el(
          'td',
          {},
          ...(readOnly
            ? []
            : [
                limitInput,
                ' ',
                windowInput,
                ' ',
                el('button', { type: 'button', class: 'set-override', onclick: set }, 'Set'),
                ' ',
                ...(l.override
                  ? [
                      el(
                        'button',
                        {
                          type: 'button',
                          class: 'remove-override',
                          onclick: () => act(`remove override ${l.name}`, () => post('api/overrides', { name: l.name, policy: null })),
                        },
                        'Remove',
                      ),
                    ]
                  : []),
              ]),
        ),
      );
    }),
  );
  $('no-limits').hidden = limits.length > 0;
}

function showCounters(c) {
  const rows = [
    ['Decisions allowed', c.decisions.allowed],
    ['Decisions refused', c.decisions.refused],
    ['Decisions shadow-refused (let through)', c.decisions.shadowRefused],
    ['Refused from the refusal cache (no Redis call)', c.refusalCacheHits],
    ['Local fallback: allowed', c.localDecisions.allowed],
    ['Local fallback: refused', c.localDecisions.refused],
    ['Redis down: let through (open)', c.failMode.open],
    ['Redis down: 503 (closed)', c.failMode.closed],
    ['Redis down: decided locally', c.failMode.local],
    ['Outages', c.outages],
    ['Redis up now', c.redisUp === 1 ? 'yes' : 'no'],
  ];
  $('counters').replaceChildren(...rows.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]));
}

async function refresh() {
  try {
    const [overview, decisions] = await Promise.all([getJson('api/overview'), getJson('api/decisions')]);
    readOnly = overview.readOnly;
    showHealth(overview);
    showQueues(overview.queues);
    // not while an operator is typing an override: the redraw would wipe it
    if (![...$('limits').querySelectorAll('input')].some((input) => input.value !== '')) showLimits(overview.limits);
    showCounters(overview.counters);
    showDecisions(decisions);
    await showDead();
    document.body.dataset.loaded = String(Date.now());
  } catch (error) {
    say(`could not load: ${error.message}`, true);
  }
}

$('refresh').addEventListener('click', () => refresh());
$('retry-all').addEventListener('click', () => act(`retry all of ${openQueue}`, () => post('api/dead/retry', { queue: openQueue })));
$('purge-all').addEventListener('click', () => act(`purge all of ${openQueue}`, () => post('api/dead/purge', { queue: openQueue })));
refresh();
setInterval(refresh, REFRESH_MS);
