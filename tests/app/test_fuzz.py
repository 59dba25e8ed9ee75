"""Fuzz every page of the navigation registry: no setting a visitor can make, by hand or by URL, breaks a page.

For every page in ``ui.nav.PAGES`` the controls are discovered from the rendered page (sliders, number inputs,
select sliders, radios, select boxes, checkboxes, toggles, with their bounds and options), then driven to

* their extremes — every control at its minimum, then at its maximum — and one step past them;
* seeded random combinations (``FUZZ_CASES`` of them per page, 2 by default; ``FUZZ_CASES=50`` runs many more);
* deep links: fresh sessions opening the page with random valid query parameters, and with invalid ones (out of
  range, wrong types, NaN, empty, NUL, very long strings, unknown names).

Every run must end without an uncaught exception, with every control inside its bounds, in under ``MAX_SECONDS``;
an invalid URL value is not taken (the control keeps its default, or a size past its cap is clamped to the cap) and
the page says so, naming the parameter and the value. Over-cap settings are refused with a message, and absurd sizes
where an input has no bound (the Memory & cost custom model) give an error naming the field. The caps come from one
table per kind of device (``ui.caps``), are shown beside their controls and are enforced on every page for each kind.
"""

from __future__ import annotations

import os
import random
import re
import time
from dataclasses import dataclass
from typing import Any

import pytest
from streamlit.proto.NumberInput_pb2 import NumberInput as NumberInputProto
from streamlit.proto.Slider_pb2 import Slider as SliderProto
from streamlit.testing.v1 import AppTest

from lineage import lab, schedules
from lineage.measure import bench_decode, footprints
from lineage.teach import stage_runs, story
from lineage.units import format_bytes
from tests.app.util import ROOT, TIMEOUT, first_chart_probes, run_page
from ui import caps as app_caps
from ui import links
from ui.controls import cap_note, without_reason
from ui.nav import PAGES

FUZZ_CASES = int(os.environ.get("FUZZ_CASES", "2"))  # random combinations (and random deep links) per page
MAX_SECONDS = 10.0  # one run of one page, on a loaded 2-core machine: generous against "a few seconds"
TIMES: list[tuple[float, str]] = []  # (seconds, which run) of every timed run, for the report at the end
DEFAULTS: dict[str, dict] = {}  # url_path -> its controls in a fresh session
IDS = [entry.url_path for entry in PAGES]
CHOICE_KINDS = ("select_slider", "radio", "selectbox")
# tour_*: they switch pages. learned_memory_*: training runs for up to its own caps (tens of seconds per mechanism,
# ui.caps: Caps.training), far past MAX_SECONDS by design; its page tests press them at small sizes.
# The step buttons and Run benchmark are clicked.
NEVER_CLICK = ("tour_prev", "tour_next", "learned_memory_train", "learned_memory_rerun")


@pytest.fixture(scope="module", autouse=True)
def report_times(request):
    run_page("home")  # imports and first-run costs belong to no page
    yield
    if TIMES:
        slowest = sorted(TIMES, reverse=True)[:3]
        line = f"\nfuzz: {len(TIMES)} timed page runs; slowest " + "; ".join(f"{s:.2f} s {w}" for s, w in slowest)
        plugins = request.config.pluginmanager
        reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(line)


# ---- controls, discovered from the rendered page ------------------------------------------------------------------


@dataclass(frozen=True)
class Control:
    kind: str  # slider, number_input, select_slider, radio, selectbox, checkbox, toggle
    key: str
    value: Any  # at discovery (in a fresh session: the page's default)
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    is_int: bool = False
    options: tuple[str, ...] = ()  # formatted labels, as they appear in the URL

    @property
    def numeric(self) -> bool:
        return self.kind in ("slider", "number_input")


