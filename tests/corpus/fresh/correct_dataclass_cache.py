"""Fresh correct, appended to the reference: correct: KVCache as a @dataclass whose buffers are field(init=False) made in __post_init__ (a helper who read only the handout wrote it)"""

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class KVCache:
    batch_size: int
    n_heads: int
    max_len: int
    d_head: int
    dtype: torch.dtype = torch.float32
    device: Optional[torch.device] = None
    length: int = field(init=False, default=0)
    keys: torch.Tensor = field(init=False, repr=False)
    values: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self):
        shape = (self.batch_size, self.n_heads, self.max_len, self.d_head)
        self.keys = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.values = torch.zeros(shape, dtype=self.dtype, device=self.device)

    def append(self, k, v):
        _check_append(self, k, v)
        end = self.length + k.shape[2]
        self.keys[:, :, self.length:end] = k
        self.values[:, :, self.length:end] = v
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]

