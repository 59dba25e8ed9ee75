"""The page shell serve.py hands out: Streamlit's static folder with plotly.js preloaded and imported early."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from streamlit import file_util

from ui import serving

STREAMLIT_STATIC = Path(file_util.get_static_dir())
SHELL = """<!DOCTYPE html>
<html><head>
<script type="module" crossorigin src="./static/js/index.AAA.js"></script>
<link rel="modulepreload" crossorigin href="./static/js/runtime.BBB.js">
</head><body><div id="root"></div></body></html>
"""


def fake_static(root: Path, chunks: dict[str, str]) -> Path:
    """A Streamlit-like static folder: index.html, favicon, manifest and ``static/js/<name>`` for each chunk."""
    js = root / "static" / "js"
    js.mkdir(parents=True)
    (root / "index.html").write_text(SHELL)
    (root / "favicon.png").write_bytes(b"\x89PNG fake")
    (root / "manifest.json").write_text("{}")
    (js / "index.AAA.js").write_text("export const a = 1;")
    for name, text in chunks.items():
        (js / name).write_text(text)
    return root


CHUNK = (
    'import{a as b}from"./index.AAA.js";import"./runtime.BBB.js";import{c}from"./wrap.CCC.js";var x=import("./x.js");'
)


def test_static_imports_reads_the_head_of_a_chunk_only():
    assert serving.static_imports(CHUNK) == ["index.AAA.js", "runtime.BBB.js", "wrap.CCC.js"]
    # a dynamic import, or an import after the first statement that is not one, is not a static import of the head
    assert serving.static_imports('var y=1;import"./late.js";') == []
    assert serving.static_imports("") == []


def test_the_real_chart_chunk_and_every_file_it_imports_exist():
    chunk = serving.chart_chunk(STREAMLIT_STATIC)
    assert chunk is not None, "Streamlit's chart chunk (PlotlyChart.*.js) was not found"
    js = STREAMLIT_STATIC / "static" / "js"
    imports = serving.static_imports((js / chunk).read_text(encoding="utf-8"))
    assert len(imports) >= 3  # the frontend's entry module and the chunk's helpers
    assert any(name.startswith("index.") for name in imports)
    for name in imports:
        assert (js / name).is_file(), name


def test_chart_chunk_is_none_unless_exactly_one_matches(tmp_path):
    assert serving.chart_chunk(fake_static(tmp_path / "none", {})) is None
    two = fake_static(tmp_path / "two", {"PlotlyChart.A.js": "", "PlotlyChart.B.js": ""})
    assert serving.chart_chunk(two) is None
    one = fake_static(tmp_path / "one", {"PlotlyChart.A.js": CHUNK})
    assert serving.chart_chunk(one) == "PlotlyChart.A.js"


def test_page_shell_preloads_what_is_not_preloaded_and_imports_the_chunk():
    html = serving.page_shell_with_chart_import(SHELL, "PlotlyChart.A.js", ["index.AAA.js", "runtime.BBB.js", "w.C.js"])
    head = html.split("</head>")[0]
    preloaded = re.findall(r'rel="modulepreload" crossorigin href="\./static/js/([^"]+)"', head)
    # the shell already loads index and runtime: only the chunk and its one new import are added, once each
    assert preloaded == ["runtime.BBB.js", "PlotlyChart.A.js", "w.C.js"]
    assert head.count('import("./static/js/PlotlyChart.A.js")') == 1
    assert serving.MARKER in head
    # nothing else changed: Streamlit's shell is intact before and after the insertion
    before, after = SHELL.split("</head>")
    assert html.startswith(before) and html.endswith("</head>" + after)


def test_page_shell_without_a_head_is_refused():
    with pytest.raises(ValueError, match="no </head>"):
        serving.page_shell_with_chart_import("<html><body></body></html>", "PlotlyChart.A.js", [])


def test_static_dir_links_everything_but_the_page_shell(tmp_path):
    source = fake_static(tmp_path / "src", {"PlotlyChart.A.js": CHUNK, "wrap.CCC.js": ""})
    target = tmp_path / "out"
    target.mkdir()
    assert serving.static_dir_with_chart_import(source, target)
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in source.iterdir())
    for entry in target.iterdir():
        if entry.name == "index.html":
            assert not entry.is_symlink()
        else:
            assert entry.is_symlink() and entry.resolve() == (source / entry.name).resolve()
    assert (target / "static" / "js" / "PlotlyChart.A.js").read_text() == CHUNK  # reachable through the link
    html = (target / "index.html").read_text()
    assert 'href="./static/js/PlotlyChart.A.js"' in html and 'href="./static/js/wrap.CCC.js"' in html
    assert 'import("./static/js/PlotlyChart.A.js")' in html
    assert (source / "index.html").read_text() == SHELL  # the source is untouched


def test_static_dir_is_left_empty_for_an_unknown_layout(tmp_path):
    source = fake_static(tmp_path / "src", {})
    target = tmp_path / "out"
    target.mkdir()
    assert not serving.static_dir_with_chart_import(source, target)
    assert list(target.iterdir()) == []


def test_the_folder_for_serving_is_streamlits_with_the_new_shell():
    folder = serving.static_dir_for_serving()
    assert folder is not None
    html = (folder / "index.html").read_text(encoding="utf-8")
    original = (STREAMLIT_STATIC / "index.html").read_text(encoding="utf-8")
    assert html != original and serving.MARKER in html
    # every line of Streamlit's shell is still there, in order
    lines = [line for line in html.splitlines() if serving.MARKER not in line and "modulepreload" not in line]
    assert lines == [line for line in original.splitlines() if "modulepreload" not in line]
    assert (folder / "static" / "js" / serving.chart_chunk(STREAMLIT_STATIC)).is_file()
    assert Path(file_util.get_static_dir()) == STREAMLIT_STATIC  # nothing global changed: serve.py does that


def test_warm_first_run_fills_the_module_map_streamlit_walks(monkeypatch):
    monkeypatch.setattr(inspect, "_filesbymodname", {})
    monkeypatch.setattr(inspect, "modulesbyfile", {})
    serving.warm_first_run()
    assert "streamlit" in inspect._filesbymodname  # loaded modules are mapped: the next inspect.stack() reuses the map
    assert len(inspect.modulesbyfile) > 100