def controls(at: AppTest) -> dict[str, Control]:
    found: list[Control] = []
    for w in at.slider:
        found.append(
            Control("slider", w.key, w.value, w.min, w.max, w.step, is_int=w.proto.data_type == SliderProto.INT)
        )
    for w in at.number_input:
        found.append(
            Control(
                "number_input", w.key, w.value, w.min, w.max, w.step, is_int=w.proto.data_type == NumberInputProto.INT
            )
        )
    for kind in CHOICE_KINDS:
        found += [Control(kind, w.key, w.value, options=tuple(w.options)) for w in getattr(at, kind)]
    found += [Control("checkbox", w.key, w.value) for w in at.checkbox]
    found += [Control("toggle", w.key, w.value) for w in at.toggle]
    return {c.key: c for c in found if c.key}


def values(at: AppTest) -> dict[str, Any]:
    return {c.key: c.value for c in controls(at).values()}


def widget(at: AppTest, c: Control):
    return getattr(at, c.kind)(key=c.key)


def check_in_bounds(at: AppTest, what: str) -> None:
    """Every control holds a value it offers: inside its bounds, or one of its options."""
    for c in controls(at).values():
        w, v = widget(at, c), c.value
        if c.numeric:
            assert c.lo is None or v >= c.lo, f"{what}: {c.key} = {v} below its minimum {c.lo}"
            assert c.hi is None or v <= c.hi, f"{what}: {c.key} = {v} above its maximum {c.hi}"
        elif c.kind in ("radio", "selectbox"):
            assert w.index is not None, f"{what}: {c.key} = {v!r} is none of its options"
        elif c.kind == "select_slider":
            assert str(w.format_func(v)) in c.options, f"{what}: {c.key} = {v!r} is none of {c.options}"
        else:
            assert isinstance(v, bool), f"{what}: {c.key} = {v!r} is not a bool"


def run(at: AppTest, what: str) -> AppTest:
    """One timed run: no exception, every control in bounds, under MAX_SECONDS."""
    t0 = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - t0
    TIMES.append((seconds, what))
    assert not at.exception, f"{what} raised:\n" + "\n".join(f"{e.value}\n{e.stack_trace}" for e in at.exception)
    check_in_bounds(at, what)
    assert seconds < MAX_SECONDS, f"{what} took {seconds:.1f} s"
    return at


def open_link(url_path: str, params: dict[str, str], what: str) -> AppTest:
    """A fresh session opening ``/<url_path>?<params>``: the app shell's first run, then the page."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    run(at, f"{what} (shell)")
    if url_path == "home":  # the first run ends after the first chart; the browser asks for the rest (ui.first_chart)
        assert first_chart_probes(at), f"{what}: the first run did not wait for its first chart"
        run(at, what)
    else:
        at.switch_page(f"app_pages/{url_path}.py")
        run(at, what)
    return at


def opened(url_path: str) -> AppTest:
    at = open_link(url_path, {}, f"{url_path} at its defaults")
    DEFAULTS.setdefault(url_path, controls(at))
    return at


def defaults(url_path: str) -> dict[str, Control]:
    """The page's controls in a fresh session (opened once per page, whichever test asks first)."""
    if url_path not in DEFAULTS:
        opened(url_path)
    return DEFAULTS[url_path]


# ---- values: in bounds, at the bounds, past them ----------------------------------------------------------------


def in_bounds(c: Control, rng: random.Random) -> Any:
    """A random value of a numeric control, its extremes twice as likely as any other point."""
    if c.lo is None or c.hi is None:  # an input without bounds: plausible sizes, and absurd ones
        return rng.choice([rng.randint(1, 256), rng.randint(1, 256), 0, -1, 10**12])
    pick = rng.random()
    if pick < 1 / 3:
        v = c.lo
    elif pick < 2 / 3:
        v = c.hi
    else:
        steps = int(round((c.hi - c.lo) / c.step))
        v = c.lo + c.step * rng.randint(0, steps)
    return int(v) if c.is_int else round(min(max(float(v), c.lo), c.hi), 10)


def past(c: Control, bound: float, sign: int) -> int | float:
    """One step beyond ``bound`` (sign −1: below it, +1: above it)."""
    v = bound + sign * (c.step or 1)
    return int(v) if c.is_int else float(v)


