"""The inspector's one stylesheet, served from the page's own origin (the page's policy
allows styles from there only: no inline style, no font or image from anywhere)."""

from __future__ import annotations

CSS = """\
:root { color-scheme: light dark; --good: #1a7f37; --bad: #cf222e; --warn: #9a6700;
  --line: #8884; --soft: #8881; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, sans-serif; overflow-wrap: anywhere; }
header, main { padding: 0 16px; max-width: 1100px; margin: 0 auto; }
header { padding-top: 12px; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.3em; margin: .3em 0; }
h2 { font-size: 1.15em; margin: 1.4em 0 .5em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1em; margin: 1em 0 .4em; }
h4 { font-size: .95em; margin: .8em 0 .3em; }
a { color: inherit; }
code, pre { font: 13px/1.4 ui-monospace, monospace; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--soft);
  padding: 8px; margin: 4px 0; max-height: 40em; overflow: auto; }
pre.detail { background: none; padding: 0; margin: 0; max-height: 12em; }
pre.json { max-height: 16em; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 12px;
  margin: .5em 0; }
dt { color: #888; }
dd { margin: 0; min-width: 0; }
.where, .nav { margin: .2em 0; color: #888; }
.id { font-family: ui-monospace, monospace; }
.message { font-weight: 600; }
.note { color: #888; font-size: .9em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px;
  border-bottom: 1px solid var(--line); }
th { font-weight: 600; white-space: nowrap; }
td { overflow-wrap: normal; word-break: normal; }
td a, td code { overflow-wrap: anywhere; }
td code.call { white-space: nowrap; overflow-wrap: normal; }
td pre.detail { min-width: 14em; }
td pre.json { min-width: 18em; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: .85em;
  font-weight: 600; border: 1px solid currentColor; white-space: nowrap; }
.badge.succeeded, .badge.ok { color: var(--good); }
.badge.failed, .badge.conflict { color: var(--bad); }
.badge.running, .badge.paused, .badge.interrupted, .badge.held, .badge.other { color: var(--warn); }
.bad { color: var(--bad); }
.verdict { padding: 8px 12px; border-radius: 6px; font-weight: 600; }
.verdict.good { color: var(--good); border: 1px solid var(--good); }
.verdict.bad { color: #fff; background: var(--bad); }
.verdict.unknown { color: var(--warn); border: 1px solid var(--warn); }
code.sha { word-break: break-all; }
svg.timeline { display: block; width: 100%; height: 22px; margin: 4px 0 8px; }
svg.timeline rect { stroke: Canvas; stroke-width: 2px; vector-effect: non-scaling-stroke; }
svg.timeline rect.ok { fill: var(--good); }
svg.timeline rect.failed { fill: var(--bad); }
svg.timeline rect.other { fill: var(--warn); }
article { border: 1px solid var(--line); border-radius: 6px; padding: 4px 12px;
  margin: 8px 0; }
pre.diff .add { color: var(--good); }
pre.diff .del { color: var(--bad); }
pre.diff .hunk { color: #888; }
@media (max-width: 600px) {
  body { font-size: 14px; }
  header, main { padding: 0 8px; }
  th, td { padding: 3px 4px; }
  dl { gap: 2px 8px; }
}
"""
