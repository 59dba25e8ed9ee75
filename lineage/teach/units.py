"""One stage, one unit: where a stage's page, equation, claim and prose are found.

A stage of the lineage (:mod:`lineage.stages`) is taught by four things that live in their layers: its page script
(``app_pages/<stage>.py``, the layout), its equation beside the code that implements it
(:mod:`lineage.teach.equations`), the claim its page proves on the story (:mod:`lineage.teach.claims`) and the prose
its page opens with. :func:`unit` gathers them for one stage, so that every consumer (the app's pages and navigation
through :mod:`ui.stage_page` and :mod:`ui.nav`, the static site, the tests) asks one place. Like
:mod:`lineage.teach.equations`, this is per-stage presentation: the one module besides it that names stages one by one.

A linear-memory stage's claim is a :class:`ClaimRecipe`: the claim function, the stage it answers (the comparison run on
the same story) and the knobs that comparison runs with. :func:`stage_claim` runs it, so a page, the site and the tests
compute a stage's claim one way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from lineage import stages
from lineage.mechanisms import mechanism
from lineage.ops.gated_deltanet2 import gated_ut_transform
from lineage.ops.io_cost import recompute_generation_cost
from lineage.ops.kv_cache import KVCache
from lineage.ops.recurrence import parallel_memory
from lineage.ops.softmax import CausalSelfAttention, decode_recompute, decode_step
from lineage.teach import claims
from lineage.teach.equations import StageEquation, equation
from lineage.teach.story import Story

DEFAULT_KNOBS = claims.Knobs()  # every stage page's knobs as a visitor first finds them
PAGES_DIR = "app_pages"  # a stage's page is PAGES_DIR/<stage key>.py


@dataclass(frozen=True)
class ClaimRecipe:
    """How a linear-memory stage's page proves its claim on the story."""

    prove: Callable[[str, claims.Run, Story, claims.Run, claims.Knobs], claims.StageClaim]
    against: str  # the stage whose run on the same story the claim is compared with
    against_knobs: Callable[[claims.Knobs], claims.Knobs]  # the comparison's knobs, from the page's


def _same(knobs: claims.Knobs) -> claims.Knobs:
    return knobs


def _defaults(knobs: claims.Knobs) -> claims.Knobs:
    """The comparison at its own page's defaults (the stage it answers, as a visitor first sees it)."""
    return DEFAULT_KNOBS


def _gate_open(knobs: claims.Knobs) -> claims.Knobs:
    """The same writes with the gate open on every token (α = 1): the stage without its forgetting."""
    return replace(knobs, alpha_keep=1.0, alpha_switch=1.0)


def _linear(stage_key, run, story, against, knobs):
    return claims.linear_claim(run, story, against, knobs.feature_map)


def _deltanet(stage_key, run, story, against, knobs):
    return claims.deltanet_claim(run, story, against, knobs.beta)


def _forget(stage_key, run, story, against, knobs):
    return claims.forget_claim(stage_key, run, story, against)


def _channel(stage_key, run, story, against, knobs):
    return claims.channel_claim(stage_key, run, story, against)


@dataclass(frozen=True)
class StageUnit:
    """Everything that teaches one stage, found in one place."""

    stage: str  # the stage's key (lineage.stages)
    prose: str = ""  # the narrative its page opens with (Markdown)
    code: tuple = ()  # what its page shows of the source, under the equation (default: its mechanism's op)
    claim: ClaimRecipe | None = None  # how its page proves its claim on the story (linear-memory stages)
    shown_as: str = ""  # the title over the code it shows, where it is not the op's (default: code_title's)

    @property
    def page(self) -> str:
        """Its page script, relative to the repository root."""
        return f"{PAGES_DIR}/{self.stage}.py"

    @property
    def equation(self) -> StageEquation:
        return equation(self.stage)

    @property
    def code_title(self) -> str:
        """The title over the code it shows: the op, and its T × T form when that is shown too."""
        if self.shown_as:
            return self.shown_as
        return "The whole op" + (" and its T × T form" if parallel_memory in self.code else "")


