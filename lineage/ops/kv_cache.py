"""The KV cache: every key and value a softmax-attention layer has seen, kept to be read again.

A KV cache never forgets and never compresses: it grows by Hkv × (K + V) numbers per token per sequence, which is
what eventually bounds long-context decoding (see :mod:`lineage.measure.footprints`). :class:`SequenceBuffer` makes one
append O(1) amortised, so decoding N tokens copies O(N) numbers, not O(N²).
"""

from __future__ import annotations

import torch

from lineage import checks

__all__ = ["KVCache", "SequenceBuffer", "check_cache"]


class SequenceBuffer:
    """A tensor that grows along one dimension with amortised O(1) appends.

    Storage is preallocated and doubles when full (like a Python list), so appending N tokens one at a time copies
    O(N) elements in total, where ``torch.cat`` on every step would copy O(N²).

    Args:
        shape: the shape of an empty buffer, with 0 along ``dim`` (e.g. ``(B, Hkv, 0, K)``, dim 2).
        dim: the growing (sequence) dimension.
        capacity: initial number of slots along ``dim``.
    """

    def __init__(self, shape: tuple[int, ...], dim: int, *, dtype: torch.dtype, device=None, capacity: int = 16):
        self.dim = dim
        self._length = 0
        self._data = torch.empty(self._with_len(shape, dim, capacity), dtype=dtype, device=device)

    @staticmethod
    def _with_len(shape, dim: int, n: int) -> tuple[int, ...]:
        shape = list(shape)
        shape[dim] = n
        return tuple(shape)

    @classmethod
    def wrap(cls, x: torch.Tensor, dim: int) -> SequenceBuffer:
        """A full buffer whose storage is ``x`` itself (no copy). ``x`` is never written: the next append
        reallocates because there is no spare capacity."""
        buf = cls.__new__(cls)
        buf.dim, buf._length, buf._data = dim, x.shape[dim], x
        return buf

    @property
    def length(self) -> int:
        return self._length

    @property
    def capacity(self) -> int:
        return self._data.shape[self.dim]

    @property
    def data(self) -> torch.Tensor:
        """A view of the filled part."""
        return self._data.narrow(self.dim, 0, self._length)

    @property
    def nbytes(self) -> int:
        """Bytes of the filled part (what the sequence needs), not of the reserved capacity."""
        return self.data.numel() * self._data.element_size()

    @property
    def reserved_nbytes(self) -> int:
        """Bytes actually allocated, spare capacity included."""
        return self._data.numel() * self._data.element_size()

    def append(self, x: torch.Tensor) -> None:
        n = x.shape[self.dim]
        # [panel:buffer-room] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        needed = self._length + n
        # [panel:buffer-room] end
        if needed > self.capacity:
            # Doubling: each element is copied O(1) times on average over a whole generation.
            grown = torch.empty(
                self._with_len(self._data.shape, self.dim, max(2 * self.capacity, needed, 1)),
                dtype=self._data.dtype,
                device=self._data.device,
            )
            grown.narrow(self.dim, 0, self._length).copy_(self.data)
            self._data = grown
        # [panel:buffer-write] start — code-panel marker: lineage.teach.equations shows the lines to its end in the app
        self._data.narrow(self.dim, self._length, n).copy_(x)
        # [panel:buffer-write] end
        self._length = needed

    def clone(self) -> SequenceBuffer:
        buf = SequenceBuffer(
            self._data.shape, self.dim, dtype=self._data.dtype, device=self._data.device, capacity=max(self.capacity, 1)
        )
        buf.append(self.data)
        return buf


