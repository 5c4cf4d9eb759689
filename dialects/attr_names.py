"""The discardable attributes geir writes on ops and arguments, and reads in other layers.

One name each, so a reader finds who writes and who reads an attribute by searching for its
constant. Attributes an op declares itself (properties such as `offset` or `kind`) live with
the op in its dialect.
"""

# Function arguments and results (graph and host functions).
ONNX_NAME = "onnx.name"
"""The tensor's name in the model: how inputs are fed and outputs returned."""
OUTPUT = "ascend.output"
"""A host argument the program writes: a graph output."""
WORKSPACE = "ascend.workspace"
"""The host argument that holds every planned gm buffer."""
UPDATES = "ascend.updates"
"""An output that is an input updated in place (state such as a KV cache: GE's RefData): the
index of that input argument. The runtime passes one buffer for both, so the program writes
only what changes."""
MAX_POSITION = "ascend.max_position"
"""An input read as a KV-cache position: the largest value whose rows fit every cache it
indexes. The runtime rejects a larger one before anything runs."""

EXTENT = "geir.extent"
"""On a function argument (graph: tensor<1xi64>; host: memref<1xi64>): [[input name, axis], ...],
the dims of a shape range (driver/shape_ranges.py) whose run-time size the argument holds. The
program is compiled at the range's upper bound; the runtime fills it from the inputs' shapes.
On a kernel: the kernel takes that argument after its outputs and computes only the real rows
(lowering/templates/common.py, Extent)."""
KEY_EXTENT = "geir.key_extent"
"""On a kernel: it takes, after its outputs (and `geir.extent`'s argument), the run-time size of a
shape range's dim that its attention's keys hold, and masks the padded keys
(lowering/templates/attention.py)."""
RANGE = "geir.range"
"""On an extent argument: [lo, hi], the sizes the program takes (it is compiled at hi)."""
DIMS = "geir.dims"
"""On a graph op with symbolic dims: per result, each dim an int or its expression in the extents'
symbols (`"12*seq"`), written by graph-infer-symbolic-shapes."""
PACKED_ROWS = "geir.packed_rows"
"""On a shape range program's matmul kernel: the r of each class of tiles that packs groups (a
tile of r-row segments of several batch rows' positions, run for the groups whose real rows hold
bit r; lowering/templates/cube/matmul_kernel.py `_packings`), least first."""
LIVE_ABOVE = "geir.live_above"
"""On a shape range program's kernel whose rows start past the range's first positions (a piece
of a matmul over L2 holding the same rows of every batch row): [extent argument index, P] - at
n <= P positions it has no real row, and the host, which knows n, does not launch it."""
ALL_ROWS = "geir.all_rows"
"""On a shape range program's kernel that does not take the extent: why it computes every row of
the range's dim (one line; geir-compile prints it)."""
EXTENT_ROWS = "geir.extent_rows"
"""On an output (host argument): [[extent name, axis, inner, outer], ...] - where it holds each range's
dim (passes/graph/padded_dims.py, Carried): the runtime crops it to the real rows
(runtime/shape_ranges.py)."""

# Host functions (ascend-plan-memory).
WORKSPACE_SIZE = "ascend.workspace_size"
"""Bytes of the planned workspace."""
MEMORY_PLAN = "ascend.memory_plan"
"""{strategy, lower_bound, no_reuse}: how the workspace was planned and what it is measured by."""

# Constants (frontend/builder.py).
PLACEHOLDER = "geir.placeholder"
"""A shape-only weight (the value: its name): the graph.constant's value is a splat of 0 standing
for data never given; the name keeps CSE from merging two of them."""

# Multi-device programs (passes/graph/tensor_parallel.py).
SHARD = "geir.shard"
"""On a function result: array<i64: axis, groups> - each rank returns its block of `axis` (of each
of `groups` equal groups), and the caller concatenates the ranks' blocks in rank order."""

# gm buffers (ascend.alloc in a host function).
LIVE = "live"
"""[first, last] launch (host program order) that touches the buffer."""
INPLACE = "inplace"
"""The buffer shares the bytes of an input that dies at the kernel writing it."""
EXCLUSIVE = "exclusive"
"""The buffer is live for the whole program (never shares bytes)."""
ELIDED = "geir.elided"
"""The buffer holds what an elided copy kernel (named by the value) wrote, for geir-compare."""

# Kernels (ascend.kernel).
TEMPLATE = "template"
"""The lowering template that built the kernel (cube, row, pool, lrn, data, gather, layout)."""
FALLBACK = "fallback"
"""The kernel runs `ascend.reference` (the op's numpy semantics), not hardware ops."""
LAYOUT_CONVERSION = "layout_conversion"
"""The kernel only converts storage formats (lowered from graph.trans_data)."""
OUTPUTS = "geir.outputs"
"""[[result, node names...], ...]: the graph value each output of a kernel holds (a piece of a split
fusion, or a fused kernel with several outputs); after them only the scratch arguments."""
SCRATCH = "geir.scratch"
"""N: the kernel's last N arguments are its own gm workspace (a mix kernel's staging of the
int32 accumulator), allocated by the host for each launch: written, but not outputs."""
L2_BLOCK = "geir.l2_block"
"""[first row, rows, first column, columns]: the block of each batch's result the kernel
computes (one launch of a matmul split to fit L2; lowering/templates/cube/tiling.py l2_pieces)."""
BYTE_COPIES = "geir.byte_copies"
"""[dst, dst_offset, src, src_offset, bytes] runs: the kernel only moves contiguous bytes."""

# Graph ops.
KEEP = "graph.keep"
"""A debugging tap: the op's results stay computable (no fusion hides them)."""
PATTERN = "graph.pattern"
"""On graph.fusion: the graph-fuse pattern that formed it."""