_PROSE = {
    "gpt2": """
GPT-2 writes text one token at a time, and every new token is allowed to look at all the tokens before it. Each
attention head turns a token into a query, a key and a value; the newest query is compared with every key, the
scores go through a softmax, and the weights mix the values. The lookup is exact: any earlier token can be found,
however far back.

The catch is what happens between tokens. Run naively, the model keeps nothing: to produce token N it feeds all N
tokens through the layer again, projecting N rows of queries, keys and values, although N − 1 of those rows are
identical to the ones it computed one step earlier. Only the last row is new. The work per token therefore grows
with the length of the text, and a whole generation costs 1 + 2 + … + N rows: quadratic in N.
""",
    "kv_cache": """
GPT-2 without a cache threw away the keys and values of the prefix after every token, then computed them again.
In a causal model they cannot change — token 3's key is the same whether 10 or 10,000 tokens follow — so the fix
is to keep them. Each step projects the new token once, appends its key and value to the cache, and lets the new
query attend to everything stored. The work per token drops from N rows to one.

The cost moves from arithmetic to memory. The cache holds two vectors per token, per head, per layer, for as long
as the text lasts, so it grows in a straight line with the context. And every decoding step reads the whole of it
to compute one new token, so at long context the speed of a step is set by how fast memory can be read, not by how
fast the chip can multiply.
""",
    "linear_attention": """
A KV cache keeps every key and value because softmax needs them all: exp(q·k) has to be evaluated for each stored
key, one by one. Katharopoulos et al. (2020) replaced that kernel with a plain dot product of features,
φ(q)·φ(k). Now the sum over the past can be regrouped: Σ_s (φ(q)·φ(k_s)) v_s = φ(q)ᵀ (Σ_s φ(k_s) v_sᵀ). The
bracket does not depend on the query, so it can be kept as a running K×V matrix S and updated with one outer
product per token, S ← S + φ(k_t) v_tᵀ. Next to it runs a normaliser z ← z + φ(k_t), standing in for the softmax's
denominator; here it is the last column of the state, fed by a value of 1.

The state has the same size after ten tokens and after a million, and each step costs the same. The same outputs
can also be computed all at once, in parallel, as attention without the softmax: a T × T matrix of φ(q_t)·φ(k_j),
masked to j ≤ t. But the update only ever adds. Nothing stored is corrected or removed, so keys that overlap keep
blurring each other's values as the text goes on.
""",
    "deltanet": """
Linear attention writes blindly: the new pair is added on top of whatever the state already returns for that
key. The delta rule, an old idea from the fast-weight programmers of the 1990s made practical by Schlag et al.
and Yang et al., looks first. It asks the memory what it currently holds at the incoming key, v_old = Sᵀk_t,
compares that with the value it should hold, and writes only the difference, scaled by a strength β_t:
S ← S + β_t k_t (v_t − v_old)ᵀ.

If the memory already returns v_t, nothing changes. With a unit key and β = 1 the old value at that key is
replaced outright; smaller β moves it part of the way. So the same fixed-size matrix can now be edited, not just
piled onto. The price is that each step depends on the one before through Sᵀk_t, which looks hopelessly
sequential for training on long sequences. The second half of this page shows how it is parallelised anyway.
""",
    "mamba2": """
Linear attention and DeltaNet keep everything they are given. DeltaNet can rewrite the value stored under one key,
but nothing ever fades, so after a topic change the old topic still fills the state and muddies every read.
Mamba-2 adds the missing verb: before token t writes, the whole state is multiplied by a gate α_t between 0 and 1
that the layer computes from the token itself. A gate near 1 keeps the past; a gate near 0 clears it.

The gate is a single number per head, so every entry of the state fades at the same pace. Unroll the recurrence
and the output at step i is a weighted sum over earlier tokens j with weight qᵢ·kⱼ times the product of the gates
in between. That is attention with a causal mask that decays with distance: the same layer can be trained as
masked attention and run as a recurrence with a fixed-size state. Dao and Gu call this *state space duality*.
""",
    "gla": """
Mamba-2's gate fades the whole state at one rate. Gated Linear Attention gives every key channel — every row of
the state — a gate of its own. Rows with a gate near 1 hold on to what was written long ago; rows with a small gate
keep only the last few tokens. Writes are still plain additions, as in linear attention.

GLA is the additive cell of the grid's per-channel column; KDA below it keeps this gate and swaps the addition for
the delta rule.
""",
    "gated_deltanet": """
By now each half of the job has a mechanism. DeltaNet edits: it reads what the state returns for the incoming key
and writes only the difference, so a key's value can be replaced. Mamba-2 forgets: a gate shrinks the whole state
before each write. Each lacks the other's verb — DeltaNet never lets go of anything, Mamba-2 can only pile on.

Gated DeltaNet runs both, in order: first scale the state by α_t, then apply the delta-rule write with strength
β_t. Set α = 1 and nothing decays: that is DeltaNet, exactly. Set α = 0 and the state is cleared before every write.
In between, something written at step x and read t steps later has been multiplied by every gate along the way,
αₓ₊₁ ⋯ αₓ₊ₜ, so items written at different moments fade at different speeds.
""",
    "kda": """
Gated DeltaNet forgets and edits, but with one gate for the whole head: every row of the state fades at the same
pace, so the head must choose between remembering long and tracking recent tokens. Kimi Linear's KDA makes the gate
a vector, one α per key channel, and keeps the delta-rule write. Some channels can hold a fact across thousands of
tokens while others turn over every few steps, and the layer learns which is which.
""",
    "gated_deltanet2": """
KDA edits its memory with one number per token, β. The same β sets how much of the old value at the key is erased
and how much of the new value is written, so after a write the key reads back a blend: (1 − β)·old + β·new. Gated
DeltaNet-2 (NVIDIA, 2026) splits β in two, each a vector: an erase gate b on the key axis and a write gate w on the
value axis, with KDA's per-channel decay kept as it was (the equation below).

With a unit key the read after the step is S'ᵀ((1 − b) ⊙ k) + w ⊙ v: a token can erase an association without
writing a new one, replace it however weakly it writes, or add without erasing. Set b = w = β and it is KDA again,
term by term (checked to rounding by `python -m lineage verify`). The chunked form is KDA's with β moved inside
the WY/UT transform: the erase gate rides on one side of the key products, the write gate on the values, so the work
per chunk is KDA's. What it costs is in the layer: K + V gate numbers per token and head instead of one, and an erase
matrix that is no longer symmetric — with an uneven b it can stretch the state along some direction, which KDA's
I − β k kᵀ never does with a unit key.
""",
}


