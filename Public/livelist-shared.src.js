/*! LiveList shared stream: the tabs of an origin share ONE event stream (HTTP/1.1 allows six connections
 * per origin). livelist.js loads this file once a second tab is open; it sets LiveList.options.ES to Shared,
 * an EventSource look-alike, and reconnects. A SharedWorker (this file, named "livelist") holds the one
 * EventSource; without SharedWorker, the tab holding the Web Lock "livelist-leader" does and relays on the
 * BroadcastChannel "livelist-shared". It adds and drops lists with POST BASE/events/TOKEN and reopens the
 * stream itself with every list and version. Each tab holds the lock "livelist-tab-ID" for its life, so
 * the holder learns when a tab is gone. Off outside a secure context and with <meta name="livelist-connect"
 * content="off">. Tests: LiveList.options.sharedMode = 'leader', set before this file loads, forces the
 * leader transport; LiveList.shared is {mode, id, leader: when this tab became the leader (ms), else 0}. */
(() => {
  'use strict';
  const TAB = 'livelist-tab-', locks = self.navigator.locks, enc = encodeURIComponent;

  // Tab -> holder: {t: 'set', id, e: events URL, lists: Map(name -> version)}, {t: 'bye', id}. Holder ->
  // tab: {t: 'ev', k: 'patch'|'denied', l: name, d: raw data}, {t: 'open'}, {t: 'err'}, {t: 'rs', l}
  // (resync: behind the stream); a new leader's {t: 'hello'} (answered with 'set'). out(message, tab)
  // sends to that tab, else to every tab holding message.l (or to all). me: the leader's own tab.
  function holder(ev, out, me) {
    const tabs = new Map(), // tab id -> {m: Map(list -> version the tab held when it came), p: its port}
      ver = new Map(); // list -> the version the stream has brought it to (or will start it from)
    let es, token, on = new Set(), busy, due, timer, tries = 0;

    const want = () => {
      const w = new Set();
      for (const t of tabs.values()) for (const l of t.m.keys()) w.add(l);
      return w;
    };
    const soon = () => due || (due = 1, queueMicrotask(() => { due = 0; sync() }));
    const shut = () => { es && es.close(); es = token = null; on = new Set() };

    function open() {
      const w = [...want()];
      for (const l of [...ver.keys()]) w.includes(l) || ver.delete(l);
      on = new Set(w);
      const e = es = new EventSource(ev + '?' + w.map(l => 'list=' + enc(l)).join('&') +
        '&since=' + enc(w.map(l => l + ':' + ver.get(l)).join(',')));
      e.onopen = () => { tries = 0; out({ t: 'open' }) };
      e.addEventListener('stream', m => { token = JSON.parse(m.data).stream; soon() });
      for (const k of ['patch', 'denied']) e.addEventListener(k, m => {
        let c;
        try { c = JSON.parse(m.data) } catch (_) { return }
        k == 'patch' && ver.get(c.list) < c.version && ver.set(c.list, c.version);
        out({ t: 'ev', k, l: c.list, d: m.data });
      });
      // The browser's own reconnect would name only this URL's lists: close, and open anew later. A
      // refusal (EventSource hides the status: ask once) of 401 or 404 means that none of them may be
      // seen now, as after a sign-out: each tab is told that its lists are denied.
      e.onerror = () => {
        if (es != e) return;
        const ls = [...on], ac = e.readyState == 2 && new AbortController();
        shut(); out({ t: 'err' });
        timer = setTimeout(() => { timer = 0; sync() }, Math.min(30000, 1000 * 2 ** tries++) * (.75 + Math.random() / 2));
        ac && fetch(e.url, { signal: ac.signal, headers: { Accept: 'text/event-stream' } }).then(r => {
          ac.abort();
          if (r.status == 401 || r.status == 404) for (const l of ls) out({ t: 'ev', k: 'denied', l, d: JSON.stringify({ list: l }) });
        }, () => {});
      };
    }

    // Brings the stream to the lists the tabs hold: open it, add and drop lists, or close it.
    function sync() {
      const w = want();
      if (!w.size) return shut();
      if (!es) return timer || open();
      if (!token || busy) return;
      const add = [...w].filter(l => !on.has(l)), drop = [...on].filter(l => !w.has(l)), e = es;
      if (!add.length && !drop.length) return;
      const since = Object.fromEntries(add.map(l => [l, ver.get(l)]));
      for (const l of add) on.add(l);
      for (const l of drop) on.delete(l), ver.delete(l);
      busy = 1;
      fetch(ev + '/' + enc(token), { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ add, since, drop }) })
        .then(r => {
          busy = 0;
          // 404: no such stream here (closed, another node's or viewer's); 5xx: open it anew with every
          // list. Another refusal (too many lists) would refuse that too: say so, keep the stream.
          if (es == e && r.status != 204) r.status == 404 || r.status > 499 ? shut()
            : r.text().then(t => console.error('livelist-shared: POST /events/TOKEN: ' + r.status + ' ' + t));
          soon();
        }, () => { busy = 0; es == e && shut(); soon() });
    }

    // A tab's lists, all of them each time. A list new to the stream starts from the lowest version a
    // tab holds; a tab behind a list that the stream carries already is told to resync.
    function set(id, lists, p) {
      let t = tabs.get(id);
      if (!t) {
        tabs.set(id, t = { m: new Map() });
        id != me && locks && locks.request(TAB + id, () => bye(id)); // granted once the tab is gone
      }
      const old = t.m;
      t.m = lists; t.p = p;
      for (const [l, v] of lists) if (!old.has(l)) {
        if (!on.has(l)) ver.set(l, ver.has(l) ? Math.min(v, ver.get(l)) : v);
        else if (v < ver.get(l)) out({ t: 'rs', l }, id);
      }
      es && es.readyState == 1 && out({ t: 'open' }, id);
      soon();
    }
    function bye(id) { tabs.delete(id) && soon() }
    return { tabs, set, bye };
  }

  // In the SharedWorker: one holder for every tab's port.
  if (typeof document == 'undefined') {
    let h;
    addEventListener('connect', c => {
      const p = c.ports[0];
      p.onmessage = ({ data: d }) => d.t == 'set'
        ? (h = h || holder(d.e, (m, to) => {
          for (const [id, t] of h.tabs) (to ? id == to : !m.l || t.m.has(m.l)) && t.p.postMessage(m);
        })).set(d.id, d.lists, p)
        : h && h.bye(d.id);
    });
    return;
  }

  const D = document, W = window, src = D.currentScript && D.currentScript.src,
    meta = n => (D.querySelector(`meta[name="${n}"]`) || {}).content;

  function init() {
    const LL = W.LiveList;
    if (!LL || LL.shared || !W.isSecureContext || meta('livelist-connect') == 'off') return;
    const base = meta('livelist-base') || '', ev = new URL(base + '/events', location.href).href,
      mode = LL.options.sharedMode || (W.SharedWorker ? 'worker' : 'leader');
    if (mode == 'leader' ? !(locks && W.BroadcastChannel) : mode != 'worker') return;
    const id = Math.random().toString(36).slice(2) + Date.now().toString(36), inst = new Set(),
      me = LL.shared = { mode, id, leader: 0 };
    let ready, due, hub, bc, send;

    // This tab's lists, each at the (lowest) version the page shows, else the one its URL asked for.
    const held = () => {
      const dom = new Map(), o = new Map();
      for (const r of D.querySelectorAll('[data-list]')) {
        const l = r.dataset.list, v = +r.dataset.version || 0;
        dom.set(l, dom.has(l) ? Math.min(v, dom.get(l)) : v);
      }
      for (const s of inst) for (const [l, v] of s.v) o.set(l, dom.has(l) ? dom.get(l) : v);
      return o;
    };
    const push = () => ready && !due && (due = 1, queueMicrotask(() => { due = 0; send({ t: 'set', id, e: ev, lists: held() }) }));
    const fire = (s, k) => s[k] && s[k](new Event(k.slice(2)));
    const recv = m => {
      if (m.to && m.to != id) return;
      const t = m.t, ss = [...inst]; // a handler may close one and open another
      if (t == 'hello') push();
      else if (t == 'ev') for (const s of ss) s.readyState < 2 && s.v.has(m.l) && s.dispatchEvent(new MessageEvent(m.k, { data: m.d }));
      else if (t == 'open') for (const s of ss) s.readyState || (s.readyState = 1, fire(s, 'onopen'));
      else if (t == 'err') for (const s of ss) s.readyState < 2 && (s.readyState = 0, fire(s, 'onerror'));
      else if (t == 'rs') for (const r of D.querySelectorAll('[data-list]')) r.dataset.list == m.l && LL.state(r) && LL.resync(r);
    };

    // The URL livelist.js would have opened: BASE/lists/NAME/events?since=V, or
    // BASE/events?list=A&list=B&since=A:3,B:7 (the names in the same order in both).
    const parse = u => {
      const x = new URL(u, location.href), q = x.searchParams, v = new Map(), one = /\/lists\/([^/]+)\/events$/.exec(x.pathname);
      if (one) return v.set(decodeURIComponent(one[1]), +q.get('since') || 0);
      let s = q.get('since') || '';
      for (const l of q.getAll('list')) {
        const m = s.startsWith(l + ':') && /^(\d+),?/.exec(s.slice(l.length + 1));
        v.set(l, m ? +m[1] : 0);
        m && (s = s.slice(l.length + 1 + m[0].length));
      }
      return v;
    };

    class Shared extends EventTarget {
      constructor(u) {
        super();
        this.url = u; this.readyState = 0; this.v = parse(u);
        inst.add(this); push();
      }
      close() { this.readyState = 2; inst.delete(this) && push() }
    }

    if (mode == 'worker') {
      let w;
      try { w = new SharedWorker(src, 'livelist') } catch (_) { return }
      w.onerror = () => { delete LL.options.ES; LL.connect() }; // no worker after all: the page's own stream
      w.port.onmessage = m => recv(m.data);
      send = m => w.port.postMessage(m);
    } else {
      bc = new BroadcastChannel('livelist-shared' + base);
      const take = m => m.t == 'set' ? hub.set(m.id, m.lists) : m.t == 'bye' && hub.bye(m.id);
      bc.onmessage = ({ data: m }) => { hub && take(m); recv(m) };
      send = m => hub ? take(m) : bc.postMessage(m);
    }
    // The leader holds the stream and relays its events on the channel (to its own tab directly).
    const lead = () => locks.request('livelist-leader' + base, () => {
      hub = holder(ev, (m, to) => {
        (!to || to == id) && queueMicrotask(() => recv(m));
        to != id && bc.postMessage(to ? { ...m, to } : m);
      }, id);
      me.leader = Date.now();
      push(); bc.postMessage({ t: 'hello' });
      return new Promise(() => {});
    });
    const go = () => { ready = 1; push(); bc && lead() };
    locks ? locks.request(TAB + id, () => (go(), new Promise(() => {}))) : go();
    W.addEventListener('pagehide', () => send({ t: 'bye', id }));
    W.addEventListener('pageshow', e => e.persisted && push());
    LL.options.ES = Shared;
    LL.connect();
  }
  D.readyState == 'loading' ? D.addEventListener('DOMContentLoaded', init) : init();
})();
