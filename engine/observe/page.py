"""``/``: one self-contained status page (no external files; works offline).

The server renders the first view, the topology drawn inline as SVG included; the page's
own script then refreshes the drawing and the tables from the JSON API every few seconds.
Links are relative, so the page works where ``http_app()`` is mounted under a prefix.
"""

from __future__ import annotations

import json
from html import escape

from engine.observe.svg import ALARM_FAILED_RATIO

__all__ = ["render_page"]

REFRESH_SECS = 3

_STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#202124;background:#f8f9fa}
header{background:#202124;color:#fff;padding:10px 20px;display:flex;gap:18px;
 align-items:center;flex-wrap:wrap}
header h1{font-size:18px;margin:0}header select{font-size:14px}
header .meta{font-size:13px;color:#bdc1c6}
main{padding:12px 20px}section{background:#fff;border:1px solid #dadce0;border-radius:8px;
 padding:10px 14px;margin-bottom:14px;overflow-x:auto}
h2{font-size:15px;margin:4px 0 8px}
table{border-collapse:collapse;font-size:13px;width:100%}
th,td{padding:4px 6px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
td:first-child{white-space:normal;overflow-wrap:anywhere;min-width:7em}
th{background:#f1f3f4;font-weight:600;white-space:normal;vertical-align:bottom}
td.err{color:#c5221f;text-align:left;white-space:normal}
td.same{color:#5f6368;font-style:italic;text-align:left}
#rates{font-size:13px;margin:0 0 8px}#graph svg{display:block}
.empty{color:#5f6368;font-style:italic;font-size:13px}
.warn{color:#b06000}.bad{color:#c5221f;font-weight:600}
"""

_SCRIPT = r"""
(function(){
const state = JSON.parse(document.getElementById('state').textContent);
let refreshes = 0;
const $ = id => document.getElementById(id);
const fmt = v => (v === null || v === undefined || v === '') ? '-' :
  (typeof v === 'number' ? (Number.isInteger(v) ? v.toLocaleString('en') : v.toFixed(3)) : v);
function esc(s){return String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;',
  '"':'&quot;'}[c]));}
function duration(secs){
  const s = Math.round(secs), h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60);
  return h ? h + ' h ' + m + ' min' : (m ? m + ' min ' + (s % 60) + ' s' : s + ' s');
}
const rate = v => (v === null || v === undefined) ? '-' :
  (v >= 100 ? Math.round(v).toLocaleString('en') : v.toFixed(1)) + '/s';
function table(id, cols, rows, empty){
  const el = $(id);
  if (!rows.length){ el.innerHTML = '<p class="empty">' + empty + '</p>'; return; }
  let h = '<table><thead><tr>' + cols.map(c => '<th>' + c[1] + '</th>').join('') +
    '</tr></thead><tbody>';
  for (const r of rows){
    h += '<tr data-id="' + esc(r[cols[0][0]]) + '">';
    if (r._same){  // a window longer than the uptime: the all-time row, not repeated
      h += '<td>' + esc(fmt(r[cols[0][0]])) + '</td><td class="same" colspan="' +
        (cols.length - 1) + '">' + esc(r._same) + '</td></tr>';
      continue;
    }
    h += cols.map(c => {
      const v = r[c[0]];
      const cls = c[2] ? c[2](v, r) : '';
      const text = c[3] ? c[3](v) : fmt(v);
      return '<td' + (cls ? ' class="' + cls + '"' : '') + '>' + esc(text) + '</td>';
    }).join('') + '</tr>';
  }
  el.innerHTML = h + '</tbody></table>';
}
const hot = v => v >= 0.9 ? 'bad' : (v >= 0.6 ? 'warn' : '');
const nonzero = v => v ? 'warn' : '';
// Failures by their share of what the component finished (failedRatio in the window).
const failing = (v, r) => r.failedRatio >= state.alarm ? 'bad' : (v ? 'warn' : '');
const perSec = key => [key, key.replace('PerSec', '').replace(/^./, c => c.toUpperCase()) +
  '/s', null, rate];
function header(t){
  // The input, then each stage behind a repartition hop, as the runner's status line.
  const stages = t.stages || [];
  const stage = s => rate(s.ackedPerSec) + ' acked · pending ' + fmt(s.pending);
  const text = stages.length > 1 ? stages.map(s => s.stage + ': ' + stage(s)).join(' | ') :
    (stages.length ? stage(stages[0]) : '');
  $('uptime').textContent = 'up ' + duration(t.uptimeSeconds) + ' · ' + t.status + ' · ' +
    text;
  $('uptime').title = 'pending: trees the input spouts wait on (their Pending column ' +
    'summed)' + (stages.length > 1 ? '; behind a hop, the trees its reader spout ' +
    'started, which complete after the input\'s' : '') + '. The ackers track ' +
    fmt(t.pending) + ' now: a tree reaches its acker just after its emit and leaves it ' +
    'just before its spout hears, so the two differ by the trees in between.';
  const r = t.rates;
  $('rates').textContent = r.windowSecs === null ? 'rates: after the first second' :
    'now (last ' + Math.round(r.windowSecs) + ' s): ' + rate(r.emittedPerSec) +
    ' emitted · ' + rate(r.ackedPerSec) + ' acked · ' + rate(r.failedPerSec) + ' failed';
}
function render(t){
  header(t);
  const allTime = 'All time (uptime ' + duration(t.uptimeSeconds) + ')';
  table('topology-stats', [['windowPretty','Window'],['emitted','Emitted'],
    ['transferred','Transferred'],['completeLatency','Complete latency (ms)'],
    ['acked','Acked'],['failed','Failed'],['timedOut','Timed out', nonzero]],
    t.topologyStats.map(w => w.sameAsAllTime ?
      Object.assign({}, w, {_same: '= ' + allTime.toLowerCase()}) : w), 'no figures yet');
  table('spouts', [['spoutId','Spout'],['executors','Executors'],['tasks','Tasks'],
    ['emitted','Emitted'],perSec('emittedPerSec'),['transferred','Transferred'],
    ['completeLatency','Complete latency (ms)'],['acked','Acked'],perSec('ackedPerSec'),
    ['failed','Failed', failing],perSec('failedPerSec'),
    ['timedOut','Timed out', nonzero],['pending','Pending'],['inFlightLimit','In-flight limit'],
    ['lastError','Last error', v => v ? 'err' : '']], t.spouts, 'no spouts');
  table('bolts', [['boltId','Bolt'],['executors','Executors'],['tasks','Tasks'],
    ['emitted','Emitted'],['transferred','Transferred'],['capacity','Capacity', hot],
    ['executeLatency','Execute latency (ms)'],['executed','Executed'],
    perSec('executedPerSec'),['processLatency','Process latency (ms)'],['acked','Acked'],
    perSec('ackedPerSec'),['failed','Failed', failing],perSec('failedPerSec'),
    ['lastError','Last error', v => v ? 'err' : '']], t.bolts, 'no bolts');
  table('kafka', [['topic','Topic'],['partition','Partition'],['component','Spout'],
    ['task','Task'],['committed','Committed'],['position','Position'],
    ['highWatermark','High watermark'],['lag','Lag', nonzero]],
    t.kafkaPartitions, 'no Kafka partitions');
  table('errors', [['component','Component'],['task','Task'],['when','When'],
    ['error','Error', () => 'err']], t.errors.map(e => Object.assign({}, e,
    {when: new Date(e.time * 1000).toLocaleTimeString()})), 'no errors');
}
async function refresh(){
  const base = 'api/v1/topology/' + encodeURIComponent(state.topology);
  const q = '?window=' + encodeURIComponent(state.window);
  try {
    const [t, svg] = await Promise.all([
      fetch(base + q).then(r => { if (!r.ok) throw new Error(r.status); return r.json(); }),
      fetch(base + '/graph.svg' + q).then(r => r.text())]);
    render(t);
    $('graph').innerHTML = svg;
    refreshes += 1;
    document.body.dataset.refreshes = refreshes;
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    $('updated').textContent = 'update failed: ' + e.message;
  }
}
for (const id of ['topology', 'window']) {
  const sel = $(id + '-select');
  if (sel) sel.addEventListener('change', () => { state[id] = sel.value;
    const u = new URL(location.href); u.searchParams.set(id, sel.value);
    history.replaceState(null, '', u); refresh(); });
}
if (state.topology) {
  refresh();
  setInterval(refresh, state.refresh * 1000);
} else {
  setTimeout(() => location.reload(), state.refresh * 1000);
}
})();
"""

_WINDOWS = (("600", "10 minutes"), ("10800", "3 hours"), (":all-time", "all time"))


def _options(values: list[tuple[str, str]], chosen: str) -> str:
    return "".join(f'<option value="{escape(v)}"{" selected" if v == chosen else ""}>'
                   f"{escape(label)}</option>" for v, label in values)


def render_page(names: list[str], topology: str | None, window: str, svg: str,
                refresh_secs: int = REFRESH_SECS) -> str:
    """The status page for ``topology`` (one of ``names``, or none running)."""
    state = json.dumps({"topology": topology, "window": window, "refresh": refresh_secs,
                        "alarm": ALARM_FAILED_RATIO})
    state = state.replace("</", "<\\/")  # cannot close the script element
    picker = (f'<select id="topology-select">{_options([(n, n) for n in names], topology or "")}'
              f"</select>" if names else "<span>no topology running</span>")
    sections = "".join(
        f'<section><h2>{title}</h2>{extra}<div id="{sid}"><p class="empty">loading…</p>'
        f"</div></section>"
        for sid, title, extra in (
            ("topology-stats", "Figures", '<p id="rates"></p>'), ("spouts", "Spouts", ""),
            ("bolts", "Bolts", ""), ("kafka", "Kafka partitions", ""),
            ("errors", "Recent errors", "")))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>stormloop{escape(" · " + topology) if topology else ""}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_STYLE}</style></head>
<body data-refreshes="0"><header><h1>stormloop</h1>{picker}
<label>window <select id="window-select">{_options(list(_WINDOWS), window)}</select></label>
<span class="meta" id="uptime"></span><span class="meta" id="updated"></span></header>
<main><section><h2>Topology</h2><div id="graph">{svg}</div></section>{sections}</main>
<script type="application/json" id="state">{state}</script>
<script>{_SCRIPT}</script></body></html>
"""
