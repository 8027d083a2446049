// The dashboard page: reads the JSON endpoints beside it and draws with DOM nodes only. Every
// string from Redis (payloads, errors, names) goes in as text, never as markup. Each section is
// drawn from what could be read: with Redis down, the page still shows this instance's counters
// and marks what it could not read.
'use strict';

const REFRESH_MS = 5000;
const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);
let readOnly = true;
let openQueue = null;
/** Dead counts by queue, as last read: what "Purge all" asks about. */
let deadCounts = new Map();

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

/** An SVG element with attributes. */
function svgEl(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
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

/** Marks a section as read (why = undefined) or not, saying why in its notice. */
function markUnread(section, why) {
  const notice = $(section).querySelector('.unread');
  notice.hidden = why === undefined;
  notice.textContent = why === undefined ? '' : `Could not read this from Redis: ${why}`;
  $(section).classList.toggle('unreadable', why !== undefined);
}

/** Runs an action, says how it went in `resultId` (beside the buttons that took it), and redraws. */
async function act(resultId, call, describe) {
  const result = $(resultId);
  try {
    result.textContent = describe(await call());
    result.className = 'result';
  } catch (error) {
    result.textContent = `Failed: ${error.message}`;
    result.className = 'result failed';
  }
  result.hidden = false;
  result.scrollIntoView({ block: 'nearest' });
  await refresh();
}

/** A table cell of action buttons: empty when the dashboard is read-only. */
const actions = (...buttons) => el('td', {}, ...(readOnly ? [] : buttons));
/** A button that takes an action and says in `resultId` how it went (act). */
const button = (className, label, resultId, call, describe) =>
  el('button', { type: 'button', class: className, onclick: () => act(resultId, call, describe) }, label);
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
const ago = (ms) =>
  ms < 60_000 ? `${Math.round(ms / 1000)} s ago` : ms < 3_600_000 ? `${Math.round(ms / 60_000)} min ago` : `${(ms / 3_600_000).toFixed(1)} h ago`;
const policy = (p) => (p.limit === undefined ? 'per request' : `${p.limit} / ${p.windowMs === undefined ? '?' : `${p.windowMs} ms`}`);
const until = (ms) =>
  ms < 60_000 ? `${Math.max(0, Math.round(ms / 1000))} s` : ms < 3_600_000 ? `${Math.round(ms / 60_000)} min` : `${(ms / 3_600_000).toFixed(1)} h`;
const clock = (ms) => {
  const at = new Date(ms);
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
};

function showHealth({ redis, readOnly: ro }) {
  const figures = [redis.version === undefined ? 'Redis' : `${redis.server} ${redis.version}`, redis.mode];
  if (!redis.up) figures[0] = 'Redis down';
  if (redis.pingMs !== undefined) figures.push(`PING ${redis.pingMs} ms`);
  if (redis.error !== undefined) figures.push(redis.error);
  $('redis-health').textContent = figures.join(', ');
  $('redis-health').className = redis.up ? 'up' : 'down';
  $('mode-note').textContent = ro ? 'read-only' : '';
}

function showQueues(queues, unread) {
  markUnread('queues-section', unread);
  deadCounts = new Map(queues.map((q) => [q.queue, q.dead]));
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
  $('no-queues').hidden = queues.length > 0 || unread !== undefined;
}

async function openDead(queue) {
  if (queue !== openQueue) $('dead-result').hidden = true;
  openQueue = queue;
  $('purge-confirm').hidden = true;
  await showDead();
}

async function showDead(cursor) {
  if (openQueue === null) return;
  const queue = openQueue;
  $('dead-section').hidden = false;
  $('dead-queue').textContent = queue;
  $('dead-actions').hidden = readOnly;
  let page;
  try {
    page = await getJson(`api/dead?queue=${encodeURIComponent(queue)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
  } catch (error) {
    markUnread('dead-section', error.message);
    return;
  }
  markUnread('dead-section', undefined);
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
      actions(
        button(
          'retry',
          'Retry',
          'dead-result',
          () => post('api/dead/retry', { queue, ids: [m.id] }),
          (a) => `Retried ${m.id}: ${plural(a.retried, 'message')} back to scheduled.`,
        ),
        ' ',
        button(
          'purge danger',
          'Purge',
          'dead-result',
          () => post('api/dead/purge', { queue, ids: [m.id] }),
          (a) => `Purged ${m.id}: ${plural(a.purged, 'message')} deleted.`,
        ),
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

/**
 * One route's hour as bars on its own scale (a quiet route's refusals stay visible beside a busy
 * one): allowed below, shadow-refused (let through) then refused stacked on top, one bar per
 * minute. Any count above zero is at least MIN_BAR tall. Each minute's column carries a tooltip.
 */
function routeChart(series, minutes, peak) {
  const width = 600;
  const height = 40;
  const room = height - 1;
  const MIN_BAR = 2;
  const bar = width / series.allowed.length;
  const svg = svgEl('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none' });
  svg.append(svgEl('rect', { class: 'axis', x: 0, y: room, width, height: 1 }));
  const tall = (n) => (n > 0 ? Math.max(MIN_BAR, (n / peak) * room) : 0);
  series.allowed.forEach((allowed, i) => {
    const refused = series.refused[i];
    const shadow = series.shadowRefused?.[i] ?? 0;
    const r = tall(refused);
    const s = tall(shadow);
    // the minimums may not fit beside a full bar: the allowed part gives way
    const a = Math.min(tall(allowed), room - r - s);
    const minute = svgEl('g', { 'data-minute': String(minutes[i]) });
    const title = svgEl('title');
    title.textContent = `${clock(minutes[i])}: ${allowed} allowed, ${refused} refused${shadow > 0 ? `, ${shadow} shadow-refused` : ''}`;
    minute.append(title, svgEl('rect', { class: 'minute', x: i * bar, y: 0, width: bar, height: room }));
    const x = i * bar + 0.5;
    if (allowed > 0) minute.append(svgEl('rect', { class: 'allowed', x, y: room - a, width: bar - 1, height: a }));
    if (shadow > 0) minute.append(svgEl('rect', { class: 'shadow-refused', x, y: room - a - s, width: bar - 1, height: s }));
    if (refused > 0) minute.append(svgEl('rect', { class: 'refused', x, y: room - a - s - r, width: bar - 1, height: r }));
    svg.append(minute);
  });
  return svg;
}

function showDecisions({ minutes, routes, unread }) {
  markUnread('chart-section', unread);
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  $('charts').replaceChildren(
    ...routes.map((s) => {
      const peak = Math.max(1, ...s.allowed.map((a, i) => a + s.refused[i] + (s.shadowRefused?.[i] ?? 0)));
      return el(
        'div',
        { class: 'route', 'data-route': s.route },
        el('span', { class: 'route-name' }, s.route, el('span', { class: 'route-peak' }, `scale: ${peak} / min`)),
        routeChart(s, minutes, peak),
        el(
          'span',
          { class: 'route-totals', title: 'allowed / refused in the hour' },
          `${sum(s.allowed)} / `,
          el('b', { class: 'refused-total' }, sum(s.refused)),
        ),
      );
    }),
  );
  $('no-decisions').hidden = routes.length > 0 || unread !== undefined;
}

function showLimits(limits, unread) {
  markUnread('limits-section', unread === undefined ? undefined : `the overrides (${unread}); declared limits shown`);
  const done = (name, verb) => () => `Override of ${name} ${verb}; every instance applies it.`;
  $('limits').tBodies[0].replaceChildren(
    ...limits.map((l) => {
      const limitInput = el('input', { type: 'number', min: '1', step: '1', placeholder: 'limit', 'aria-label': `limit of ${l.name}` });
      const windowInput = el('input', { type: 'number', min: '1', step: '1', placeholder: 'window ms', 'aria-label': `window of ${l.name}` });
      const keyInput = el('input', { type: 'text', placeholder: 'key (all keys)', 'aria-label': `key of ${l.name}`, class: 'override-key' });
      const ttlInput = el('input', { type: 'number', min: '1', step: '1', placeholder: 'ttl ms', 'aria-label': `ttl of ${l.name}`, class: 'override-ttl' });
      const set = () => {
        const override = { limit: Number(limitInput.value) };
        if (windowInput.value !== '') override.windowMs = Number(windowInput.value);
        if (keyInput.value !== '') override.key = keyInput.value;
        if (ttlInput.value !== '') override.ttlMs = Number(ttlInput.value);
        const sent = post('api/overrides', { name: l.name, policy: override });
        const whose = override.key === undefined ? l.name : `${l.name} for key ${override.key}`;
        limitInput.value = windowInput.value = keyInput.value = ttlInput.value = '';
        return act('limits-result', () => sent, done(whose, `set to ${policy(override)}`));
      };
      // per-key overrides under the name's, each with its lapse and (editable) its own Remove
      const keyed = (l.keyed ?? []).map((k) =>
        el(
          'div',
          { class: 'keyed-override', 'data-key': k.key },
          `${k.key}: ${policy(k)}${k.expiresAt === undefined ? '' : ` until ${clock(k.expiresAt)}`}`,
          ...(readOnly
            ? []
            : [
                ' ',
                el(
                  'button',
                  {
                    type: 'button',
                    class: 'remove-keyed-override',
                    onclick: () =>
                      act(
                        'limits-result',
                        () => post('api/overrides', { name: l.name, policy: null, key: k.key }),
                        done(`${l.name} for key ${k.key}`, 'removed'),
                      ),
                  },
                  'Remove',
                ),
              ]),
        ),
      );
      return el(
        'tr',
        { 'data-name': l.name },
        el('td', {}, l.name),
        el('td', {}, ...l.declared.map((d) => el('div', { title: d.at }, `${d.algorithm} ${policy(d)}`))),
        el(
          'td',
          { class: 'override' },
          unread !== undefined
            ? '?'
            : l.override
              ? `${policy(l.override)}${l.override.expiresAt === undefined ? '' : ` until ${clock(l.override.expiresAt)}`}`
              : '—',
          ...(unread !== undefined ? [] : keyed),
        ),
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
                keyInput,
                ' ',
                ttlInput,
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
                          onclick: () => act('limits-result', () => post('api/overrides', { name: l.name, policy: null }), done(l.name, 'removed')),
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
    ['Redis up now', c.redisUp === 1 ? 'yes' : 'no'],
    ['Outages', c.outages],
    ['Redis down: let through (open)', c.failMode.open],
    ['Redis down: 503 (closed)', c.failMode.closed],
    ['Redis down: decided locally', c.failMode.local],
    ['Local fallback: allowed', c.localDecisions.allowed],
    ['Local fallback: refused', c.localDecisions.refused],
    ['Decisions allowed', c.decisions.allowed],
    ['Decisions refused', c.decisions.refused],
    ['Decisions shadow-refused (let through)', c.decisions.shadowRefused],
    ['Refused from the refusal cache (no Redis call)', c.refusalCacheHits],
    ['@MaxPending refused', c.maxPendingRefused],
    ['Concurrency slots taken', c.concurrencySlots.taken],
    ['Concurrency slots refused (all held)', c.concurrencySlots.refused],
    ['Queue handlers: RetryLater', c.queueOutcomes.retriedLater],
    ['Queue handlers: Unrecoverable (dead at once)', c.queueOutcomes.unrecoverable],
    ['Queue messages: waited for a concurrency slot', c.queueOutcomes.waited],
    // an adaptive limit below its configured one, per queue and rate key (the latest few)
    ...Object.entries(c.adaptiveLimits).flatMap(([queue, keys]) =>
      Object.entries(keys).map(([key, limit]) => [`Adaptive limit of ${queue}${key === '' ? '' : ` / ${key}`}`, limit]),
    ),
  ];
  $('counters').replaceChildren(...rows.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)]));
}

/** A recurring schedule's timing, as its spec says it. */
const timing = (spec) =>
  `${spec.cron === undefined ? `every ${spec.everyMs} ms` : `cron ${spec.cron} (${spec.tz})`}${spec.limit === undefined ? '' : `, ${spec.limit} runs at most`}`;

function showSchedules(schedules, unread) {
  markUnread('schedules-section', unread);
  const body = $('schedules').tBodies[0];
  if (unread !== undefined) return;
  const now = Date.now();
  body.replaceChildren(
    ...schedules.map((s) =>
      el(
        'tr',
        { 'data-queue': s.queue, 'data-name': s.name },
        el('td', {}, s.queue),
        el('td', {}, s.name),
        el('td', {}, timing(s.spec)),
        el(
          'td',
          s.nextRunAt === null ? {} : { title: new Date(s.nextRunAt).toISOString() },
          s.nextRunAt === null ? 'none (ended)' : `${clock(s.nextRunAt)}, in ${until(s.nextRunAt - now)}`,
        ),
        el('td', { class: 'n' }, s.runs),
        actions(
          button(
            'unschedule danger',
            'Remove',
            'schedules-result',
            () => post('api/schedules/remove', { queue: s.queue, name: s.name }),
            (a) => (a.removed ? `Removed ${s.name} of ${s.queue}, with its pending tick.` : `${s.name} of ${s.queue} was already gone.`),
          ),
        ),
      ),
    ),
  );
  $('no-schedules').hidden = schedules.length > 0;
}

/** Finds a message by queue and id: the sentence on where it is and why, and what it holds. */
async function findMessage() {
  const queue = $('find-queue').value;
  const id = $('find-id').value;
  const explain = $('find-explain');
  explain.hidden = false;
  $('find-facts').hidden = true;
  $('find-payload').hidden = true;
  try {
    const found = await getJson(`api/message?queue=${encodeURIComponent(queue)}&id=${encodeURIComponent(id)}`);
    explain.textContent = found.explain;
    explain.className = 'result';
    if (found.message !== null) {
      const m = found.message;
      $('find-facts').textContent = `${m.state}, runAt ${new Date(m.runAt).toISOString()}, ${plural(m.attempts, 'attempt')}`;
      $('find-facts').hidden = false;
      $('find-payload').textContent = JSON.stringify(m.payload, null, 1);
      $('find-payload').hidden = false;
    }
  } catch (error) {
    explain.textContent = `Failed: ${error.message}`;
    explain.className = 'result failed';
  }
}

/** A sentence per counter of the limits named so, for the key. */
async function explainLimit() {
  const result = $('explain-limit-result');
  const list = $('explain-limit-sentences');
  try {
    const { sentences } = await getJson(
      `api/explain-limit?name=${encodeURIComponent($('explain-name').value)}&key=${encodeURIComponent($('explain-key').value)}`,
    );
    result.hidden = true;
    list.replaceChildren(...sentences.map((sentence) => el('li', {}, sentence)));
  } catch (error) {
    list.replaceChildren();
    result.textContent = `Failed: ${error.message}`;
    result.className = 'result failed';
    result.hidden = false;
  }
}

function showOverview(overview) {
  readOnly = overview.readOnly;
  showHealth(overview);
  showCounters(overview.counters);
  showQueues(overview.queues, overview.unread.queues);
  // not while an operator is in an override's field (typing, or about to): the redraw would wipe it
  const editing = [...$('limits').querySelectorAll('input')].some((input) => input.value !== '' || input === document.activeElement);
  if (!editing) showLimits(overview.limits, overview.unread.overrides);
}

async function refresh() {
  // each answer draws its own sections: one that fails leaves the others on the page
  const [overview, decisions, schedules] = await Promise.allSettled([getJson('api/overview'), getJson('api/decisions'), getJson('api/schedules')]);
  if (overview.status === 'fulfilled') showOverview(overview.value);
  if (decisions.status === 'fulfilled') showDecisions(decisions.value);
  // schedules live in Redis alone: when it cannot be read, the section says so
  showSchedules(schedules.value, schedules.status === 'rejected' ? schedules.reason.message : undefined);
  const failed = [overview, decisions].filter((answer) => answer.status === 'rejected');
  say(failed.length === 0 ? '' : `could not load: ${failed.map((answer) => answer.reason.message).join('; ')}`, failed.length > 0);
  await showDead();
  document.body.dataset.loaded = String(Date.now());
}

$('refresh').addEventListener('click', () => refresh());
$('find-form').addEventListener('submit', (event) => {
  event.preventDefault();
  findMessage();
});
$('explain-limit-form').addEventListener('submit', (event) => {
  event.preventDefault();
  explainLimit();
});
$('retry-all').addEventListener('click', () => {
  const queue = openQueue;
  act(
    'dead-result',
    () => post('api/dead/retry', { queue }),
    (a) => `Retried all of ${queue}: ${plural(a.retried, 'message')} back to scheduled.`,
  );
});
// purging all deletes every dead message and its payload for good: the page asks first
$('purge-all').addEventListener('click', () => {
  const count = deadCounts.get(openQueue);
  $('purge-question').textContent =
    `Delete ${count === undefined ? 'every' : `all ${count}`} dead message${count === 1 ? '' : 's'} of ${openQueue} with their payloads? This cannot be undone.`;
  $('purge-confirm').hidden = false;
  $('purge-all-cancel').focus();
});
$('purge-all-cancel').addEventListener('click', () => {
  $('purge-confirm').hidden = true;
});
$('purge-all-confirm').addEventListener('click', () => {
  const queue = openQueue;
  $('purge-confirm').hidden = true;
  act(
    'dead-result',
    () => post('api/dead/purge', { queue }),
    (a) => `Purged all of ${queue}: ${plural(a.purged, 'message')} deleted.`,
  );
});
refresh();
setInterval(refresh, REFRESH_MS);
