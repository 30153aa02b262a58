/*! LiveList client, protocol 1: docs/PROTOCOL.md; readable source: livelist.src.js */
/* Keeps every [data-list] root of the page in sync with the server's changesets over one Server-Sent
 * Events stream. No dependencies, no eval, no inline script (works under a strict CSP). Build:
 * python3 -m livelist_tools.minify. Page options: <meta name="livelist-csrf"> enables actions,
 * <meta name="livelist-connect" content="off"> disables the stream, <meta name="livelist-base">
 * prefixes the routes. API: window.LiveList (apply, start, connect, close, resync, options, state);
 * options.ES replaces EventSource; seen(root, key, visible) batches a visibility report (livelist-window.js).
 * A second tab of the origin loads livelist-shared.js (one stream).
 * The page (docs/PROTOCOL.md, "Actions"): forms posting to /lists/NAME/actions are sent with fetch
 * (LiveList-Action: 1, answered 204) and the page changes only through the stream; a nameless checkbox
 * of such a form posts action=VALUE when changed; a field with data-reset is emptied once its action
 * was taken. An action that cannot reach the server is kept and sent again when the stream is back.
 * #livelist-status shows the connection (data-state connected, reconnecting, offline), #livelist-news
 * tells screen readers what changed. */
(() => {
  'use strict';
  const D = document, W = window, T = D.createElement('template'),
    S = new Map(), // root element -> {root, name, secs, cells, held, seen, sync, bad}
    B = new WeakMap(), // section element -> its cells container
    O = new WeakMap(), // animated element -> [class, style, token]: restored when it settles
    H = new WeakMap(), // cell element -> the HTML it was made from (its outerHTML for the page's own)
    L = { moveBefore: true, delay: 1000, max: 30000, ms: 300 };
  let es, bc, timer, tries = 0, stopped = 0, now = '', scrolled = -1e9;
  const Q = new Map(); // form body -> [form, submitter]: actions not sent yet, sent when the stream is back

  const meta = n => (D.querySelector(`meta[name="${n}"]`) || {}).content,
    url = p => (meta('livelist-base') || '') + p,
    enc = encodeURIComponent,
    emit = (r, t, detail) => r.dispatchEvent(new CustomEvent('livelist:' + t, { bubbles: true, detail })),
    fail = () => { throw Error('livelist: out of sync') },
    parse = h => (T.innerHTML = h, T.content.firstElementChild || fail()),
    made = h => { const e = parse(h); H.set(e, h); return e },
    // Whether element e shows the HTML h: the string it was made from, else the same serialisation.
    same = (e, h) => e ? h != null && (H.get(e) == h || (H.get(e) || e.outerHTML) == parse(h).outerHTML) : h == null,
    ver = s => +s.root.dataset.version || 0,
    opt = (s, k) => s.root.dataset[k] == 'true',
    sig = e => e.tagName + '.' + e.className,
    rect = e => e.getBoundingClientRect(),
    sec = (s, k) => s.secs.get(k) || fail(),
    cell = (s, k) => s.cells.get(k) || fail(),
    // A cell is held (not reloaded) while the user is in one of its text fields.
    dirty = (e, a = D.activeElement) => e.contains(a) && (a.isContentEditable || /^(TEXTAREA|SELECT)$/.test(a.tagName) ||
      a.tagName == 'INPUT' && !/^(checkbox|radio|button|submit|reset|range|color|file)$/.test(a.type)),
    say = (id, t) => { const e = D.getElementById(id); e && (e.textContent = t) },
    // The connection as people see it: connected, reconnecting or offline, and what waits to be sent.
    shown = k => {
      const e = D.getElementById('livelist-status'), n = Q.size;
      now = k;
      e && (e.dataset.state = k, e.textContent = { connected: 'Connected', reconnecting: 'Reconnecting…', offline: 'Offline' }[k] +
        (n ? ` · ${n} not sent yet` : ''));
    },
    lost = () => shown(navigator.onLine ? 'reconnecting' : 'offline'),
    // A cell's name for announcements: its [data-label], else its text.
    label = e => { const l = e.querySelector('[data-label]'); return (l ? l.dataset.label : e.textContent).trim().slice(0, 80) },
    note = (x, i, e) => x && x.n[i].push(label(e)),
    // Keeps focus in a cell that is replaced or removed: the control at the same place in `n`.
    spot = (e, a = D.activeElement) => e.contains(a) ? [...e.querySelectorAll('*')].indexOf(a) : -1,
    refocus = (n, i) => { const c = n && i >= 0 && n.querySelectorAll('*')[i]; c && c.focus && c.focus({ preventScroll: true }) },
    // Cells report by key; a header or footer (the section's first or last child) by section and part,
    // seen under "part\0section" (keys never hold a NUL).
    io = W.IntersectionObserver && new IntersectionObserver(list => {
      for (const x of list) {
        const e = x.target, k = e.dataset.cell, s = S.get(e.closest('[data-list]')), v = x.isIntersecting,
          p = k == null && e.parentNode, o = p ? { section: p.dataset.section, part: e.nextElementSibling ? 'header' : 'footer' } : { cell: k },
          id = p ? o.part + '\0' + o.section : k;
        if (s && (p ? e.isConnected && s.secs.get(o.section) == p : s.cells.get(k) == e) && v != s.seen.has(id)) {
          v ? s.seen.add(id) : s.seen.delete(id); p ? send(s, v ? 'visible' : 'hidden', o) : seen(s, k, v);
        }
      }
    }),
    // Cells' reports wait a moment and go together: one post per kind, the keys joined by NUL (which
    // no key holds). A cell that came and went meanwhile cancels out (its reports alternate).
    seen = (s, k, v) => {
      const b = s.vis || (s.vis = new Map());
      b.has(k) ? b.delete(k) : b.set(k, v);
      s.visT || (s.visT = setTimeout(() => {
        const m = s.vis; s.vis = s.visT = 0;
        for (const v of [true, false]) {
          const ks = [...m].filter(x => x[1] == v).map(x => x[0]);
          ks.length && send(s, v ? 'visible' : 'hidden', ks.length == 1 ? { cell: ks[0] } : { cells: ks.join('\0') });
        }
      }, 50));
    },
    watch = e => io && e.dataset.visibility == 'true' && io.observe(e),
    unwatch = e => io && io.unobserve(e);

  // Actions: the form's own body (with the submitter), sent without leaving the page.
  // (The form's own attribute: f.action is its buttons named "action".)
  const act = f => f && f.tagName == 'FORM' && /\/actions$/.test(f.getAttribute('action')) && f.getAttribute('action');
  // Each action has a key of its own, sent again with it when it is resent: the server runs it once.
  function post(f, d, b, k) {
    const body = new URLSearchParams(d) + '';
    k = k || Date.now().toString(36) + Math.random().toString(36).slice(2);
    Q.delete(body);
    fetch(act(f), { method: 'POST', credentials: 'same-origin', headers: { 'LiveList-Action': '1', 'Content-Type': 'application/x-www-form-urlencoded', 'Idempotency-Key': k }, body })
      .then(r => {
        if (!r.ok) return r.json().then(j => j.detail, () => r.status).then(t => say('livelist-news', 'Not saved: ' + t));
        for (const e of f.elements) if (e.dataset.reset && e.value && d.get(e.name) == e.value) {
          const a = D.activeElement;
          e.value = ''; (a == b || a == D.body) && e.focus();
        }
        now && shown(now);
        // The server took it, so it is back: reconnect now rather than after the stream's backoff.
        now && now != 'connected' && !stopped && (tries = 0, connect());
      }, () => {
        Q.set(body, [f, d, b, k]); lost(); setTimeout(flush, 4 * L.delay);
        say('livelist-news', 'Not sent yet: kept until the server is back');
      });
  }
  const flush = () => { for (const [k, a] of [...Q]) Q.delete(k), post(...a) };

  function send(s, type, o) {
    const k = meta('livelist-csrf');
    k && fetch(url(`/lists/${enc(s.name)}/actions`), { method: 'POST', credentials: 'same-origin', keepalive: true,
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': k }, body: JSON.stringify({ type, ...o }) }).catch(() => {});
  }
  // Headers and footers that report visibility (a section's first or last child): observed from load
  // and after every changeset (a new or reloaded one is a new element), forgotten once gone. Only the
  // sections' own children are looked at, never the cells.
  function sups(s) {
    for (const e of s.sup || []) e.isConnected || (unwatch(e), s.sup.delete(e));
    s.sup = s.sup || new Set();
    for (const x of s.secs.values()) for (const e of [x.firstElementChild, x.lastElementChild])
      e && !s.sup.has(e) && e.dataset.visibility == 'true' && (s.sup.add(e), watch(e));
  }

  function st(root) {
    let s = S.get(root);
    // A windowed list (data-window) is livelist-window.js's: its cells are not indexed here.
    if (!s) S.set(root, s = { root, name: root.dataset.list, held: new Map(), seen: new Set() }), root.dataset.window || index(s);
    return s;
  }

  // The key -> element maps, rebuilt at load and on reset, kept by every op in between.
  function index(s) {
    s.secs = new Map(); s.cells = new Map();
    for (const e of s.root.children) if (e.dataset.section != null) s.secs.set(e.dataset.section, e), box(s, e, 1);
    for (const e of s.root.querySelectorAll('[data-cell]')) s.cells.set(e.dataset.cell, e), H.set(e, e.outerHTML), watch(e);
    sups(s);
  }

  // The cells container: the child that is neither header (first) nor footer (last). With two children
  // and no cells yet, the one shaped like the other sections' containers (tag and class) wins.
  function box(s, e, soft) {
    let b = B.get(e);
    const c = e.children, n = c.length;
    if (!b) {
      if (n != 2) b = c[n >> 1], s.sig = b && sig(b);
      else if (!soft) b = [...c].find(x => x.querySelector('[data-cell]') || sig(x) == s.sig) || c[c[0].tagName == 'HEADER' ? 1 : 0];
      b ? B.set(e, b) : soft || fail();
    }
    return b;
  }

  // Moves keep the node: moveBefore keeps focus and media; the fallback restores focus and caret.
  function mv(p, e, ref) {
    const a = D.activeElement, inside = e.contains(a), sel = inside && [a.selectionStart, a.selectionEnd];
    if (L.moveBefore && p.moveBefore && e.isConnected) try { return p.moveBefore(e, ref) } catch (_) {}
    p.insertBefore(e, ref);
    if (inside && D.activeElement != a) { a.focus({ preventScroll: true }); try { a.setSelectionRange(...sel) } catch (_) {} }
  }
  const put = (p, e, a) => (a && a.parentNode != p && fail(), mv(p, e, a ? a.nextSibling : p.firstChild)),
    into = (s, o, e) => put(box(s, sec(s, o.section)), e, o.after == null ? null : cell(s, o.after));

  function drop(s, k, e) {
    if (s.cells.get(k) == e) s.cells.delete(k), s.held.delete(k), s.seen.delete(k);
    unwatch(e);
  }
  function swap(s, k, e, h, x) {
    const n = made(h), i = spot(e);
    unwatch(e); e.replaceWith(n); s.cells.set(k, n); s.held.delete(k); watch(n); refocus(n, i);
    x && x.f && opt(s, 'animateReloads') && fx(n, 'livelist-reload');
  }
  // A removed element fades out as a detached copy, so the list itself settles at once.
  function out(x, e, k) {
    const r = x.f && x.f.get(k);
    if (r && r.bottom > 0 && r.top < innerHeight) {
      const g = e.cloneNode(true);
      g.setAttribute('aria-hidden', 'true'); g.classList.add('livelist-exit');
      Object.assign(g.style, { position: 'fixed', margin: 0, left: r.left + 'px', top: r.top + 'px', width: r.width + 'px', height: r.height + 'px' });
      D.body.append(g); setTimeout(() => g.remove(), L.ms);
    }
    e.remove();
  }

  const OPS = {
    deleteSection(s, o, x) {
      const e = sec(s, o.section);
      for (const c of e.querySelectorAll('[data-cell]')) drop(s, c.dataset.cell, c);
      s.secs.delete(o.section); out(x, e, 's' + o.section);
    },
    insertSection(s, o) {
      if (s.secs.has(o.section)) fail();
      const e = parse(o.html), b = e.children[o.header == null ? 0 : 1] || fail();
      B.set(e, b); s.sig = sig(b);
      put(s.root, e, o.after == null ? null : sec(s, o.after)); s.secs.set(o.section, e);
    },
    moveSection: (s, o) => put(s.root, sec(s, o.section), o.after == null ? null : sec(s, o.after)),
    // An unchanged header or footer stays (a field being typed in keeps focus and text).
    reloadSection(s, o) {
      const e = sec(s, o.section), b = box(s, e), h = b.previousElementSibling, f = b.nextElementSibling;
      same(h, o.header) || (h && h.remove(), o.header != null && b.before(parse(o.header)));
      same(f, o.footer) || (f && f.remove(), o.footer != null && b.after(parse(o.footer)));
    },
    delete(s, o, x) {
      const e = cell(s, o.cell), i = spot(e), n = e.nextElementSibling || e.previousElementSibling;
      note(x, 1, e); drop(s, o.cell, e); out(x, e, 'c' + o.cell); refocus(n, i);
    },
    insert(s, o, x) {
      if (s.cells.has(o.cell)) fail();
      const e = made(o.html);
      into(s, o, e); s.cells.set(o.cell, e); watch(e); note(x, 0, e);
    },
    move: (s, o, x) => (note(x, 2, cell(s, o.cell)), into(s, o, cell(s, o.cell))),
    reload(s, o, x) { const e = cell(s, o.cell); dirty(e) ? s.held.set(o.cell, o.html) : swap(s, o.cell, e, o.html, x) },
    // A keyed reconciliation: sections and cells whose keys survive keep their nodes (focus, caret,
    // typed text, <details> state); only changed HTML is replaced, then nodes are moved into place.
    reset(s, o) {
      const r = s.root, secs = new Map(), cells = new Map(), at = (p, n, i) => p.children[i] != n && mv(p, n, p.children[i] || null);
      o.sections.forEach((x, i) => {
        let e = s.secs.get(x.key), b;
        if (e && e.parentNode == r) {
          b = box(s, e);
          same(b.previousElementSibling, x.header) && same(b.nextElementSibling, x.footer) || OPS.reloadSection(s, { section: x.key, header: x.header, footer: x.footer });
        } else e = parse(x.html), B.set(e, b = e.children[x.header == null ? 0 : 1] || fail()), s.sig = sig(b);
        secs.set(x.key, e); at(r, e, i);
        x.cells.forEach((c, j) => {
          let n = s.cells.get(c.key);
          n && r.contains(n) || (n = 0);
          if (same(n, c.html)) s.held.delete(c.key);
          else if (n && dirty(n)) s.held.set(c.key, c.html);
          else { const m = made(c.html); n && (unwatch(n), n.replaceWith(m)); watch(n = m) }
          cells.set(c.key, n); at(b, n, j);
        });
      });
      for (const [k, e] of s.cells) cells.get(k) != e && drop(s, k, e);
      for (const e of [...r.children]) if (secs.get(e.dataset.section) != e) e.remove();
      for (const e of secs.values()) for (const c of [...box(s, e).children]) cells.get(c.dataset.cell) != c && c.remove();
      s.secs = secs; s.cells = cells;
    }
  };

  // Protocol rules: ignore what is not newer; apply a changeset from our version or any newer reset;
  // resynchronise on a gap or on an op that cannot apply. Returns whether the changeset applied.
  function apply(root, cs, force) {
    if (root.dataset.window) return W.LLW ? LLW(root, cs, force) : false; // its script loads: it catches up
    const s = st(root), v = ver(s), ops = cs.ops || [], reset = ops.length == 1 && ops[0].op == 'reset';
    if (!force) {
      if (cs.version <= v) return false;
      // (What comes during a resync is dropped: the resync looks again when it ends behind it.)
      if (s.bad || cs.from != v && !reset) return s.ahead = Math.max(s.ahead || 0, cs.version), resync(s), false;
    }
    const x = pre(s, cs);
    try { for (const o of ops) (OPS.hasOwnProperty(o.op) ? OPS[o.op] : fail)(s, o, x) } catch (_) { s.bad = 1; resync(s); return false }
    s.bad = 0;
    root.dataset.version = cs.version;
    sups(s);
    settle(s, x);
    const t = x.n.map((l, i) => l.length ? ['Added', 'Removed', 'Moved'][i] + ': ' + (l.length > 3 ? l.length + ' items' : l.join(', ')) : '').filter(t => t).join('. ');
    t && say('livelist-news', t);
    emit(root, 'patch', cs); reset && emit(root, 'reset', cs);
    return true;
  }

  function scroller(e) {
    for (; e; e = e.parentElement) if (/auto|scroll/.test(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight) return e;
    return D.scrollingElement;
  }

  // Before the ops: first rects (FLIP), whether the list sits at its end, the first visible cells.
  function pre(s, cs) {
    const x = { n: [[], [], []] }, keep = opt(s, 'keepOffset'), sc = (keep || opt(s, 'stickBottom')) && (x.sc = scroller(s.root));
    if (cs.animate !== false && opt(s, 'animate') && (opt(s, 'animateScrolling') || performance.now() - scrolled > 150) &&
      !matchMedia('(prefers-reduced-motion: reduce)').matches) {
      x.f = new Map();
      for (const [k, e] of s.secs) x.f.set('s' + k, rect(e));
      for (const [k, e] of s.cells) x.f.set('c' + k, rect(e));
    }
    if (sc && opt(s, 'stickBottom') && sc.scrollHeight - sc.scrollTop - sc.clientHeight < 2) x.end = 1;
    else if (keep) {
      const top = sc == D.scrollingElement ? 0 : rect(sc).top, a = s.root.querySelectorAll('[data-cell]');
      let lo = 0, hi = a.length;
      while (lo < hi) { const m = lo + hi >> 1; rect(a[m]).bottom > top ? hi = m : lo = m + 1 }
      x.keep = [].slice.call(a, lo, lo + 8).map(e => [e, rect(e).top]);
    }
    return x;
  }

  // After the ops: restore the viewport, then play FLIP moves and enter animations.
  function settle(s, x) {
    const sc = x.sc;
    if (x.end) sc.scrollTop = sc.scrollHeight;
    else if (x.keep) for (const [e, y] of x.keep) if (e.isConnected) { sc.scrollTop += rect(e).top - y; break }
    if (!x.f) return;
    const m = [], d = new Map();
    for (const [p, map] of [['s', s.secs], ['c', s.cells]]) for (const [k, e] of map) {
      const a = x.f.get(p + k), b = a && rect(e);
      m.push(a ? [e, a.left - b.left, a.top - b.top] : [e]);
    }
    const moved = m.filter(([e, dx, dy]) => {
      if (dx == null) return fx(e, 'livelist-enter'), 0;
      const q = d.get(e.parentNode.parentNode) || [0, 0], X = dx - q[0], Y = dy - q[1];
      if (Math.abs(X) + Math.abs(Y) < .5) return 0;
      d.set(e, [dx, dy]); fx(e, 'livelist-move', `translate(${X}px,${Y}px)`);
      return 1;
    });
    if (moved.length) { D.body.offsetWidth; for (const [e] of moved) e.classList.add('livelist-move'), e.style.transform = '' }
  }

  // Transient classes and styles; the element's own class and style attributes come back afterwards.
  function fx(e, c, tf) {
    const o = O.get(e) || [e.getAttribute('class'), e.getAttribute('style')], t = o[2] = {};
    O.set(e, o);
    if (tf) e.classList.remove(c), e.style.transform = tf; else e.classList.add(c);
    setTimeout(() => {
      if (o[2] != t) return;
      O.delete(e);
      o[0] == null ? e.removeAttribute('class') : e.className = o[0];
      // Reading the attribute first makes Chromium write back its lazily kept inline style, else the
      // removal misses it and style="" appears later.
      o[1] == null ? e.getAttribute('style') + e.removeAttribute('style') : e.style.cssText = o[1];
    }, L.ms + 50);
  }

  // Catch up: the changes since our version; after a failed op, the whole snapshot as a reset.
  function resync(s) {
    if (s.sync || !s.root.isConnected) return;
    s.sync = 1;
    const v = ver(s), bad = s.bad, n = url('/lists/' + enc(s.name));
    fetch(bad ? n : n + '/changes?since=' + v, { headers: { Accept: 'application/json' } })
      .then(r => r.ok ? r.json() : Promise.reject())
      .then(j => {
        s.sync = 0;
        bad ? apply(s.root, { protocol: 1, list: j.list, from: v, version: j.version, ops: [{ op: 'reset', sections: j.sections }] }, 1) : apply(s.root, j);
        s.ahead > ver(s) && !s.bad && resync(s);
      }, () => { s.sync = 0; setTimeout(() => resync(s), 4 * L.delay) });
  }

  // One stream per page: the list's own route for one list, the multiplexed route for several.
  function close() { clearTimeout(timer); es && es.close(); es = null }
  function connect() {
    close();
    const ss = [...S.values()].filter(s => s.root.isConnected), one = ss.length == 1 && ss[0];
    if (stopped || !ss.length || D.hidden) return;
    const u = url(one ? `/lists/${enc(one.name)}/events?since=${ver(one)}` : '/events?' + ss.map(s => 'list=' + enc(s.name)).join('&') +
      '&since=' + enc(ss.map(s => s.name + ':' + ver(s)).join(','))),
      e = es = new (L.ES || EventSource)(u), all = t => ss.forEach(s => emit(s.root, t));
    e.onopen = () => {
      tries = 0; all('open'); shown('connected'); flush(); // and what could not be sent while away
    };
    e.addEventListener('patch', m => {
      let c;
      try { c = JSON.parse(m.data) } catch (_) { return }
      // A reset to version 0 of a list held at a later one: its viewer may no longer see it (what a
      // name without a list answers), as after a reconnect that a revocation refused.
      for (const s of ss) (one || s.name == c.list) && (c.version || !ver(s) ? apply(s.root, c) : deny(s));
    });
    // Access to a list was revoked: clear it, stop asking for it, tell the page; the rest go on.
    e.addEventListener('denied', m => {
      let c;
      try { c = JSON.parse(m.data) } catch (_) { return }
      for (const s of ss) (one || s.name == c.list) && deny(s);
      S.size ? connect() : (stopped = 1, close(), shown('offline'));
    });
    e.onerror = () => {
      all('reconnecting'); lost();
      if (e.readyState != 2 || es != e) return; // the browser reconnects by itself
      es = null;
      const d = Math.min(L.max, L.delay * 2 ** tries++) * (.75 + Math.random() / 2), again = () => { timer = setTimeout(connect, d) };
      // EventSource hides the status: ask once; 204 means the list is gone for good, 404 that it is
      // gone or refused to this viewer (alike on purpose), 401 that nobody signed in may see it (on the
      // multiplexed route: none of its lists, as after a sign-out).
      const ac = new AbortController();
      fetch(u, { signal: ac.signal, headers: { Accept: 'text/event-stream' } })
        .then(r => {
          ac.abort();
          const c = r.status;
          (c == 401 || c == 404) && ss.forEach(deny);
          c == 204 && one || (c == 401 || c == 404) && !S.size ? (stopped = 1, shown('offline')) : again();
        }, again);
    };
  }

  function deny(s) {
    S.delete(s.root) && (s.root.replaceChildren(), emit(s.root, 'denied'));
  }

  // When the person last scrolled (capture: scroll events do not bubble): changes are not animated
  // during a scroll unless the list asks for it (data-animate-scrolling).
  D.addEventListener('scroll', () => { scrolled = performance.now() }, { capture: true, passive: true });
  D.addEventListener('visibilitychange', () => D.hidden ? close() : es || connect());
  W.addEventListener('offline', lost);
  W.addEventListener('online', () => { if (now != 'connected' && !stopped) tries = 0, shown('reconnecting'), connect() });
  const live = () => S.size && W.EventSource && meta('livelist-connect') != 'off';
  D.addEventListener('submit', e => {
    const f = e.target, b = e.submitter;
    live() && act(f) && (e.preventDefault(), post(f, new FormData(f, b), b));
  });
  D.addEventListener('change', e => {
    const t = e.target, f = t.form, d = live() && t.type == 'checkbox' && !t.name && act(f) && new FormData(f);
    d && (d.set('action', t.value), post(f, d, t));
  });
  D.addEventListener('click', e => {
    const t = e.target, c = t.closest && t.closest('[data-cell]'), s = c && S.get(c.closest('[data-list]'));
    s && !t.closest('input,select,textarea,button,label,a[href],[contenteditable]') && send(s, 'select', { cell: c.dataset.cell });
  });
  // A held reload lands when focus leaves its cell.
  D.addEventListener('focusout', e => {
    const c = e.target.closest && e.target.closest('[data-cell]');
    c && setTimeout(() => {
      const s = S.get(c.closest('[data-list]')), k = c.dataset.cell, h = s && s.held.get(k);
      h != null && s.cells.get(k) == c && !dirty(c) && swap(s, k, c, h);
    });
  });

  const load = f => !D.head.append(Object.assign(D.createElement('script'), { src: url(f) }));
  function start() {
    for (const r of D.querySelectorAll('[data-list]')) st(r);
    D.querySelector('[data-window]') && load('/livelist-window.js');
    if (meta('livelist-connect') != 'off' && W.EventSource) {
      connect();
      // Tabs of one origin share one stream: livelist-shared.js sets L.ES. Each tab says hello (0) when
      // it starts and answers a hello (1), so both tabs learn of the other and each loads that file once.
      if (!bc && W.isSecureContext && W.BroadcastChannel) {
        bc = new BroadcastChannel('livelist');
        bc.onmessage = m => {
          m.data || bc.postMessage(1);
          bc.s || (bc.s = load('/livelist-shared.js'));
        };
        bc.postMessage(0);
      }
    }
  }
  W.LiveList = { apply: (r, c) => apply(r, c), start, connect: () => { stopped = 0; tries = 0; connect() }, close: () => { stopped = 1; close() },
    resync: r => resync(st(r)), options: L, state: r => S.get(r), seen: (r, k, v) => seen(st(r), k, v) };
  D.readyState == 'loading' ? D.addEventListener('DOMContentLoaded', start) : start();
})();
