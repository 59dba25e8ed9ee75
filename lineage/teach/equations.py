"""Equation ↔ code for every stage: the update in a few lines with the change from the previous stage marked, and
the few lines of the running code that make that change, cut from the source at run time.

Each stage names the functions that run and, for each, the markers of the lines that carry the change (text the
line contains). :func:`code_lines` finds them with :mod:`inspect`, so what a page shows is the code that runs, with
its file and line numbers — and if the code changes so that a marker no longer matches, :func:`code_lines` raises
(and the tests fail) instead of showing something stale.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from lineage.measure import footprints
from lineage.ops import kv_cache, recurrence, softmax


@dataclass(frozen=True)
class Excerpt:
    """Lines of one function's source: ``lines`` are (line number in the file, text), in order."""

    qualname: str
    path: str  # the file, relative to the repository ("lineage/ops/recurrence.py")
    lines: tuple[tuple[int, str], ...]

    @property
    def text(self) -> str:
        """The lines, with "…" where lines were left out."""
        out: list[str] = []
        last = None
        for n, line in self.lines:
            if last is not None and n > last + 1:
                out.append("…")
            out.append(line)
            last = n
        return "\n".join(out)

    @property
    def where(self) -> str:
        first, last = self.lines[0][0], self.lines[-1][0]
        return f"{self.path}, {self.qualname}, lines {first}–{last}"


def code_lines(fn, markers: tuple[str, ...] | None = None) -> Excerpt:
    """The lines of ``fn``'s source that contain any of ``markers`` (each marker must match at least once), or the
    whole function when ``markers`` is None. Raises ValueError naming a marker that matches nothing."""
    source, start = inspect.getsourcelines(fn)
    path = inspect.getsourcefile(fn) or "?"
    path = path[path.rfind("lineage/") :] if "lineage/" in path else path
    numbered = [(start + i, line.rstrip("\n")) for i, line in enumerate(source)]
    if markers is None:
        return Excerpt(fn.__qualname__, path, tuple(numbered))
    missing = [m for m in markers if not any(m in line for _, line in numbered)]
    if missing:
        raise ValueError(f"{fn.__qualname__} has no line containing {missing}: the code changed, update the markers")
    indent = min(len(line) - len(line.lstrip()) for _, line in numbered if any(m in line for m in markers))
    kept = tuple((n, line[indent:]) for n, line in numbered if any(m in line for m in markers))
    return Excerpt(fn.__qualname__, path, kept)


@dataclass(frozen=True)
class StageEquation:
    """A stage's update as Markdown with the change marked (``:orange[**…**]``), what changed in words, the code."""

    text: str
    change: str
    code: tuple[tuple[object, tuple[str, ...] | None], ...]  # (function, markers or None for all of it)

    def excerpts(self) -> list[Excerpt]:
        return [code_lines(fn, markers) for fn, markers in self.code]


# The reference recurrence's lines, each with the comment above it that writes its equation.
_DECAY = ("# S' = Diag(α_t) S_{t-1}", "if gated:", "S = alpha[:, :, t, :, None] * S")
_ADD = ("# u_t = v_t (additive) or", "u_t = v_t if rule")
_READ = ("# S'ᵀ k_t: what the memory returns", "read_t = torch.einsum", *_ADD)
_WRITE = ("# S_t = S' + k_t u_tᵀ", "S = S + k_t[..., :, None] * u_t[..., None, :]")
_OUT = ("# o_t = S_tᵀ (scale q_t)", "o[:, :, t] = torch.einsum")

