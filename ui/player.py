"""The player: one step per animation, moved by every control, and the page opened at its top.

An animation's frames live in the browser (``lineage.plots.core.play_controls``): its slider and Play move them without
a round trip. ◀ Back / Forward ▶ and the J / K keys used to run on the server and knew nothing of where the slider
stood, so after a scrub to step 10 "one step back" jumped to step 30. Here they run in the browser too and call the
charts' own animation (``Plotly.animate`` on the frame next to the one shown by the chart moved last, read from its
slider's ``active`` index, which plotly.js keeps in step with Play and the slider; every chart of the page goes to that
frame), one animation frame after the key or click, after any slider move still waiting for its frame: every control
moves the one step, from where it is now. Each move is written into the URL (``?<page>_step=``, by
``history.replaceState``), so a link copied now opens at that step and a rerun of the page (a changed control) keeps
it.

The shell part (:func:`shell`, mounted by app.py on every run) scrolls the main area to its top whenever the page
changes — by Next, Shift+N, a link or the sidebar — where Streamlit would keep the previous page's offset.

Both are small ``st.components.v2`` components (public API; their scripts run in the page, as ui.first_chart's does).
"""

from __future__ import annotations

import functools

import streamlit as st

STEP_COMPONENT = "attention_lineage_steps"
SHELL_COMPONENT = "attention_lineage_shell"
SHELL_KEY = "_lineage_shell"

STEP_HTML = """
<div class="lineage-steps" role="group">
  <button type="button" data-delta="-1">◀ Back <kbd>J</kbd></button>
  <button type="button" data-delta="1">Forward ▶ <kbd>K</kbd></button>
</div>
"""

# Streamlit's secondary button, in its theme's variables (the component's styles are isolated in a shadow root).
STEP_CSS = """
.lineage-steps { display: flex; gap: 0.5rem; flex-wrap: wrap; }
.lineage-steps button {
  font: inherit; font-size: var(--st-base-font-size, 1rem); padding: 0.25rem 0.75rem; min-height: 2.5rem;
  border-radius: var(--st-button-radius, 0.5rem); cursor: pointer; white-space: nowrap;
  color: var(--st-text-color, #31333f); background: var(--st-secondary-background-color, #f0f2f6);
  border: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2));
}
.lineage-steps button:hover { border-color: var(--st-primary-color, #ff4b4b); color: var(--st-primary-color, #ff4b4b); }
.lineage-steps kbd { font-family: inherit; opacity: 0.7; margin-left: 0.25rem; }
"""

# data: {param: the URL parameter of the page's step}
STEP_JS = """
const KEYS = {j: -1, k: 1};
const AT_ONCE = {mode: 'immediate', frame: {duration: 0, redraw: true}, transition: {duration: 0}};

function animations() {
  return [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .filter(gd => gd.layout && gd.layout.sliders && gd.layout.sliders.length && gd.layout.sliders[0].steps);
}

function names(gd) {
  return gd.layout.sliders[0].steps.map(s => s.args[0][0]);
}

function clamp(i, n) {
  return Math.min(Math.max(i, 0), n - 1);
}

// One step for the page: from the frame of the chart moved last (by its slider, Play or a step; else the first chart),
// read from its slider's active index, and every chart to that one frame, so that a chart scrubbed on its own brings
// the rest with it and the URL names the step every chart shows. A chart whose frames are named otherwise steps from
// its own frame.
function step(delta, param, moved) {
  const Plotly = window.Plotly;
  const charts = animations();
  if (!Plotly || !charts.length) return;
  const lead = charts.includes(moved.chart) ? moved.chart : charts[0];
  const leadNames = names(lead);
  const frame = leadNames[clamp((lead.layout.sliders[0].active || 0) + delta, leadNames.length)];
  for (const gd of charts) {
    const own = names(gd), now = gd.layout.sliders[0].active || 0;
    const next = own.includes(frame) ? own.indexOf(frame) : clamp(now + delta, own.length);
    if (next !== now)
      Plotly.animate(gd, [own[next]], AT_ONCE);
  }
  remember(param, frame);
}

// Into the URL, when it changes there (Chromium asks for the page's icon again at every history.replaceState).
function remember(param, name) {
  const url = new URL(window.location.href);
  if (url.searchParams.get(param) === String(name)) return;
  url.searchParams.set(param, name);
  window.history.replaceState(window.history.state, '', url);
}

export default function ({ parentElement, data }) {
  const param = data.param;
  parentElement.querySelector('.lineage-steps')?.setAttribute('aria-label', data.label);
  const buttons = [...parentElement.querySelectorAll('button[data-delta]')];
  // A step waits for the next animation frame: Plotly's slider sets its position at once but runs its command (the
  // animation to the frame dragged to) in the next animation frame, which would override a step started before it;
  // J pressed as a scrub lands was lost that way.
  const moved = {chart: null};  // the chart of this page that moved last
  const later = (delta) => window.requestAnimationFrame(() => step(delta, param, moved));
  const onClick = (event) => later(parseInt(event.currentTarget.dataset.delta));
  buttons.forEach(b => b.addEventListener('click', onClick));
  const onKey = (event) => {
    const delta = KEYS[(event.key || "").toLowerCase()];
    if (delta === undefined || event.ctrlKey || event.metaKey || event.altKey || event.shiftKey) return;
    const target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    event.preventDefault();
    later(delta);
  };
  document.addEventListener('keydown', onKey);
  // Play and the slider move the step too: the URL follows them, so a link copied after a scrub opens there.
  const followed = new Set();
  const follow = () => {
    for (const gd of animations()) {
      if (followed.has(gd) || !gd.on) continue;
      followed.add(gd);
      gd.on('plotly_sliderchange', () => { moved.chart = gd; });  // at once, before the slider's animation
      gd.on('plotly_animatingframe', (event) => {
        moved.chart = gd;
        remember(param, event.name);
      });
    }
  };
  follow();
  const observer = new MutationObserver(follow);
  const main = document.querySelector('[data-testid="stMain"]');
  if (main) observer.observe(main, {childList: true, subtree: true});
  return () => {
    buttons.forEach(b => b.removeEventListener('click', onClick));
    document.removeEventListener('keydown', onKey);
    observer.disconnect();
  };
}
"""

# data: {page: the url_path of the page this run draws}
SHELL_JS = """
export default function ({ data }) {
  const shell = window.__attentionLineageShell = window.__attentionLineageShell || {page: null};
  if (shell.page !== null && shell.page !== data.page) {
    const main = document.querySelector('[data-testid="stMain"]');
    if (main) main.scrollTo({top: 0, left: 0, behavior: 'instant'});
    window.scrollTo({top: 0, left: 0, behavior: 'instant'});
  }
  shell.page = data.page;
}
"""


@functools.cache  # once per process: a component is registered once, by name
def _step_component():
    return st.components.v2.component(STEP_COMPONENT, html=STEP_HTML, css=STEP_CSS, js=STEP_JS)


@functools.cache
def _shell_component():
    return st.components.v2.component(SHELL_COMPONENT, js=SHELL_JS)


def step_buttons(param: str, *, label: str, key: str) -> None:
    """◀ Back / Forward ▶ (and the J / K keys) stepping every animation on the page from the frame it shows; each
    step is kept in the URL as ``?<param>=``. ``label`` names the step for a screen reader ("Step t")."""
    _step_component()(key=key, data={"param": param, "label": label}, height="content")


def shell(page: str) -> None:
    """Mount the shell part for this run (app.py, in the sidebar: it draws nothing): the page opens at its top."""
    _shell_component()(key=SHELL_KEY, data={"page": page})
