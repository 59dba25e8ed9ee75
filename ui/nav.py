"""The app's pages, in order, by section. app.py builds ``st.navigation`` from this list.

Each entry: (section, file under app_pages/, title, icon, url_path). The lineage section follows the story's order;
the guided tour walks it in this order too.

The page scripts live in app_pages/, not pages/: Streamlit treats a folder named pages/ beside the entry script as an
old-style multipage app until st.navigation has run, so a deep link opened first on a fresh server (and every
AppTest page switch) would run the page without the app shell.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageEntry:
    section: str
    file: str
    title: str
    icon: str
    url_path: str
    stage: str | None = None  # key in lineage.stages for stage pages


PAGES: tuple[PageEntry, ...] = (
    PageEntry("The lineage", "app_pages/home.py", "Home", ":material/home:", "home"),
    PageEntry("The lineage", "app_pages/gpt2.py", "GPT-2 (recompute)", ":material/counter_1:", "gpt2", "gpt2"),
    PageEntry("The lineage", "app_pages/kv_cache.py", "KV cache", ":material/counter_2:", "kv_cache", "kv_cache"),
    PageEntry(
        "The lineage",
        "app_pages/linear_attention.py",
        "Linear attention",
        ":material/counter_3:",
        "linear_attention",
        "linear_attention",
    ),
    PageEntry("The lineage", "app_pages/deltanet.py", "DeltaNet", ":material/counter_4:", "deltanet", "deltanet"),
    PageEntry("The lineage", "app_pages/mamba2.py", "Mamba-2", ":material/counter_5:", "mamba2", "mamba2"),
    PageEntry("The lineage", "app_pages/gla.py", "GLA", ":material/counter_6:", "gla", "gla"),
    PageEntry(
        "The lineage",
        "app_pages/gated_deltanet.py",
        "Gated DeltaNet",
        ":material/counter_7:",
        "gated_deltanet",
        "gated_deltanet",
    ),
    PageEntry("The lineage", "app_pages/kda.py", "KDA", ":material/counter_8:", "kda", "kda"),
    PageEntry(
        "The lineage", "app_pages/hybrid.py", "Hybrid (Kimi Linear / K3)", ":material/counter_9:", "hybrid", "hybrid"
    ),
    PageEntry("Tools", "app_pages/memory_cost.py", "Memory & cost", ":material/memory:", "memory_cost"),
    PageEntry("Tools", "app_pages/live_benchmark.py", "Live benchmark", ":material/speed:", "live_benchmark"),
    PageEntry("Labs", "app_pages/memory_lab.py", "Memory lab", ":material/science:", "memory_lab"),
)

SECTIONS = ("The lineage", "Labs", "Tools")