def _linear_unit(stage_key: str, recipe: ClaimRecipe, *, parallel: bool = False) -> StageUnit:
    op = mechanism(stage_key).op
    return StageUnit(stage_key, _PROSE[stage_key], (op, parallel_memory) if parallel else (op,), recipe)


SOFTMAX_CODE_TITLE = "The code that runs"  # over the softmax pages' code: the decode loops, not one op

_UNITS = {
    u.stage: u
    for u in (
        StageUnit(
            "gpt2",
            _PROSE["gpt2"],
            (decode_recompute, CausalSelfAttention.forward, recompute_generation_cost),
            shown_as=SOFTMAX_CODE_TITLE,
        ),
        StageUnit("kv_cache", _PROSE["kv_cache"], (KVCache.append, decode_step), shown_as=SOFTMAX_CODE_TITLE),
        _linear_unit("linear_attention", ClaimRecipe(_linear, "deltanet", _defaults), parallel=True),
        _linear_unit("deltanet", ClaimRecipe(_deltanet, "linear_attention", _defaults)),
        _linear_unit("mamba2", ClaimRecipe(_forget, "mamba2", _gate_open), parallel=True),
        _linear_unit("gla", ClaimRecipe(_channel, "mamba2", _same)),
        _linear_unit("gated_deltanet", ClaimRecipe(_forget, "deltanet", _same)),
        _linear_unit("kda", ClaimRecipe(_channel, "gated_deltanet", _same)),
        # after the article: its claim needs an erase and a write gate, which the story's knobs (one β) do not set,
        # so its page proves it (lineage.teach.after_article.erase_write_claim)
        StageUnit(
            "gated_deltanet2",
            _PROSE["gated_deltanet2"],
            (mechanism("gated_deltanet2").op, gated_ut_transform),
            shown_as="The whole op and its chunked form's transform",
        ),
    )
}


def unit(stage_key: str) -> StageUnit:
    """The unit of a stage of :mod:`lineage.stages` (a stage without prose or claim written here has an empty one:
    its page holds them, as the softmax pages and the hybrid do)."""
    stages.stage(stage_key)  # a ValueError listing the stages for an unknown key
    return _UNITS.get(stage_key, StageUnit(stage_key))


def units() -> tuple[StageUnit, ...]:
    """Every stage's unit, in the lineage's order."""
    return tuple(unit(s.key) for s in stages.all_stages())


def stage_claim(
    stage_key: str,
    run: claims.Run,
    story: Story,
    knobs: claims.Knobs = DEFAULT_KNOBS,
    against: claims.Run | None = None,
) -> claims.StageClaim:
    """The claim a linear-memory stage's page makes on ``story`` from its ``run`` (at ``knobs``), against the stage it
    answers: ``against``, or that stage's reference run on the same story (:func:`lineage.teach.claims.trace_story`
    at the recipe's knobs; a page that has run it already passes it)."""
    recipe = unit(stage_key).claim
    if recipe is None:
        raise ValueError(f"stage {stage_key!r} has no claim recipe: its page computes its own claim")
    if against is None:
        against = claims.trace_story(recipe.against, story, recipe.against_knobs(knobs))
    return recipe.prove(stage_key, run, story, against, knobs)
