"""The Judge tab's browser side: the keyboard queue (KEYS_JS, docs/JUDGE.md "Keyboard"), its style and the key
help line. The queue presses the four stage boxes #jd-s1..#jd-s4, Enter saves, S skips, U undoes; ui.judge
wires it to the handlers."""

from __future__ import annotations

KEYS_JS = r"""
if (!window.__ccJudge) {
  // One keystroke queue per page (docs/JUDGE.md, "Keyboard"). Every key is applied in the order typed; a key
  // typed while an earlier one is still on its way to the server is held and applied once that answer is on
  // screen, so a label or skip always goes to the trace shown when the key is applied and carries the flags
  // shown then. Saves, skips and undos carry the trace id and a sequence number; the server refuses a save
  // for a trace that is not the one it has on screen, and echoes the number in #jd-cur when done.
  var J = window.__ccJudge = {inflight: 0, claimed: false, held: [], seq: 0, wait: 0, action: null};
  var $ = function (sel) { return document.querySelector(sel); };
  J.shown = function () { var el = $('#jd-cur'); return el ? el.getAttribute('data-key') || '' : ''; };
  J.echo = function () { var el = $('#jd-cur'); return el ? +(el.getAttribute('data-seq') || 0) : 0; };
  J.flags = function () {
    return [1, 2, 3, 4].map(function (i) {
      var b = $('#jd-s' + i + ' input[type=checkbox]'); return b ? !!b.checked : true; });
  };
  J.note = function (text) { var el = $('#jd-keynote'); if (el) el.textContent = text; };
  J.busy = function () { return J.inflight > 0 || J.wait > 0; };
  J.apply = function (k) {
    if (k === '1' || k === '2' || k === '3' || k === '4') {
      var box = $('#jd-s' + k + ' input[type=checkbox]');
      if (!box) return;
      J.inflight += 1; J.claimed = true;      // the toggle's round trip (its pre-js sees `claimed`)
      box.click(); J.watch();
      return;
    }
    var op = (k === 'Enter') ? 'save' : (k === 's' || k === 'S') ? 'skip' : 'undo';
    var btn = document.getElementById('jd-' + op);
    if (!btn || (op !== 'undo' && !J.shown())) return;   // no trace on screen: nothing to save or skip
    J.action = J.make(op);
    J.inflight += 1; J.claimed = true;
    btn.click(); J.watch();
  };
  // a click that started no event (a disabled control) must not hold the queue forever
  J.watch = function () {
    setTimeout(function () {
      if (J.claimed) { J.claimed = false; J.action = null; J.inflight = Math.max(0, J.inflight - 1); J.drain(); }
    }, 1500);
  };
  J.make = function (op) { J.seq += 1; return {op: op, key: J.shown(), flags: J.flags(), seq: J.seq}; };
  // pre-js of the toggle, save, skip and undo events: count the round trip once, and hand the action over
  J.begin = function () { if (J.claimed) J.claimed = false; else J.inflight += 1; };
  J.take = function (op) {
    J.begin();
    var a = J.action; J.action = null;
    if (!a || a.op !== op) a = J.make(op);  // a mouse click: what is on screen now
    J.wait = a.seq;
    return JSON.stringify(a);
  };
  J.end = function () {                       // the .then() of every one of those events
    J.inflight = Math.max(0, J.inflight - 1);
    if (J.wait) {
      var want = J.wait, t0 = Date.now();
      var poll = function () {
        if (J.echo() >= want) {
          J.wait = 0;
          var cur = $('#jd-cur');
          if (cur && cur.getAttribute('data-ok') === '0' && J.held.length) {  // refused: keep nothing typed after it
            J.note(J.held.length + ' key(s) typed after the refused action were not applied');
            J.held = [];
          }
          J.drain();
        }
        else if (Date.now() - t0 > 5000) {    // the server never answered with the new trace
          J.wait = 0;
          if (J.held.length) J.note(J.held.length + ' key(s) not applied: the server did not answer');
          J.held = []; J.drain();
        } else setTimeout(poll, 15);
      };
      poll();
    } else setTimeout(J.drain, 0);
  };
  J.drain = function () { while (!J.busy() && J.held.length) J.apply(J.held.shift()); };
  J.reset = function () { J.held = []; J.action = null; J.wait = 0; J.note(''); };
  document.addEventListener('keydown', function (e) {
    var root = document.getElementById('jd-root');
    if (!root || root.offsetParent === null) return;            // the Judge tab is not on screen
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var t = e.target, tag = ((t && t.tagName) || '').toLowerCase();
    var typing = tag === 'textarea' || tag === 'select' || (t && t.isContentEditable) ||
      (tag === 'input' && ['checkbox', 'radio', 'button', 'submit'].indexOf((t.type || '').toLowerCase()) < 0);
    if (typing) { if (e.key === 'Escape') t.blur(); return; }
    var k = e.key;
    if (['1', '2', '3', '4', 'Enter', 's', 'S', 'u', 'U'].indexOf(k) < 0) return;
    if (e.repeat && k === 'Enter') { e.preventDefault(); return; }  // a held-down Enter saves once
    e.preventDefault(); e.stopPropagation();
    J.note('');
    if (J.busy() || J.held.length) J.held.push(k); else J.apply(k);
  }, true);
}
"""

CSS = """
#jd-root .jd-mode{display:inline-block;padding:2px 8px;border-radius:10px;font-size:12px}
#jd-root .jd-unauth{background:#fde68a;color:#713f12}
#jd-root .jd-auth{background:#dcfce7;color:#14532d}
#jd-progress{font-size:15px}
#jd-progress .jd-bar{height:6px;background:var(--background-fill-secondary);border-radius:3px;margin-top:4px}
#jd-progress .jd-bar>div{height:6px;background:#3b82f6;border-radius:3px}
#jd-ff .jd-ffbox{padding:6px 8px;border-radius:6px;font-weight:600}
#jd-ff .jd-ffbad{background:rgba(239,68,68,.14);color:#991b1b}
#jd-ff .jd-ffok{background:rgba(34,197,94,.14);color:#14532d}
.dark #jd-ff .jd-ffbad{color:#ffa198}
.dark #jd-ff .jd-ffok{color:#7ee787}
#jd-view{container-type:inline-size}
@container (max-width: 820px){
 #jd-view .jt-wrap{grid-template-columns:1fr}
 #jd-view .jt-side{display:grid;grid-template-columns:minmax(180px,280px) 1fr;gap:12px;align-items:start}
 #jd-view .jt-side>a{grid-row:span 6}
}
#jd-keys{font-size:12px;color:#6b7280}
#jd-keys kbd{border:1px solid #d1d5db;border-bottom-width:2px;border-radius:4px;padding:0 4px;font-size:11px;
 background:#f9fafb;color:#111}
.dark #jd-keys{color:#9da7b3}
.dark #jd-keys kbd{background:#2d333b;border-color:#545d68;color:#e6edf3}
"""