class KVCache:
    """Every key and value seen so far: k [B, Hkv, N, K], v [B, Hkv, N, V].

    This is the memory of a softmax-attention layer. It never forgets and never compresses, so it grows by
    Hkv × (K + V) numbers per token per sequence in the batch.

    Args:
        batch, kv_heads, key_dim, value_dim: B, Hkv, K, V.
        dtype: storage dtype (what a real cache holds: the model's dtype).
        capacity: initial number of token slots; the buffer doubles when full.
    """

    def __init__(
        self,
        batch: int,
        kv_heads: int,
        key_dim: int,
        value_dim: int,
        *,
        dtype: torch.dtype = torch.float32,
        device=None,
        capacity: int = 16,
    ):
        for name, x in (("batch", batch), ("kv_heads", kv_heads), ("key_dim", key_dim), ("value_dim", value_dim)):
            checks.positive_int(name, x)
        self._k = SequenceBuffer((batch, kv_heads, 0, key_dim), 2, dtype=dtype, device=device, capacity=capacity)
        self._v = SequenceBuffer((batch, kv_heads, 0, value_dim), 2, dtype=dtype, device=device, capacity=capacity)

    @classmethod
    def from_tensors(cls, k: torch.Tensor, v: torch.Tensor) -> KVCache:
        """A cache holding k [B, Hkv, N, K] and v [B, Hkv, N, V] without copying them (the next append
        reallocates, so ``k`` and ``v`` are never written)."""
        checks.tensor("k", k, rank=4)
        checks.tensor("v", v, rank=4)
        if v.shape[:3] != k.shape[:3]:
            raise ValueError(
                f"v must have shape [B, Hkv, N, V] with (B, Hkv, N) = {tuple(k.shape[:3])} as in k, "
                f"got {tuple(v.shape)}"
            )
        if v.dtype != k.dtype:
            raise TypeError(f"k and v must share a dtype, got {k.dtype} and {v.dtype}")
        cache = cls.__new__(cls)
        cache._k, cache._v = SequenceBuffer.wrap(k, 2), SequenceBuffer.wrap(v, 2)
        return cache

    @property
    def batch(self) -> int:
        return self._k.data.shape[0]

    @property
    def kv_heads(self) -> int:
        return self._k.data.shape[1]

    @property
    def key_dim(self) -> int:
        return self._k.data.shape[3]

    @property
    def value_dim(self) -> int:
        return self._v.data.shape[3]

    @property
    def dtype(self) -> torch.dtype:
        return self._k.data.dtype

    @property
    def device(self) -> torch.device:
        return self._k.data.device

    @property
    def length(self) -> int:
        """N, the number of tokens held."""
        return self._k.length

    @property
    def capacity(self) -> int:
        """Token slots allocated (>= length)."""
        return self._k.capacity

    @property
    def keys(self) -> torch.Tensor:
        """[B, Hkv, N, K], a view of the filled part."""
        return self._k.data

    @property
    def values(self) -> torch.Tensor:
        """[B, Hkv, N, V], a view of the filled part."""
        return self._v.data

    @property
    def nbytes(self) -> int:
        """Bytes held for the filled part: N × Hkv × (K + V) × B × element size."""
        return self._k.nbytes + self._v.nbytes

    @property
    def reserved_nbytes(self) -> int:
        """Bytes allocated, spare capacity included."""
        return self._k.reserved_nbytes + self._v.reserved_nbytes

    def append(self, k_t: torch.Tensor, v_t: torch.Tensor) -> None:
        """Add n >= 1 tokens: k_t [B, Hkv, n, K], v_t [B, Hkv, n, V] (cast to the cache's dtype)."""
        for name, x, d in (("k_t", k_t, self.key_dim), ("v_t", v_t, self.value_dim)):
            if not isinstance(x, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
            want = (self.batch, self.kv_heads, d)
            if x.dim() != 4 or (x.shape[0], x.shape[1], x.shape[3]) != want:
                raise ValueError(
                    f"{name} must have shape [B, Hkv, n, D] with (B, Hkv, D) = {want} as in the cache, "
                    f"got {tuple(x.shape)}"
                )
        if k_t.shape[2] != v_t.shape[2]:
            raise ValueError(f"k_t and v_t must hold the same number of tokens, got {k_t.shape[2]} and {v_t.shape[2]}")
        self._k.append(k_t)
        self._v.append(v_t)

    def clone(self) -> KVCache:
        """An independent copy (appending to it leaves this cache unchanged)."""
        cache = KVCache.__new__(KVCache)
        cache._k, cache._v = self._k.clone(), self._v.clone()
        return cache

    def __repr__(self) -> str:
        return (
            f"KVCache(B={self.batch}, Hkv={self.kv_heads}, N={self.length}, K={self.key_dim}, "
            f"V={self.value_dim}, dtype={self.dtype}, nbytes={self.nbytes})"
        )


def check_cache(cache, B: int, Hkv: int, K: int, V: int, name: str = "initial_state") -> KVCache | None:
    """Check an optional KVCache against the shapes of q, k, v (a TypeError for another object)."""
    if cache is None:
        return None
    if not isinstance(cache, KVCache):
        raise TypeError(f"{name} must be a KVCache or None, got {type(cache).__name__}")
    got = (cache.batch, cache.kv_heads, cache.key_dim, cache.value_dim)
    if got != (B, Hkv, K, V):
        raise ValueError(f"{name} must hold (B, Hkv, K, V) = {(B, Hkv, K, V)} to match q, k, v, got {got}")
    return cache