def as_url(c: Control, v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(int(v)) if c.is_int else repr(float(v))


def valid_url_value(c: Control, rng: random.Random) -> str:
    if c.numeric:
        return as_url(c, in_bounds(c, rng))
    if c.options:
        return rng.choice(c.options)
    return rng.choice(["true", "false"])


GARBAGE = ["abc", "NaN", "nan", "inf", "-inf", "1e309", "", "\x00", "%00", "9" * 5000, "x" * 10_000, "[1, 2]", "0x10"]


def invalid_url_value(c: Control, rng: random.Random) -> str:
    if c.numeric:
        beyond = [as_url(c, past(c, bound, sign)) for bound, sign in ((c.lo, -1), (c.hi, 1)) if bound is not None]
        return rng.choice(beyond + GARBAGE)
    if c.options:
        return rng.choice(["not an option", "", "\x00", "x" * 10_000, c.options[0] + "!", "-1"])
    return rng.choice(["maybe", "2", "", "\x00", "yes please"])


# ---- every page: extremes, random combinations, deep links -------------------------------------------------------


def click_buttons(at: AppTest, what: str) -> None:
    """Press the step buttons (◀ ▶) and the benchmark's Run: every button that stays on the page."""
    for key in [b.key for b in at.button if b.key and b.key not in NEVER_CLICK]:
        buttons = [b for b in at.button if b.key == key]
        if buttons:
            buttons[0].click()
            run(at, f"{what}, then {key}")


@pytest.mark.parametrize("entry", PAGES, ids=IDS)
def test_controls_at_their_extremes_and_random_combinations(entry):
    page = entry.url_path
    at = opened(page)
    if entry.stage and entry.stage != "hybrid":
        check_caps_shown(at, page)

    def bounded(at):  # discovered afresh each time: a control may come and go, its bounds follow others
        return [c for c in controls(at).values() if c.numeric and c.lo is not None and c.hi is not None]

    for name, bound, flag in (("minimum", "lo", False), ("maximum", "hi", True)):
        for c in bounded(at):
            widget(at, c).set_value(int(getattr(c, bound)) if c.is_int else float(getattr(c, bound)))
        for c in controls(at).values():
            if c.kind in ("checkbox", "toggle"):
                widget(at, c).set_value(flag)
        run(at, f"{page}, every control at its {name}")
        # a control offers only values its page can run (the T sliders of GPT-2 and the KV cache once started at 2);
        # at every maximum at once a run may be over its budget, which the page refuses with a message (ui.caps)
        if name == "minimum":
            assert not stopped_early(at), f"{page} at every control's minimum: {[e.value for e in at.error]}"
    click_buttons(at, f"{page} at its maxima")
    # one step past the bounds, as a forged browser message could send: ignored, the controls stay in bounds
    for name, bound, sign in (("below its minimum", "lo", -1), ("above its maximum", "hi", 1)):
        for c in bounded(at):
            widget(at, c).set_value(past(c, getattr(c, bound), sign))
        run(at, f"{page}, every control just {name}")
    # inputs without a maximum (the custom model of Memory & cost): absurd sizes are a message, never a crash
    for absurd in (10**12, 0, -1):
        unbounded = [c for c in controls(at).values() if c.kind == "number_input" and c.hi is None]
        for c in unbounded:
            widget(at, c).set_value(absurd)
        if unbounded:
            run(at, f"{page}, every input without a maximum at {absurd}")

    rng = random.Random(f"combinations {page}")
    for case in range(FUZZ_CASES):
        found = controls(at)  # bounds may follow other controls (the step slider follows T)
        changed = {}
        for c in found.values():
            if c.numeric and rng.random() < 0.7:
                changed[c.key] = in_bounds(c, rng)
            elif c.kind in ("checkbox", "toggle") and rng.random() < 0.5:
                changed[c.key] = not c.value
        for key, v in changed.items():
            widget(at, found[key]).set_value(v)
        run(at, f"{page}, random combination {case}: {changed}")


@pytest.mark.parametrize("entry", PAGES, ids=IDS)
def test_deep_links_with_random_and_invalid_query_parameters(entry):
    page = entry.url_path
    found = defaults(page)
    rng = random.Random(f"links {page}")
    for _ in range(FUZZ_CASES):
        params = {c.key: valid_url_value(c, rng) for c in found.values() if rng.random() < 0.8}
        at = open_link(page, params, f"{page}?{shorten(params)}")
        if "live_benchmark_run" in [b.key for b in at.button]:
            click_buttons(at, f"{page}?{shorten(params)}")

    params = {c.key: invalid_url_value(c, rng) for c in found.values()}
    params.update({"x": "%00", "y": "\x00", "z" * 300: "z" * 20_000, "seed": rng.choice(["abc", "-5", "NaN", "inf"])})
    at = open_link(page, params, f"{page}?{shorten(params)}")
    shown, said = values(at), link_notices(at)
    stopped = stopped_early(at)  # then only the controls made before the stop are judged (ui.links.report)
    for key, c in found.items():
        if (key not in shown and stopped) or key in SHELL_CONTROLS:
            continue
        if c.kind in CHOICE_KINDS and still_in_url(at, key, params[key]):
            continue  # a choice not bound to the URL ignores links, and keeps them there: ui.links cannot tell (report)
        clamped = c.numeric and shown.get(key) in (c.lo, c.hi) and shown.get(key) != c.value
        assert shown.get(key) == c.value or clamped, f"{page}: {key}={params[key][:20]!r} was taken: {shown.get(key)}"
    judged = [key for key, c in found.items() if not ((key not in shown and stopped) or key in SHELL_CONTROLS)]
    judged = [key for key in judged if not (found[key].kind in CHOICE_KINDS and still_in_url(at, key, params[key]))]
    judged += ["seed"] if stopped else ["x", "y", "z" * 300, "seed"]
    unsaid = [key[:20] for key in dict.fromkeys(judged) if not mentions(said, key)]
    # past ui.links.MAX_MESSAGES notices the rest are counted in one line: each value is said, or counted there
    assert len(unsaid) <= more_counted(said), f"{page}: dropped silently: {unsaid}; the page said {said}"


def more_counted(said: list[str]) -> int:
    """How many unused values the page counted without listing them (ui.links.report's last line)."""
    counts = [re.match(r"… and ([\d,]+) more", text) for text in said]
    return sum(int(m.group(1).replace(",", "")) for m in counts if m)


# The app shell's own controls take their link values on the session's first run, which open_link spends on the home
# page (a browser opening the deep link has one run): test_a_bad_presenter_value_is_said checks them there.
SHELL_CONTROLS = {"present"}


def test_a_bad_presenter_value_is_said():
    for value in ("maybe", "2", "\x00"):
        at = open_link("home", {"present": value}, f"home?present={value!r}")
        assert mentions(link_notices(at), "present"), (value, link_notices(at))
        assert at.toggle(key="present").value is False
    at = open_link("home", {"present": "1"}, "home?present=1")
    assert at.toggle(key="present").value is True and not mentions(link_notices(at), "present")


def still_in_url(at: AppTest, key: str, given: str) -> bool:
    value = at.query_params.get(key)
    return given in (value if isinstance(value, list) else [value])


def stopped_early(at: AppTest) -> bool:
    """Whether the page stopped at a refused run (ui.running.run_or_stop), before the rest of its controls."""
    return any(e.value.startswith("Can't run this") for e in at.error)


def link_notices(at: AppTest) -> list[str]:
    """What the page says about link values it could not use (ui.links: warnings at the top of the page)."""
    return [w.value for w in at.warning if "link" in w.value]


def mentions(notices: list[str], key: str) -> bool:
    quoted = links.quote(key)
    return any(quoted in n or n.startswith(("The link's seed ", "Seed ")) and key == "seed" for n in notices)


def test_the_literal_garbage_link_of_the_issue():
    params = {"seed": "abc", "deltanet_T": "-5", "kda_alpha": "NaN", "x": "%00"}
    for page in ("deltanet", "kda"):
        at = open_link(page, params, f"{page}?seed=abc&deltanet_T=-5&kda_alpha=NaN&x=%00")
        assert not at.exception
        shown, said = values(at), link_notices(at)
        assert shown["seed"] == 0 and shown.get("kda_alpha", 0.99) == 0.99
        assert shown.get("deltanet_T", 32) in (story.MIN_T, 32)  # clamped to the slider's floor, or not on the page
        assert any(f"seed {links.quote('abc')}" in n and "0 to 2,147,483,647" in n for n in said), said
        if not stopped_early(at):
            assert any(links.quote("x") in n and "not a setting of this page" in n for n in said), said
        assert mentions(said, "deltanet_T" if page == "deltanet" else "kda_alpha"), said


def test_an_over_cap_size_in_a_link_is_clamped_to_the_cap_and_said():
    """/kda?kda_T=99999 showed T = 32 and said nothing; now T is the cap, and the page says why."""
    cap = app_caps.caps()
    at = open_link("kda", {"kda_T": "99999", "kda_K": "-3"}, "kda?kda_T=99999&kda_K=-3")
    assert at.slider(key="kda_T").value == cap.T and at.slider(key="kda_K").value == 2
    said = link_notices(at)
    assert any(
        f"{links.quote('kda_T')} = {links.quote('99999')}" in n and f"T is set to {cap.T}" in n and "cap on cpu" in n
        for n in said
    ), said
    assert any(f"{links.quote('kda_K')} = {links.quote('-3')}" in n and "K is set to 2" in n for n in said), said


@pytest.mark.parametrize("value", ["inf", "-inf", "1e309"])
def test_an_infinite_integer_in_the_url_is_refused_and_said(value):
    """Streamlit 1.67 raised OverflowError for an integer input's ?seed=inf, breaking every page at the sidebar
    (tests/app/test_serving.py keeps the bug's test): the seed is read by our code, and the whole-number inputs are
    float inputs that our code checks."""
    at = open_link("memory_cost", {"seed": value, "memory_cost_len": value}, f"memory_cost?seed={value}")
    assert not at.exception and not at.error
    assert at.number_input(key="seed").value == 0 and at.number_input(key="memory_cost_len").value == 2**20
    said = link_notices(at)
    assert mentions(said, "seed") and mentions(said, "memory_cost_len"), said


@pytest.mark.parametrize(
    ("typed", "problem"),
    [(1e12, "from 0 to 2,147,483,647"), (-1, "from 0 to 2,147,483,647"), (2**31, "from 0"), (1e20, "from 0"),
     (2.5, "whole number")],
)  # fmt: skip
def test_a_typed_seed_that_is_not_a_seed_is_said_and_the_default_used(typed, problem):
    """Typed 1e12 became 1, and -1 or 2147483648 stayed on screen while the page computed with the previous seed."""
    at = open_link("kda", {"seed": "7"}, "kda?seed=7")
    at.number_input(key="seed").set_value(typed)
    run(at, f"kda with the seed typed as {typed}")
    said = [w.value for w in at.warning if w.value.startswith("Seed ")]
    assert any(problem in n and "Using seed 0" in n for n in said), [w.value for w in at.warning]


def test_a_typed_fraction_in_a_whole_number_input_is_said():
    at = opened("memory_cost")
    at.number_input(key="memory_cost_heads").set_value(1.5)
    run(at, "memory_cost with 1.5 heads")
    assert any(
        "Heads (n_heads)" in e.value and links.quote(1.5) in e.value and "whole number" in e.value for e in at.error
    )


def shorten(params: dict) -> str:
    return "&".join(f"{k[:20]}={str(v)[:12]!r}" for k, v in params.items())


# ---- caps: one table per kind of device, shown beside the controls, enforced on every page ---------------------


def test_caps_are_per_device_and_fit_the_memory_estimates():
    cpu, gpu = app_caps.caps("cpu"), app_caps.caps("cuda")
    assert app_caps.caps() == app_caps.caps(app_caps.get_device()) and app_caps.caps("mps") == gpu
    assert (cpu.T, cpu.state_dim, cpu.head_dim, cpu.heads) == (64, 16, 16, 12)  # as before the table moved
    for field in ("T", "state_dim", "head_dim", "heads", "hybrid_layer_tokens"):
        assert getattr(gpu, field) >= getattr(cpu, field), field
    assert gpu.state_dim > cpu.state_dim and gpu.head_dim > cpu.head_dim
    assert set(cpu.benchmark_budgets) < set(gpu.benchmark_budgets) == set(bench_decode.BUDGETS)
    assert app_caps.benchmark_memory_bytes("cpu") == min(bench_decode.memory_cap("cpu"), cpu.benchmark_mb * 2**20)
    assert cpu.benchmark_mb <= cpu.run.mb and gpu.benchmark_mb is None  # a GPU's benchmark holds GPU memory
    for cap in (cpu, gpu):
        budget = cap.run.mb * 2**20
        assert app_caps.stage_run_bytes(cap.T, cap.state_dim, cap.state_dim) < budget
        assert app_caps.softmax_run_bytes(cap.T, cap.heads, cap.head_dim) < budget
        assert max(cap.state_dim, cap.head_dim) <= stage_runs.DEMO_LIMITS["K"]  # what the runs themselves accept
        assert stage_runs.DEMO_LIMITS["T"] >= cap.T and cap.heads <= stage_runs.SOFTMAX_MAX_HEADS


def test_the_capacity_cost_model_covers_what_was_measured_and_the_proxy_did_not():
    """The old cap (streams × N² × d_k²) gave d_k 16 with 4 streams the budget of d_k 32 with 1; measured, the first
    takes 2.8× the memory (ui/caps.py's table). The cost model orders them as measured, and stays above the points."""
    measured = {(32, 96, 1): app_caps.Cost(91, 0.43), (16, 96, 4): app_caps.Cost(253, 1.21),
                (32, 96, 4): app_caps.Cost(342, 1.98), (8, 96, 4): app_caps.Cost(199, 0.64)}  # fmt: skip
    for (d_k, n, trials), cost in measured.items():
        model = app_caps.capacity_cost(d_k, n, trials)
        assert model.mb >= cost.mb and model.seconds >= cost.seconds * 0.8, (d_k, n, trials, model, cost)
    assert app_caps.capacity_cost(16, 96, 4).mb > 2 * app_caps.capacity_cost(32, 96, 1).mb
    budget = app_caps.caps("cpu").run
    assert app_caps.capacity_cost(32, 96, 1).within(budget) and not app_caps.capacity_cost(16, 96, 4).within(budget)
    assert app_caps.capacity_cost(16, 48, 2).within(budget)  # the page's defaults


STAGE_CAPS = {  # slider key suffix -> (Caps field, the name in the caption)
    "T": ("T", "T"),
    "K": ("state_dim", "K"),
    "V": ("state_dim", "V"),
    "heads": ("heads", "Heads"),
    "head_dim": ("head_dim", "Head dim"),
}


def check_caps_shown(at: AppTest, page: str) -> None:
    """A stage page's size sliders stop at this device's caps, and say so beside them."""
    cap = app_caps.caps()
    captions = [c.value for c in at.caption]
    checked = 0
    for suffix, (field, name) in STAGE_CAPS.items():
        sliders = [s for s in at.slider if s.key == f"{page}_{suffix}"]
        if sliders:
            assert sliders[0].max == getattr(cap, field), (sliders[0].key, sliders[0].max)
            said = without_reason(cap_note(name, getattr(cap, field))).removesuffix(".")  # the reason once a line
            assert any(said in c for c in captions), (name, captions)
            checked += 1
    assert checked == 3, page


@pytest.fixture(params=app_caps.DEVICE_KINDS)
def device_kind(request, monkeypatch):
    """The app's caps as on each kind of device (the runs themselves stay on this machine's CPU)."""
    monkeypatch.setattr(app_caps, "device_kind", lambda device=None: request.param)
    return request.param


@pytest.mark.parametrize("entry", PAGES, ids=IDS)
def test_every_page_enforces_its_caps_on_each_device_kind(entry, device_kind):
    """A link asking for far more than allowed on every control: every size stops at this kind's cap, the capped
    ones say they were clamped, and the page's own over-budget checks refuse what is still too big."""
    page, cap = entry.url_path, app_caps.DEVICE_CAPS[device_kind]
    greedy = {c.key: "1000000000" for c in defaults(page).values() if c.numeric and c.key != "seed"}
    at = open_link(page, greedy, f"{page} asking for 10⁹ of everything, {device_kind} caps")
    for suffix, (field, _) in STAGE_CAPS.items():
        for s in [s for s in at.slider if s.key == f"{page}_{suffix}"]:
            assert s.max == getattr(cap, field) and s.value == getattr(cap, field), (s.key, s.max, s.value)
            assert mentions(link_notices(at), s.key), (s.key, link_notices(at))
    if page == "hybrid":
        assert any(f"capped at {cap.hybrid_layer_tokens:,}" in e.value for e in at.error), [e.value for e in at.error]
    if page == "memory_lab":
        assert any("would take about" in e.value for e in at.error), [e.value for e in at.error]
        assert "lab_capacity_chart" not in [chart.key for chart in at.get("plotly_chart")]
    if page == "live_benchmark":
        options = at.selectbox(key="live_benchmark_budget").options
        assert [o.split(" ")[0] for o in options] == list(cap.benchmark_budgets)


GPU_LINKS = {
    "kda": {"kda_T": "64", "kda_K": "32", "kda_V": "32", "kda_beta": "0.9"},
    "deltanet": {"deltanet_T": "64", "deltanet_K": "32", "deltanet_V": "32", "deltanet_chunk": "1"},
    "kv_cache": {"kv_cache_T": "64", "kv_cache_heads": "12", "kv_cache_head_dim": "32", "kv_cache_block": "2"},
}


@pytest.mark.parametrize("page", GPU_LINKS)
def test_pages_run_fast_at_the_gpu_caps_too(page, monkeypatch):
    """The GPU caps, here on the CPU: the host's share of a run (the traced recurrence, the figures) stays fast."""
    monkeypatch.setitem(app_caps.DEVICE_CAPS, "cpu", app_caps.DEVICE_CAPS["gpu"])
    at = open_link(page, GPU_LINKS[page], f"{page} at the GPU caps")
    assert not at.error
    shown = values(at)
    assert all(str(shown[key]) == value for key, value in GPU_LINKS[page].items()), shown


def test_the_benchmark_offers_its_full_budget_on_gpus_only(monkeypatch):
    options = open_link("live_benchmark", {}, "live_benchmark, CPU caps").selectbox(key="live_benchmark_budget").options
    assert len(options) == 2 and not any(o.startswith("full") for o in options)
    monkeypatch.setitem(app_caps.DEVICE_CAPS, "cpu", app_caps.DEVICE_CAPS["gpu"])
    options = open_link("live_benchmark", {}, "live_benchmark, GPU caps").selectbox(key="live_benchmark_budget").options
    assert [o.split(" ")[0] for o in options] == list(bench_decode.BUDGETS)


def test_an_over_cap_hybrid_decode_is_refused_not_attempted():
    cap = app_caps.caps().hybrid_layer_tokens
    at = open_link("hybrid", {"hybrid_layers": "27", "hybrid_T": "64"}, "hybrid, 27 layers × 64 tokens")
    assert any(f"capped at {cap:,}" in e.value and "at most 24 tokens" in e.value for e in at.error), at.error
    assert "hybrid_decode" not in [chart.key for chart in at.get("plotly_chart")]
    assert at.button(key="tour_prev")  # the rest of the page is still there
    at.slider(key="hybrid_T").set_value(24)
    run(at, "hybrid, 27 layers × 24 tokens")
    assert not at.error and "hybrid_decode" in [chart.key for chart in at.get("plotly_chart")]
    at.radio(key="hybrid_schedule").set_value("kimi")
    run(at, "hybrid, Kimi Linear")  # a change of preset fits the count to the stack (24 here): no refusal
    assert not at.error and at.slider(key="hybrid_T").value == 24
    at.slider(key="hybrid_T").set_value(25)
    run(at, "hybrid, Kimi Linear × 25 tokens")
    assert any(f"capped at {cap:,}" in e.value for e in at.error)
    assert any(f"{cap:,}" in c.value and "up to 24 tokens" in c.value for c in at.caption)


def test_an_over_budget_capacity_run_is_refused_and_the_rest_of_the_lab_runs():
    params = {"lab_d_k": "32", "lab_capacity_n": str(lab.MAX_PAIRS), "lab_capacity_trials": "2"}
    at = open_link("memory_lab", params, "memory lab, capacity 2 × 96 pairs at d_k 32")
    cost = app_caps.capacity_cost(32, lab.MAX_PAIRS, 2)
    refused = [e.value for e in at.error if "would take about" in e.value]
    assert refused and format_bytes(cost.bytes) in refused[0], [e.value for e in at.error]
    keys = [chart.key for chart in at.get("plotly_chart")]
    assert "lab_capacity_chart" not in keys and len(keys) >= 5
    assert at.warning  # the overview says it needs every experiment
    budget = app_caps.caps().run
    assert any(f"up to {format_bytes(budget.bytes)}" in c.value and "This run: about" in c.value for c in at.caption)
    at.slider(key="lab_capacity_trials").set_value(1)
    run(at, "memory lab, capacity 1 × 96 pairs at d_k 32")
    assert not at.error and "lab_capacity_chart" in [chart.key for chart in at.get("plotly_chart")]


# ---- Memory & cost: inputs without a bound --------------------------------------------------------------------

UNBOUNDED = {  # number input -> the field its error names
    "memory_cost_layers": "n_layers",
    "memory_cost_heads": "n_heads",
    "memory_cost_kv_heads": "n_kv_heads",
    "memory_cost_head_dim": "head_dim",
    "memory_cost_len": "seq_len",
}


def test_absurd_sizes_are_an_error_naming_the_field():
    at = opened("memory_cost")
    for key, field in UNBOUNDED.items():
        default = at.number_input(key=key).value
        for value in (0, -1, 10**12):
            at.number_input(key=key).set_value(value)
            run(at, f"memory_cost with {key} = {value}")
            errors = [e.value for e in at.error]
            assert any(field in e for e in errors), (key, value, errors)
            assert at.get("plotly_chart"), "the real models are still drawn"
        at.number_input(key=key).set_value(default)
        run(at, f"memory_cost with {key} back at {default}")
        assert not at.error, [e.value for e in at.error]


def test_absurd_sizes_in_the_url_are_an_error_too():
    params = {key: str(10**12) for key in UNBOUNDED}
    at = open_link("memory_cost", params, "memory_cost with every size 10**12")
    errors = " ".join(e.value for e in at.error)
    assert "n_layers" in errors and "seq_len" in errors, errors


def test_the_largest_custom_model_stays_exact():
    at = opened("memory_cost")
    limits = footprints.CUSTOM_LIMITS
    for key, field in UNBOUNDED.items():
        at.number_input(key=key).set_value(footprints.MAX_SEQ_LEN if field == "seq_len" else limits[field])
    at.selectbox(key="memory_cost_kind").set_value("mha")
    at.selectbox(key="memory_cost_dtype").set_value("fp32")
    run(at, "memory_cost, the largest custom MHA model at the longest context")
    assert not at.error, [e.value for e in at.error]
    spec = footprints.custom_spec(
        limits["n_layers"], limits["n_heads"], limits["n_kv_heads"], limits["head_dim"],
        schedules.periodic_schedule(limits["n_layers"], 4, base="mha", kind="gqa"),
    )  # fmt: skip
    table = at.dataframe[0].value.set_index("model")
    expected = footprints.footprint(spec, footprints.MAX_SEQ_LEN, "fp32").kv_cache_bytes
    assert expected < 2**63 and int(table.loc["custom", "KV cache (bytes)"]) == expected  # exact in int64
    for key, field in UNBOUNDED.items():
        over = (footprints.MAX_SEQ_LEN if field == "seq_len" else limits[field]) + 1
        at.number_input(key=key).set_value(over)
        run(at, f"memory_cost with {key} one past its limit")
        assert any(field in e.value for e in at.error), (key, [e.value for e in at.error])
        at.number_input(key=key).set_value(over - 1)
