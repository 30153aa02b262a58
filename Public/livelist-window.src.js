/*! LiveList windowed lists, protocol 1: docs/PROTOCOL.md "Windowed lists"; readable source: livelist-window.src.js */
/* livelist.js loads this file for a page with a windowed list (a root with data-window) and hands it
 * every changeset of such a list (window.LLW). It keeps the list's model: every key in order (a linked
 * list per section, so an op costs the same anywhere in a list of any length), the HTML it knows and
 * the heights it measured. It renders only the cells near the viewport, between two placeholders whose
 * heights keep the scrollbar true; a change off screen changes the model and nothing else. Cells that
 * scroll into view come from GET /lists/NAME/cells at the client's version. API: LLW.jump(root, key or
 * index) brings a cell into view (#KEY in the URL does so on load); LLW.keys(root) is every key, in order
 * (null while they load). At most 300 cells are in the DOM at once. */
(() => {
  'use strict';
  const D = document, W = window, T = D.createElement('template'),
    M = new Map(), // root element -> model
    E = new WeakMap(), // cell element -> the HTML it was made from
    enc = encodeURIComponent,
    meta = n => (D.querySelector(`meta[name="${n}"]`) || {}).content,
    url = p => (meta('livelist-base') || '') + p,
    fail = () => { throw Error('livelist: out of sync') },
    parse = h => (T.innerHTML = h, T.content.firstElementChild || fail()),
    rect = e => e.getBoundingClientRect(),
    ver = (m, v) => { m.r.dataset.version = m.v = v },
    has = (m, k) => m.sc.has(k) || fail(),
    // A cell is held (not replaced) while the user is in one of its text fields.
    busy = (e, a = D.activeElement) => e.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName),
    mv = (p, e, ref) => { try { return p.moveBefore(e, ref) } catch (_) { p.insertBefore(e, ref) } },
    high = (e, h) => e.getAttribute('height') != h && e.setAttribute('height', h),
    hash = () => { try { return decodeURIComponent(location.hash.slice(1)) } catch (_) { return '' } };

  // The model. Sections: an array of {k, html, hd, ft, f (first key), l (last key)}; cells: next,
  // previous and section by key (nx, pv, sc); H: the HTML known by key; h: measured heights by key.
  function sec(m, k, html, hd, ft, i) {
    const x = { k, html, hd, ft, f: null, l: null };
    m.sx.set(k, x); m.secs.splice(i, 0, x);
  }
  const at = (m, a) => a == null ? 0 : m.secs.indexOf(m.sx.get(a) || fail()) + 1;
  function link(m, k, s, a) {
    const x = m.sx.get(s) || fail(), n = a == null ? x.f : m.nx.get(a);
    a != null && m.sc.get(a) != s && fail();
    m.sc.set(k, s); m.pv.set(k, a); m.nx.set(k, n);
    a == null ? x.f = k : m.nx.set(a, k);
    n == null ? x.l = k : m.pv.set(n, k);
  }
  function unlink(m, k) {
    const x = m.sx.get(m.sc.get(k)), a = m.pv.get(k), n = m.nx.get(k);
    a == null ? x.f = n : m.nx.set(a, n);
    n == null ? x.l = a : m.pv.set(n, a);
  }
  function gone(m, k) { for (const t of [m.sc, m.nx, m.pv, m.H, m.h]) t.delete(k) }
  // A new model from sections in snapshot form (cells) or the range route's (keys); none with `part`
  // (a windowed reset: the keys come with the next load).
  function build(m, ss, part) {
    Object.assign(m, { secs: [], sx: new Map(), nx: new Map(), pv: new Map(), sc: new Map(), dirty: 1, load: part });
    for (const s of ss) {
      sec(m, s.key, s.html, s.header, s.footer, m.secs.length);
      let a = null;
      if (!part) for (const c of s.keys || s.cells.map(c => c.key)) link(m, c, s.key, a), a = c;
    }
  }

  const OPS = {
    deleteSection(m, o) {
      const x = m.sx.get(o.section) || fail();
      for (let k = x.f; k != null;) { const n = m.nx.get(k); gone(m, k); k = n }
      m.sx.delete(o.section); m.secs.splice(m.secs.indexOf(x), 1);
    },
    insertSection: (m, o) => (m.sx.has(o.section) && fail(), sec(m, o.section, o.html, o.header, o.footer, at(m, o.after))),
    moveSection(m, o) {
      const x = m.sx.get(o.section) || fail();
      m.secs.splice(m.secs.indexOf(x), 1); m.secs.splice(at(m, o.after), 0, x);
    },
    reloadSection(m, o) { const x = m.sx.get(o.section) || fail(); x.hd = o.header; x.ft = o.footer },
    delete: (m, o) => (has(m, o.cell), unlink(m, o.cell), gone(m, o.cell)),
    insert: (m, o) => (m.sc.has(o.cell) && fail(), link(m, o.cell, o.section, o.after), m.H.set(o.cell, o.html)),
    move: (m, o) => (has(m, o.cell), o.after == o.cell && fail(), unlink(m, o.cell), link(m, o.cell, o.section, o.after)),
    reload: (m, o) => (has(m, o.cell), m.H.set(o.cell, o.html)),
    // A reset with `total` is windowed: its cells are a window, the keys come from the range route.
    reset(m, o) {
      m.H = new Map();
      for (const s of o.sections) for (const c of s.cells) m.H.set(c.key, c.html);
      build(m, o.sections, o.total != null);
    }
  };

  // Protocol rules (docs/PROTOCOL.md, "Applying changesets"), on the model; the DOM follows at the next
  // frame. While the keys load, changesets are left to the load (it brings the version forward).
  function apply(r, cs, force) {
    const m = mod(r), ops = cs.ops || [], reset = ops.length == 1 && ops[0].op == 'reset';
    if (!force) {
      if (cs.version <= m.v) return false;
      if (m.load || cs.from != m.v && !reset) return m.ahead = Math.max(m.ahead || 0, cs.version), m.load || LiveList.resync(r), false;
    }
    try { for (const o of ops) (OPS.hasOwnProperty(o.op) ? OPS[o.op] : fail)(m, o) } catch (_) {
      // Not what the server thinks: the model again from the server, and every cell's HTML with it.
      m.H = new Map(); load(m); return false;
    }
    ver(m, cs.version); m.dirty = 1;
    m.load ? load(m) : frame(m);
    r.dispatchEvent(new CustomEvent('livelist:patch', { bubbles: true, detail: cs }));
    return true;
  }

  // GET /lists/NAME/cells: with keys, the whole model (at the current version; what changed since
  // ours updates the HTML we know); else the cells from..from+n, merged when at our version.
  function load(m) { m.load = 1; get(m, m.a || +m.r.dataset.first || 0, 100, 1) }
  function get(m, a, n, keys) {
    if (!keys && m.pend) return;
    m.pend = 1;
    fetch(url(`/lists/${enc(m.name)}/cells?from=${a}&count=${n}&version=${m.v}` + (keys ? '&keys=1' : '')), { headers: { Accept: 'application/json' } })
      .then(x => x.ok ? x.json() : Promise.reject())
      .then(j => {
        m.pend = 0;
        if (keys) {
          const c = j.changes;
          for (const o of c ? c.ops : []) o.op == 'reset' ? m.H = new Map() : o.cell != null && o.html != null && m.H.set(o.cell, o.html);
          build(m, j.sections, 0); ver(m, j.version);
          if (!c) for (const x of m.secs) { const s = m.se.get(x.k); s && !s.x && (s.x = x, s.b = s.e.children[x.hd == null ? 0 : 1], s.hd = x.hd, s.ft = x.ft, s.html = x.html) }
          m.ahead > m.v && LiveList.resync(m.r);
        } else if (m.load) return; else j.changes && apply(m.r, j.changes);
        if (j.version == m.v) for (const c of j.cells) m.H.set(c.key, c.html);
        else return setTimeout(() => frame(m), 500);
        // After the keys: the cell that a jump during the load, or the URL's #KEY, asked for.
        const t = keys ? m.jt ?? hash() : '';
        m.jt = null;
        t !== '' && jump(m.r, t) || frame(m);
      }, () => { m.pend = 0; setTimeout(() => keys ? load(m) : frame(m), 2000) });
  }

  // Every key in order and where each cell starts (P, from the root's top, headers included). A cell
  // not measured yet counts the average of the first cells measured (or the root's data-cell-height),
  // fixed from then on: a moving average would move every row below the window at each frame.
  function flat(m) {
    const K = m.K = [], d = m.r.dataset, avg = t => { let s = 0; for (const v of t.values()) s += v; return t.size && s / t.size };
    for (const x of m.secs) { x.s = K.length; for (let k = x.f; k != null; k = m.nx.get(k)) K.push(k); x.n = K.length - x.s }
    m.e0 = d.fixedHeight == 'true' ? +d.cellHeight : m.e0 || avg(m.h);
    m.c0 = m.c0 || avg(m.c);
    const P = m.P = new Float64Array(K.length + 1), est = m.est = m.e0 || +d.cellHeight;
    let y = 0, i = 0;
    for (const x of m.secs) { y += m.c.get(x.k) ?? m.c0; for (; i < x.s + x.n; i++) P[i] = y, y += m.h.get(K[i]) ?? est }
    P[i] = y; m.dirty = 0;
  }
  // The first cell that ends below y.
  function find(P, y) {
    let lo = 0, hi = P.length - 1;
    while (lo < hi) { const c = lo + hi >> 1; P[c + 1] > y ? hi = c : lo = c + 1 }
    return lo;
  }
  function scroller(e) {
    for (e = e.parentElement; e; e = e.parentElement) if (/auto|scroll/.test(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight) return e;
    return D.scrollingElement;
  }
  const frame = m => m.raf || (m.raf = requestAnimationFrame(() => { m.raf = 0; draw(m) }));

  // The window: the cells within a viewport's height of the viewport, reconciled by key (an element
  // whose HTML is unchanged stays, with its focus and state); cells without HTML yet are placeholders
  // until the range route answers. Then the heights are measured and the placeholders sized.
  function draw(m) {
    const r = m.r, g0 = m.g0, g1 = m.g1;
    if (m.load || !r.isConnected) return;
    m.dirty && flat(m);
    const K = m.K, P = m.P, N = K.length, sc = scroller(r), doc = sc == D.scrollingElement, j = m.jk ? K.indexOf(m.jk) : -1,
      vt = doc ? 0 : rect(sc).top, vh = doc ? innerHeight : sc.clientHeight;
    // A jump not shown yet: to where the model has the cell now (heights measured since move it).
    j >= 0 && (sc.scrollTop += P[j] + rect(r).top - vt);
    const y = vt - rect(r).top,
      a = Math.min(find(P, y - vh), Math.max(0, N - 1)), b = Math.min(N, find(P, y + 2 * vh) + 1, a + 300),
      show = m.secs.filter(x => x.n ? x.s < b && x.s + x.n > a : x.s >= a && x.s <= b), now = new Map(), need = [], ss = new Set();
    m.a = a;
    let prev = g0;
    for (const x of show) {
      let s = m.se.get(x.k);
      if (!s || s.html != x.html || s.hd != x.hd || s.ft != x.ft) {
        const e = parse(x.html), c = e.children, bx = c[x.hd == null ? 0 : 1] || fail();
        for (const z of [...c]) z != bx && z.remove();
        x.hd != null && bx.before(parse(x.hd)); x.ft != null && bx.after(parse(x.ft));
        s && s.e.remove(); m.se.set(x.k, s = { e, b: bx, html: x.html, hd: x.hd, ft: x.ft });
      }
      ss.add(x.k);
      prev.nextSibling != s.e && mv(r, s.e, prev.nextSibling); prev = s.e;
      const bx = s.b, li = /^[OU]L$/.test(bx.tagName) ? 'li' : 'div';
      let i = 0;
      for (let j = Math.max(a, x.s); j < Math.min(b, x.s + x.n); j++, i++) {
        const k = K[j], h = m.H.get(k);
        let e = m.ce.get(k);
        if (h == null) {
          need.push(j); e = D.createElement(li); e.className = 'livelist-pending'; e.style.height = m.est + 'px';
        } else if (!e || E.get(e) != h && !busy(e)) {
          const n = parse(h);
          E.set(n, h); e && e.isConnected && e.replaceWith(n); e && hide(m, k, e); e = n;
          io && n.dataset.visibility == 'true' && io.observe(n);
        }
        h != null && now.set(k, e);
        e.setAttribute('aria-setsize', x.n); e.setAttribute('aria-posinset', j - x.s + 1);
        bx.children[i] != e && mv(bx, e, bx.children[i] || null);
      }
      for (let z; (z = bx.children[i]);) z.remove();
    }
    for (const [k, e] of m.ce) now.get(k) != e && (e.remove(), hide(m, k, e));
    for (const [k, s] of m.se) ss.has(k) || (s.e.remove(), m.se.delete(k));
    for (const e of [...r.children]) e != g0 && e != g1 && !ss.has(e.dataset.section) && e.remove();
    m.ce = now;
    r.append(g1);
    // Sizes: the placeholder before puts the first cell where the model has it (its section's header
    // above it); the one after takes the rest of the list's height.
    const x0 = show[0], top = x0 ? P[Math.max(a, x0.s)] - (m.c.get(x0.k) ?? 0) : 0;
    high(g0, Math.max(0, Math.round(top)));
    let moved = 0;
    if (m.r.dataset.fixedHeight != 'true') for (const [k, e] of now) {
      const h = rect(e).height;
      Math.abs((m.h.get(k) ?? m.est) - h) > .5 && (moved = 1);
      m.h.set(k, h);
    }
    for (const x of show) {
      const s = m.se.get(x.k), c = rect(s.e).height - rect(s.b).height;
      Math.abs((m.c.get(x.k) ?? -1) - c) > .5 && (moved = 1, m.c.set(x.k, c));
    }
    high(g1, Math.max(0, Math.round(P[N] - top - (rect(g1).top - rect(g0).bottom))));
    moved && (m.dirty = 1, frame(m));
    need.length && get(m, need[0], need[need.length - 1] - need[0] + 1);
    const t = m.ce.get(m.jk);
    t ? (m.jk = 0, t.scrollIntoView()) : j < 0 && (m.jk = 0);
  }

  // Brings a key or an index into view; the cell shows once its HTML is in.
  function jump(r, t) {
    const m = mod(r);
    if (m.load) return void (m.jt = t);
    m.dirty && flat(m);
    const k = typeof t == 'number' ? m.K[t] : t;
    return m.sc.has(k) && !draw(m, m.jk = k);
  }

  // Visibility reports for the cells of the window (docs/PROTOCOL.md, "The DOM"), in batches as
  // livelist.js sends them; a cell that leaves the window while seen is reported hidden.
  const io = W.IntersectionObserver && new IntersectionObserver(l => {
    for (const x of l) {
      const e = x.target, m = M.get(e.closest('[data-list]')), k = e.dataset.cell;
      m && m.ce.get(k) == e && x.isIntersecting != m.seen.has(k) && see(m, k, x.isIntersecting);
    }
  });
  function hide(m, k, e) { io && io.unobserve(e); m.seen.has(k) && see(m, k, false) }
  function see(m, k, v) {
    const b = m.vis || (m.vis = new Map()), c = meta('livelist-csrf');
    v ? m.seen.add(k) : m.seen.delete(k); b.has(k) ? b.delete(k) : b.set(k, v);
    m.vt || (m.vt = setTimeout(() => {
      const q = m.vis; m.vis = m.vt = 0;
      for (const v of [true, false]) {
        const ks = [...q].filter(x => x[1] == v).map(x => x[0]), o = ks.length == 1 ? { cell: ks[0] } : { cells: ks.join('\0') };
        c && ks.length && fetch(url(`/lists/${enc(m.name)}/actions`), { method: 'POST', credentials: 'same-origin', keepalive: true,
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': c }, body: JSON.stringify({ type: v ? 'visible' : 'hidden', ...o }) }).catch(() => {});
      }
    }, 50));
  }

  // A root's model: the page's cells and sections kept, the keys loaded; a page that starts at a cell
  // (?at=KEY) shows that cell.
  function mod(r) {
    let m = M.get(r);
    if (m) return m;
    const gap = s => r.querySelector(`[data-gap="${s}"]`) || fail(); // the server's placeholders
    M.set(r, m = { r, name: r.dataset.list, v: +r.dataset.version || 0, H: new Map(), h: new Map(), c: new Map(), se: new Map(), ce: new Map(),
      seen: new Set(), secs: [], g0: gap('before'), g1: gap('after') });
    build(m, [], 1);
    for (const e of r.children) e.dataset.section != null && m.se.set(e.dataset.section, { e });
    for (const e of r.querySelectorAll('[data-cell]')) {
      const h = e.outerHTML;
      m.H.set(e.dataset.cell, h); E.set(e, h); m.ce.set(e.dataset.cell, e);
      io && e.dataset.visibility == 'true' && io.observe(e);
    }
    const f = +r.dataset.first && r.querySelector('[data-cell]');
    f && !location.hash && f.scrollIntoView();
    load(m);
    return m;
  }

  const all = () => M.forEach(frame);
  D.addEventListener('scroll', all, { capture: true, passive: true });
  W.addEventListener('resize', all);
  D.addEventListener('focusout', () => setTimeout(all));
  W.addEventListener('hashchange', () => { const k = hash(); M.forEach(m => m.sc.has(k) && jump(m.r, k)) });
  W.LLW = Object.assign(apply, {
    jump,
    keys: r => { const m = mod(r); m.dirty && flat(m); return m.load ? null : m.K }
  });
  for (const r of D.querySelectorAll('[data-window]')) mod(r);
})();
