// The one-file report's viewer (ui/report/page.py inlines it). Reads the JSON islands and builds the Metrics
// sub-tabs (charts drawn when their sub-tab first opens) and the groups browser. Text from the data is only
// ever set with textContent or as an attribute value, never parsed as HTML.
(() => {
  'use strict';
  const read = (id) => JSON.parse(document.getElementById(id).textContent);
  const data = read('crosscheck-data');
  const charts = read('crosscheck-charts');
  const images = read('crosscheck-images');
  const runs = data.run_order;
  const texts = data.texts;  // responses and traces, written once (answers hold their index)
  const text = (i) => (i === null || i === undefined ? null : texts[i]);
  const patternLabel = Object.fromEntries(data.patterns);
  const MARK = { correct: '✓', wrong: '✗', invalid: '⚠', api_error: '⊘', missing: '–' };

  const el = (tag, props = {}, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null) continue;
      if (k === 'text') e.textContent = String(v);
      else if (k === 'cls') e.className = v;
      else if (k.startsWith('data-') || k === 'title' || k === 'src' || k === 'alt') e.setAttribute(k, String(v));
      else e[k] = v;
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid);
    return e;
  };

  // ------------------------------------------------------------------ Metrics sub-tabs and charts
  const tabs = [...document.querySelectorAll('.cc-sec-tab')];
  const secs = [...document.querySelectorAll('.cc-sec')];
  const drawCharts = (sec) => {
    sec.querySelectorAll('.cc-chart').forEach((div) => {
      const fig = charts[div.dataset.chart];
      if (div.dataset.drawn || !fig || !window.Plotly) return;
      div.dataset.drawn = '1';
      window.Plotly.newPlot(div, fig.data, fig.layout, { displaylogo: false, responsive: true });
    });
  };
  const showSection = (n) => {
    secs.forEach((s) => { s.hidden = s.dataset.sec !== String(n); });
    tabs.forEach((t) => t.classList.toggle('cc-on', t.dataset.sec === String(n)));
    if (secs[n]) drawCharts(secs[n]);
  };
  tabs.forEach((t) => t.addEventListener('click', () => showSection(Number(t.dataset.sec))));
  if (secs.length) showSection(0);
  // the map of where runs disagree: drawn at once; a click on a cell opens its group ([group, run] customdata)
  document.querySelectorAll('#cc-why .cc-chart').forEach((div) => {
    const fig = charts[div.dataset.chart];
    if (!fig || !window.Plotly) return;
    window.Plotly.newPlot(div, fig.data, fig.layout, { displaylogo: false, responsive: true }).then((gd) => {
      gd.on('plotly_click', (ev) => {
        const pt = ev && ev.points && ev.points[0];
        if (pt && pt.customdata) location.hash = 'group=' + encodeURIComponent(pt.customdata[0]);
      });
    });
  });

  // ------------------------------------------------------------------ groups
  const groups = data.groups;
  const byId = new Map(groups.map((g, i) => [g.id, i]));
  const haystack = groups.map((g) => (g.id + '\n' + g.items.map((it) => it.question || '').join('\n')).toLowerCase());
  const pick = document.getElementById('cc-g-pattern');
  const search = document.getElementById('cc-g-search');
  const list = document.getElementById('cc-g-list');
  const view = document.getElementById('cc-g-view');
  const count = document.getElementById('cc-g-count');
  const PAGE = 200;
  let shown = [];
  let current = -1;
  let limit = PAGE;

  const counts = {};
  groups.forEach((g) => g.patterns.forEach((p) => { counts[p] = (counts[p] || 0) + 1; }));
  pick.append(el('option', { value: '', text: `All groups written (${groups.length})` }));
  data.patterns.forEach(([key, label]) => pick.append(el('option', { value: key, text: `${label} (${counts[key] || 0})` })));

  const outcome = (a) => (a ? a[2] : 'missing');  // the island's outcome label (core.outcomes.outcome_label)
  // a run's verdict on a group: [k correct, n items, answered items, category, pattern keys]
  const verdict = (v) => (v[2] ? `${v[0] === v[1] ? '✓' : '✗'} ${v[0]}/${v[1]}` : '–');

  const filter = () => {
    const p = pick.value;
    const q = search.value.trim().toLowerCase();
    shown = groups.map((_, i) => i).filter((i) => (!p || groups[i].patterns.includes(p)) && (!q || haystack[i].includes(q)));
    limit = PAGE;
    drawList();
  };

  const drawList = () => {
    list.replaceChildren();
    shown.slice(0, limit).forEach((i) => {
      const g = groups[i];
      const strip = el('span', { cls: 'cc-strip' });
      g.runs.forEach((v, r) => strip.append(el('span', {
        cls: `cc-sq ${!v[2] ? 'cc-sq-none' : v[0] === v[1] ? 'cc-sq-ok' : 'cc-sq-bad'}`,
        title: `${runs[r]}: ${verdict(v)}` })));
      const li = el('li', { cls: i === current ? 'cc-on' : '', 'data-group': g.id },
        el('span', { cls: 'cc-gid', text: g.id }), el('span', { cls: 'cc-muted', text: ` ${g.kinds.join(', ')}` }), strip);
      li.addEventListener('click', () => openGroup(i));
      list.append(li);
    });
    if (shown.length > limit) {
      const more = el('li', { cls: 'cc-more', text: `show ${Math.min(PAGE, shown.length - limit)} more of ${shown.length - limit}` });
      more.addEventListener('click', () => { limit += PAGE; drawList(); });
      list.append(more);
    }
    count.textContent = `${shown.length} of ${groups.length} groups`;
  };

  const answerRow = (it, r) => {
    const a = it.answers[r];
    const o = outcome(a);
    const tr = el('tr', { cls: `cc-${o}` }, el('td', { cls: 'cc-run', text: runs[r] }),
      el('td', { cls: 'cc-mark', title: o, text: `${a && a[0] ? a[0] : ''} ${MARK[o]}` }));
    const resp = el('td');
    const said = a ? text(a[3]) : null;
    const trail = a ? text(a[4]) : null;
    if (said) resp.append(el('details', {}, el('summary', { text: said.length > 80 ? said.slice(0, 80) + '…' : said }), el('pre', { cls: 'cc-response', text: said })));
    else resp.append(el('span', { cls: 'cc-muted', text: a ? `(${a[1]}, no response text)` : 'not answered' }));
    const trace = el('td');
    if (trail) trace.append(el('details', {}, el('summary', { text: 'trace' }), el('pre', { cls: 'cc-trace', text: trail })));
    tr.append(resp, trace);
    return tr;
  };

  const itemBlock = (it) => {
    const opts = el('ol', { cls: 'cc-opts' });
    Object.entries(it.options || {}).forEach(([letter, text]) => opts.append(
      el('li', { cls: letter === it.gold ? 'cc-gold' : '', title: letter === it.gold ? 'gold answer' : null },
        el('b', { text: `${letter}. ` }), document.createTextNode(String(text)))));
    const thumbs = el('div', { cls: 'cc-thumbs' });
    it.images.forEach((h, n) => thumbs.append(images[h]
      ? el('figure', {}, el('img', { src: images[h], alt: `image ${n + 1}`, title: h }), el('figcaption', { text: `I${n + 1}` }))
      : el('div', { cls: 'cc-muted', text: `image ${h.slice(0, 8)} not in the store` })));
    const table = el('table', { cls: 'cc-answers' }, el('thead', {}, el('tr', {}, ...['Run', 'Answer', 'Response', 'Trace'].map((h) => el('th', { text: h })))));
    const body = el('tbody');
    runs.forEach((_, r) => body.append(answerRow(it, r)));
    table.append(body);
    return el('article', { cls: 'cc-item', 'data-item': it.item_id },
      el('h4', { text: `${it.item_id} · ${it.kind}${it.variant ? ' / ' + it.variant : ''} · gold ${it.gold}` }),
      el('div', { cls: 'cc-item-body' }, thumbs,
        el('div', { cls: 'cc-item-text' }, el('p', { cls: 'cc-question', text: it.question }), opts, table)));
  };

  const openGroup = (i, fromHash = false) => {
    if (i < 0 || i >= groups.length) return;
    current = i;
    const g = groups[i];
    const vt = el('table', { cls: 'cc-sortable cc-verdicts' }, el('thead', {}, el('tr', {},
      ...['Run', 'Items right', 'Category', 'Patterns'].map((h) => el('th', { text: h })))));
    const vb = el('tbody');
    g.runs.forEach((v, r) => vb.append(el('tr', {}, el('td', { cls: 'cc-label', text: runs[r] }),
      el('td', { text: verdict(v) }), el('td', { text: v[3] || '' }),
      el('td', { cls: 'cc-label', text: v[4].map((p) => patternLabel[p] || p).join('; ') }))));
    vt.append(vb);
    view.replaceChildren(el('div', { cls: 'cc-group', 'data-group': g.id },
      el('h3', { text: `Group ${g.id}` }),
      el('p', { cls: 'cc-muted', text: `split ${g.split} · ${g.items.length} items · ${g.patterns.map((p) => patternLabel[p] || p).join('; ') || 'no failure pattern'}` }),
      vt, ...g.items.map(itemBlock)));
    list.querySelectorAll('li.cc-on').forEach((li) => li.classList.remove('cc-on'));
    const li = [...list.children].find((x) => x.dataset.group === g.id);
    if (li) {  // scroll the list only, never the page
      li.classList.add('cc-on');
      const top = li.offsetTop;  // the list is its offsetParent (position: relative)
      if (top < list.scrollTop || top + li.offsetHeight > list.scrollTop + list.clientHeight) list.scrollTop = top - 40;
    }
    if (!fromHash) history.replaceState(null, '', '#group=' + encodeURIComponent(g.id));
  };

  const step = (d) => {
    if (!shown.length) return;
    const at = shown.indexOf(current);
    const next = at < 0 ? (d > 0 ? 0 : shown.length - 1) : Math.min(shown.length - 1, Math.max(0, at + d));
    if (next >= limit) { limit = next + 1; drawList(); }
    openGroup(shown[next]);
  };

  const fromHash = () => {
    const m = /(?:^#|&)group=([^&]*)/.exec(location.hash);
    if (!m) return false;
    const id = decodeURIComponent(m[1]);
    if (!byId.has(id)) {
      view.replaceChildren(el('p', { cls: 'cc-note', text: `Group ${id} is not in this report (it holds ${groups.length} groups).` }));
      return true;
    }
    const i = byId.get(id);
    if (!shown.includes(i)) { pick.value = ''; search.value = ''; filter(); }
    const at = shown.indexOf(i);
    if (at >= limit) { limit = at + 1; drawList(); }
    openGroup(i, true);
    document.getElementById('cc-groups').scrollIntoView();
    return true;
  };

  pick.addEventListener('change', filter);
  search.addEventListener('input', filter);
  document.addEventListener('keydown', (e) => {
    if (e.target.closest && e.target.closest('input, select, textarea')) return;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === 'j') step(1);
    else if (e.key === 'k') step(-1);
  });
  window.addEventListener('hashchange', fromHash);
  filter();
  if (!fromHash() && shown.length) openGroup(shown[0], true);
  document.body.dataset.readyMs = String(Math.round(performance.now()));  // since navigation start (bench/report.py)
  document.body.dataset.ready = '1';
})();
