// inspect's pages: pan and zoom, marking a finding's nodes, selection,
// filters and live updates. No network but the page's own server, and
// none at all in a report opened from a file. Text from the run is only
// ever moved as DOM text or read from attributes html/template wrote.
(function () {
  'use strict';
  var $ = function (s, r) { return (r || document).querySelector(s); };
  var $$ = function (s, r) { return Array.prototype.slice.call((r || document).querySelectorAll(s)); };
  var body = document.body;
  var report = body.dataset.report === '1';
  var page = body.dataset.page;

  function typing(e) {
    var t = e.target;
    return t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || t.isContentEditable);
  }

  // ---- keys dialog
  var keys = $('#keys');
  function showKeys() { if (keys && !keys.open) { keys.showModal(); } }
  var keysBtn = $('#keys-btn');
  if (keysBtn) { keysBtn.addEventListener('click', showKeys); }
  document.addEventListener('keydown', function (e) {
    if (e.key === '?' && !typing(e)) { e.preventDefault(); showKeys(); }
  });

  // ---- live: poll while something records
  var poll = parseInt(body.dataset.poll || '0', 10) || 2000;
  var live = $('#live');
  function every(fn) {
    var stopped = false;
    function tick() {
      if (stopped) { return; }
      if (document.visibilityState === 'visible') {
        fn(function () { stopped = true; });
      }
      setTimeout(tick, poll);
    }
    setTimeout(tick, poll);
  }
  function parseHTML(text) { return new DOMParser().parseFromString(text, 'text/html'); }

  // ---- runs page
  function initRuns() {
    if ($('#empty')) {
      // no run yet: show the first once it is recorded
      every(function (stop) {
        fetch('/', { headers: { 'Accept': 'text/html' } }).then(function (r) { return r.text(); }).then(function (text) {
          if (!parseHTML(text).getElementById('empty')) { stop(); location.reload(); }
        }).catch(function () {});
      });
      return;
    }
    var form = $('#filters');
    var listing = $('#listing');
    if (!form || !listing) { return; }
    function query() {
      var q = new URLSearchParams(new FormData(form));
      Array.from(q.keys()).forEach(function (k) { if (!q.get(k)) { q.delete(k); } });
      return q;
    }
    var last = '';
    function refresh(push) {
      var q = query();
      if (push) { history.replaceState(null, '', q.toString() ? '?' + q.toString() : location.pathname); }
      q.set('fragment', 'rows');
      return fetch('/?' + q.toString(), { headers: { 'Accept': 'text/html' } }).then(function (r) {
        if (!r.ok) { throw new Error(r.status); }
        return r.text();
      }).then(function (text) {
        if (text === last) { return; }
        last = text;
        var ticked = $$('input[name=run]:checked', listing).map(function (i) { return i.value; });
        var doc = parseHTML('<div>' + text + '</div>');
        listing.replaceChildren.apply(listing, Array.from(doc.body.firstChild.childNodes));
        ticked.forEach(function (id) {
          var box = $$('input[name=run]', listing).filter(function (i) { return i.value === id; })[0];
          if (box) { box.checked = true; }
        });
        markRunning();
      }).catch(function () {});
    }
    function markRunning() {
      var running = $$('.st-running', listing).length > 0;
      if (live) { live.hidden = !running; }
    }
    markRunning();
    // a long task is cut to two lines; a click shows it whole (and hides it again)
    listing.addEventListener('click', function (e) {
      var cut = e.target.closest && e.target.closest('.cut');
      if (cut && !typing(e)) { cut.classList.toggle('open'); }
    });
    var timer = 0;
    var pageInput = form.elements.page;
    function filtered() { if (pageInput) { pageInput.value = ''; } refresh(true); }
    form.addEventListener('submit', function (e) { e.preventDefault(); filtered(); });
    form.addEventListener('change', filtered);
    form.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(filtered, 200); });
    every(function () { refresh(false); });

    var compare = $('#compare');
    if (compare) {
      compare.addEventListener('submit', function (e) {
        var n = $$('input[name=run]:checked', compare).length;
        if (n !== 2) { e.preventDefault(); alert('Tick two runs to compare (' + n + ' ticked).'); }
      });
    }
    var cur = -1;
    document.addEventListener('keydown', function (e) {
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) { return; }
      var list = $$('tr[data-run]', listing);
      if (e.key === '/') { e.preventDefault(); $('#q').focus(); return; }
      if (!list.length) { return; }
      if (e.key === 'j' || e.key === 'k') {
        e.preventDefault();
        cur = Math.max(0, Math.min(list.length - 1, cur + (e.key === 'j' ? 1 : -1)));
        list.forEach(function (tr, i) { tr.classList.toggle('cur', i === cur); });
        var a = $('a', list[cur]);
        if (a) { a.focus(); }
      }
    });
  }

  // ---- graph: pan and zoom by the SVG's viewBox
  var graph = null;
  function initGraph() {
    var wrap = $('#graph');
    var svg = wrap && $('svg', wrap);
    if (!svg || !svg.viewBox || !svg.viewBox.baseVal) { return null; }
    var b = svg.viewBox.baseVal;
    var full = { x: b.x, y: b.y, w: b.width, h: b.height };
    var vb = { x: full.x, y: full.y, w: full.w, h: full.h };
    function aspect() { return (wrap.clientHeight || 1) / (wrap.clientWidth || 1); }
    function apply() { svg.setAttribute('viewBox', vb.x + ' ' + vb.y + ' ' + vb.w + ' ' + vb.h); }
    // The labels stay readable: the graph opens, and Fit draws it, at no
    // less than readPx screen pixels for its smallest box label; a graph
    // larger than the box at that scale shows its top, and is panned
    // (drag, wheel, arrows) or zoomed out (-) from there.
    var readPx = 12;
    var fonts = $$('g.node text', svg).map(function (t) { return parseFloat(t.getAttribute('font-size')) || 0; }).filter(function (f) { return f > 0; });
    var minFont = fonts.length ? Math.min.apply(null, fonts) : 11;
    var floor = readPx / minFont;
    // at scale s, from the top, centred across
    function at(s) {
      var cw = wrap.clientWidth || 1, ch = wrap.clientHeight || 1;
      vb = { w: cw / s, h: ch / s, x: 0, y: full.y };
      vb.x = full.x + (full.w - vb.w) / 2;
      if (vb.h > full.h) { vb.y = full.y - (vb.h - full.h) / 2; }
      apply();
    }
    function fit() {
      var cw = wrap.clientWidth || 1, ch = wrap.clientHeight || 1;
      var s = Math.min(cw / full.w, ch / full.h);
      if (s >= floor) { vb = { x: full.x, y: full.y, w: full.w, h: full.h }; apply(); return; }
      at(floor);
    }
    function width() {
      // the width of the graph, from its top: readable when it is tall
      vb = { x: full.x, y: full.y, w: full.w, h: full.w * aspect() };
      if (vb.h > full.h) { vb.y = full.y - (vb.h - full.h) / 2; }
      apply();
    }
    // open(): the graph across the box's width (at most 1.25 screen pixels
    // a point, at least the floor), the box no taller than the graph then
    // is: a small graph does not float in an empty box.
    function open() {
      var cw = wrap.clientWidth || 1;
      var s = Math.max(Math.min(cw / full.w, 1.25), floor);
      var h = Math.ceil(full.h * s) + 2;
      if (h < wrap.clientHeight) { wrap.style.height = h + 'px'; }
      if (Math.min(cw / full.w, (wrap.clientHeight || 1) / full.h) >= s) { vb = { x: full.x, y: full.y, w: full.w, h: full.h }; apply(); return; }
      at(s);
    }
    function zoom(f, cx, cy) {
      var nw = Math.min(Math.max(vb.w * f, full.w / 80), full.w * 4);
      var k = nw / vb.w;
      if (cx === undefined) { cx = vb.x + vb.w / 2; cy = vb.y + vb.h / 2; }
      vb.x = cx - (cx - vb.x) * k; vb.y = cy - (cy - vb.y) * k; vb.w = nw; vb.h = vb.h * k;
      apply();
    }
    function pan(dx, dy) { vb.x += dx * vb.w; vb.y += dy * vb.h; apply(); }
    function point(e) {
      var r = svg.getBoundingClientRect();
      // with preserveAspectRatio meet the drawing is centred in the box
      var scale = Math.max(vb.w / r.width, vb.h / r.height);
      var ox = (r.width * scale - vb.w) / 2, oy = (r.height * scale - vb.h) / 2;
      return { x: vb.x - ox + (e.clientX - r.left) * scale, y: vb.y - oy + (e.clientY - r.top) * scale, scale: scale };
    }
    function center(el) {
      try {
        var bb = el.getBBox();
        var ctm = el.getCTM(), root = svg.getCTM();
        if (ctm && root) {
          var m = root.inverse().multiply(ctm);
          var p = svg.createSVGPoint(); p.x = bb.x + bb.width / 2; p.y = bb.y + bb.height / 2;
          p = p.matrixTransform(m);
          if (p.x < vb.x || p.x > vb.x + vb.w || p.y < vb.y || p.y > vb.y + vb.h) {
            vb.x = p.x - vb.w / 2; vb.y = p.y - vb.h / 2; apply();
          }
        }
      } catch (err) { /* not drawn yet */ }
    }
    wrap.addEventListener('wheel', function (e) {
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        var p = point(e);
        zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, p.x, p.y);
      } else if (vb.h < full.h * 1.01 || vb.w < full.w * 1.01) {
        e.preventDefault();
        var s = point(e).scale;
        vb.x += e.deltaX * s; vb.y += e.deltaY * s; apply();
      }
    }, { passive: false });
    var drag = null;
    wrap.addEventListener('pointerdown', function (e) {
      if (e.button !== 0) { return; }
      drag = { x: e.clientX, y: e.clientY, vx: vb.x, vy: vb.y, s: point(e).scale, moved: false };
    });
    wrap.addEventListener('pointermove', function (e) {
      if (!drag) { return; }
      var dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) { return; }
      if (!drag.moved) { drag.moved = true; wrap.setPointerCapture(e.pointerId); wrap.classList.add('dragging'); }
      vb.x = drag.vx - dx * drag.s; vb.y = drag.vy - dy * drag.s; apply();
    });
    function endDrag(e) {
      if (drag && drag.moved) {
        wrap.classList.remove('dragging');
        try { wrap.releasePointerCapture(e.pointerId); } catch (err) { /* released */ }
        wrap.dataset.dragged = '1';
        setTimeout(function () { delete wrap.dataset.dragged; }, 0);
      }
      drag = null;
    }
    wrap.addEventListener('pointerup', endDrag);
    wrap.addEventListener('pointercancel', endDrag);
    wrap.addEventListener('keydown', function (e) {
      if (e.target !== wrap && !(e.key === '+' || e.key === '-' || e.key === '=' || e.key === '0')) {
        if (e.key.indexOf('Arrow') === 0) { return; }
      }
      var step = 0.1;
      switch (e.key) {
        case 'ArrowLeft': pan(-step, 0); break;
        case 'ArrowRight': pan(step, 0); break;
        case 'ArrowUp': pan(0, -step); break;
        case 'ArrowDown': pan(0, step); break;
        default: return;
      }
      e.preventDefault();
    });
    $$('[data-zoom]').forEach(function (btn) {
      btn.addEventListener('click', function () {
        var z = btn.dataset.zoom;
        if (z === 'in') { zoom(1 / 1.3); } else if (z === 'out') { zoom(1.3); } else if (z === 'fit') { fit(); } else { width(); }
      });
    });
    open();
    return { zoom: zoom, fit: fit, center: center, svg: svg, wrap: wrap };
  }

  // ---- selection and marks on the run page
  function gNode(id) { return document.getElementById('g-' + id); }
  function bars(id) { return $$('.tl-svg [data-box]').filter(function (el) { return el.dataset.box === id; }); }

  function clearMarks() {
    $$('.hl').forEach(function (el) { el.classList.remove('hl'); });
    $$('.hl-lane').forEach(function (el) { el.classList.remove('hl-lane'); });
    $$('.finding-btn[aria-pressed=true]').forEach(function (b) { b.setAttribute('aria-pressed', 'false'); });
  }
  function mark(ids) {
    clearMarks();
    ids.forEach(function (id) {
      var g = gNode(id);
      if (g) { g.classList.add('hl'); }
      bars(id).forEach(function (el) {
        el.classList.add('hl');
        var lane = el.closest('.lane');
        if (lane) { lane.classList.add('hl-lane'); }
      });
    });
    if (ids.length && graph) {
      var g = gNode(ids[0]);
      if (g) { graph.center(g); }
    }
  }
  var selected = '';
  function select(id, focusGraph) {
    $$('.sel').forEach(function (el) { el.classList.remove('sel'); });
    $$('.box-info').forEach(function (el) { el.hidden = true; });
    var empty = $('#inspector-empty');
    selected = id || '';
    if (!id) { if (empty) { empty.hidden = false; } return; }
    var g = gNode(id);
    if (g) { g.classList.add('sel'); if (graph) { graph.center(g); } if (focusGraph) { g.focus(); } }
    bars(id).forEach(function (el) { el.classList.add('sel'); });
    var info = document.getElementById('info-' + id);
    if (info) { info.hidden = false; if (empty) { empty.hidden = true; } }
  }
  function activate(id) {
    // a second activation of the selected box opens its node
    if (id === selected && !report) {
      var info = document.getElementById('info-' + id);
      var a = info && $('a.open-node', info);
      if (a) { location.href = a.href; return; }
    }
    select(id);
  }

  // bindFindings makes the findings under root mark their boxes.
  function bindFindings(root) {
    $$('.finding-btn', root).forEach(function (btn) {
      btn.addEventListener('click', function () {
        var on = btn.getAttribute('aria-pressed') !== 'true';
        if (!on) { clearMarks(); return; }
        mark((btn.dataset.boxes || '').split(' ').filter(Boolean));
        btn.setAttribute('aria-pressed', 'true');
      });
    });
    $$('button.node-ref', root).forEach(function (btn) {
      btn.addEventListener('click', function () {
        var n = btn.dataset.node;
        if (gNode(n)) { select(n, true); return; }
        // inside a collapsed box: the finding's boxes hold it
        var f = btn.closest('.finding');
        var fb = f && $('.finding-btn', f);
        if (fb) { fb.click(); }
      });
    });
  }

  // loadParts fetches the parts of a large run's page that wait for its
  // audit and cache analysis, and puts each in place as it arrives.
  function loadParts() {
    $$('[data-part]').forEach(function (el) {
      var name = el.dataset.part;
      delete el.dataset.part;
      fetch(location.pathname + '/part/' + encodeURIComponent(name)).then(function (r) {
        if (!r.ok) { throw new Error('the ' + name + ' part: ' + r.status); }
        return r.text();
      }).then(function (text) {
        var doc = parseHTML('<div>' + text + '</div>');
        el.replaceChildren.apply(el, Array.from(doc.body.firstChild.childNodes));
        bindFindings(el);
        if (name === 'findings' && /^#finding-\d+$/.test(location.hash)) {
          var f = $(location.hash + ' .finding-btn');
          if (f) { f.click(); }
        }
      }).catch(function (err) {
        el.textContent = 'Could not load this part: ' + err.message;
      });
    });
  }

  // openDetail opens the node details #node-n7 of a report; false when
  // there are none.
  function openDetail(hash) {
    if (!/^#node-n\d+$/.test(hash || '')) { return false; }
    var d = document.getElementById(hash.slice(1));
    if (!d || d.tagName !== 'DETAILS') { return false; }
    d.open = true;
    return true;
  }

  function initRun() {
    graph = initGraph();
    $$('.graph-svg g.node').forEach(function (g) {
      var id = g.id.replace(/^g-/, '');
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      var t = $('title', g);
      var label = $('text', g);
      g.setAttribute('aria-label', id + ': ' + (label ? label.textContent : (t ? t.textContent : '')));
      g.addEventListener('click', function (e) {
        if (graph && graph.wrap.dataset.dragged) { return; }
        e.stopPropagation();
        activate(id);
      });
      g.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); activate(id); }
      });
    });
    $$('.tl-svg [data-box]').forEach(function (el) {
      el.addEventListener('click', function () { activate(el.dataset.box); });
    });
    bindFindings(document);
    loadParts();
    document.addEventListener('keydown', function (e) {
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) { return; }
      if (e.key === 'Escape') { clearMarks(); select(''); return; }
      if (graph && (e.key === '+' || e.key === '=')) { graph.zoom(1 / 1.3); e.preventDefault(); return; }
      if (graph && e.key === '-') { graph.zoom(1.3); e.preventDefault(); return; }
      if (graph && e.key === '0') { graph.fit(); e.preventDefault(); return; }
      var findings = $$('.finding-btn');
      if ((e.key === 'j' || e.key === 'k') && findings.length) {
        e.preventDefault();
        var cur = findings.findIndex(function (b) { return b.getAttribute('aria-pressed') === 'true'; });
        var next = cur < 0 ? (e.key === 'j' ? 0 : findings.length - 1) : Math.max(0, Math.min(findings.length - 1, cur + (e.key === 'j' ? 1 : -1)));
        if (next !== cur) { findings[next].click(); }
        findings[next].focus();
      }
    });
    // a report's links to the nodes it holds in full open them (#node-n7)
    document.addEventListener('click', function (e) {
      var a = e.target.closest ? e.target.closest('a.node-open') : null;
      if (a) { openDetail(a.getAttribute('href')); }
    });
    window.addEventListener('hashchange', function () { openDetail(location.hash); });
    if (openDetail(location.hash)) { document.getElementById(location.hash.slice(1)).scrollIntoView(); }
    // deep links: ?node=n7 (resolved to its box by the server), #finding-2
    var sel = $('#select');
    if (sel) { select(sel.dataset.box); }
    if (/^#finding-\d+$/.test(location.hash)) {
      var f = $(location.hash + ' .finding-btn');
      if (f) { f.click(); }
    }
    if (body.dataset.live === '1' && !report) {
      if (live) { live.hidden = false; }
      var state = '';
      every(function (stop) {
        fetch(location.pathname + '/state').then(function (r) { return r.json(); }).then(function (s) {
          var now = s.status + '/' + s.nodes + '/' + s.ended;
          if (state && now !== state) { reload(); }
          state = now;
          if (s.status !== 'running') { stop(); if (live) { live.hidden = true; } }
        }).catch(function () {});
      });
    }
  }
  function reload() {
    fetch(location.href).then(function (r) { return r.text(); }).then(function (text) {
      var doc = parseHTML(text);
      var main = $('#main'), fresh = doc.querySelector('#main');
      if (!main || !fresh) { return; }
      var keep = selected;
      main.replaceChildren.apply(main, Array.from(fresh.childNodes));
      body.dataset.live = doc.body.dataset.live || '';
      initRunOnce();
      if (keep) { select(keep); }
    }).catch(function () {});
  }
  var runInits = 0;
  function initRunOnce() {
    // document-level keys are bound once; the rest again after a reload
    if (runInits++ === 0) { initRun(); return; }
    graph = initGraph();
    $$('.graph-svg g.node').forEach(function (g) {
      var id = g.id.replace(/^g-/, '');
      g.setAttribute('tabindex', '0');
      g.addEventListener('click', function () { activate(id); });
    });
    $$('.tl-svg [data-box]').forEach(function (el) { el.addEventListener('click', function () { activate(el.dataset.box); }); });
    bindFindings($('#main'));
    loadParts();
  }

  // ---- node page
  function initNode() {
    document.addEventListener('keydown', function (e) {
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) { return; }
      var a = null;
      if (e.key === 'ArrowLeft') { a = $('a[rel=prev]'); }
      if (e.key === 'ArrowRight') { a = $('a[rel=next]'); }
      if (e.key === 'u') { a = $('#up'); }
      if (a) { e.preventDefault(); location.href = a.href; }
    });
  }

  if (page === 'runs') { initRuns(); }
  if (page === 'run') { initRunOnce(); }
  if (page === 'node') { initNode(); }
})();