EQUATIONS: dict[str, StageEquation] = {
    "gpt2": StageEquation(
        "oₙ = softmax(qₙ :orange[**K₁…ₙ**]ᵀ / √d) :orange[**V₁…ₙ**], with :orange[**K₁…ₙ and V₁…ₙ projected again for "
        "every n**]",
        "every step projects the whole prefix again",
        ((softmax.decode_recompute, ("for t in range", "layer(x[:, : t + 1])", "rows += t + 1")),),
    ),
    "kv_cache": StageEquation(
        ":orange[**K ← [K; kₙ], V ← [V; vₙ]**], then oₙ = softmax(qₙ Kᵀ / √d) V",
        "keep the keys and values: one new row per token",
        (
            (softmax.decode_cached, ("for t in range", "layer(x[:, t : t + 1], cache=cache")),
            (kv_cache.SequenceBuffer.append, ("needed = self._length + n", "copy_(x)")),
        ),
    ),
    "linear_attention": StageEquation(
        "Sₜ = Sₜ₋₁ + :orange[**φ(kₜ)**] vₜᵀ, oₜ = Sₜᵀ :orange[**φ(qₜ)**] / zₜᵀ :orange[**φ(qₜ)**]",
        "a feature map φ replaces the softmax, so the past folds into one K × V state",
        ((recurrence.recurrent_memory, (*_ADD, *_WRITE, *_OUT)),),
    ),
    "deltanet": StageEquation(
        "Sₜ = Sₜ₋₁ + βₜ kₜ (vₜ :orange[**− Sₜ₋₁ᵀ kₜ**])ᵀ",
        "read what the key holds before writing, and write only the correction",
        ((recurrence.recurrent_memory, (*_READ, *_WRITE)),),
    ),
    "mamba2": StageEquation(
        "Sₜ = :orange[**αₜ**] Sₜ₋₁ + kₜ vₜᵀ, with αₜ in (0, 1]",
        "one decay αₜ per head, applied to the whole state before the write",
        ((recurrence.recurrent_memory, (*_DECAY, *_ADD, *_WRITE)),),
    ),
    "gla": StageEquation(
        "Sₜ = :orange[**Diag(αₜ)**] Sₜ₋₁ + kₜ vₜᵀ, with :orange[**0 < αₜ ≤ 1 in each of the K channels**]",
        "the decay becomes a vector, one α per key channel (row of the state); the write still only adds. Gated "
        "DeltaNet, next, returns to one gate per head to bring in the delta rule, and KDA then joins the two",
        ((recurrence.recurrent_memory, (*_DECAY, *_ADD, *_WRITE)),),
    ),
    "gated_deltanet": StageEquation(
        "Sₜ = :orange[**αₜ**] Sₜ₋₁ + βₜ kₜ (vₜ − (:orange[**αₜ**] Sₜ₋₁)ᵀ kₜ)ᵀ",
        "DeltaNet's write after Mamba-2's scalar decay: decay first, then correct",
        ((recurrence.recurrent_memory, (*_DECAY, *_READ, *_WRITE)),),
    ),
    "kda": StageEquation(
        "Sₜ = :orange[**Diag(αₜ)**] Sₜ₋₁ + βₜ kₜ (vₜ − (:orange[**Diag(αₜ)**] Sₜ₋₁)ᵀ kₜ)ᵀ",
        "over GLA, KDA adds the delta rule's correction (it can overwrite a fact); over Gated DeltaNet, a decay per "
        "key channel (it can keep one fact while the other channels forget)",
        ((recurrence.recurrent_memory, (*_DECAY, *_READ, *_WRITE)),),
    ),
    "hybrid": StageEquation(
        "layer ℓ = :orange[**MLA (softmax over a cache)**] when ℓ is a multiple of 4, KDA (a fixed state) otherwise",
        "a few softmax layers among the KDA layers",
        ((footprints.periodic_schedule, None),),
    ),
}


# DeltaNet's chunked form as it runs: the WY/UT transform (its triangular solve included) and the numbered steps of
# chunk_memory and of the within-chunk part it calls.
CHUNKED_DELTA: tuple[tuple[object, tuple[str, ...] | None], ...] = (
    (recurrence.ut_transform, None),
    (recurrence._within_chunks, ("# 2.", "decayed_products(", "# 3.", "U, W = ut_transform(")),
    (
        recurrence._chunk_span,
        ("# 2.–3.", "# 4.", "u_i = torch.baddbmm", "S = torch.baddbmm(", "# 5.", "o = torch.baddbmm("),
    ),
    (recurrence.chunk_memory, ("# 1.", "# 2.–5.", "o, S = _chunk_span(")),
)


def chunked_delta() -> list[Excerpt]:
    """The chunked delta rule's excerpts (see ``CHUNKED_DELTA``)."""
    return [code_lines(fn, markers) for fn, markers in CHUNKED_DELTA]


def equation(stage_key: str) -> StageEquation:
    if stage_key not in EQUATIONS:
        raise ValueError(f"stage must be one of {', '.join(EQUATIONS)}, got {stage_key!r}")
    return EQUATIONS[stage_key]
