"""ir/bytecode.py: the binary form loads back to the module it was written from (its text, value
names, locations, every attribute kind), and bytes that are not that form are clear errors.
A whole compiled program through the offline model: test_api.py."""

from __future__ import annotations

import json
import math
import struct

import pytest
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, i32
from xdsl.dialects import test as xdsl_test
from xdsl.ir import Block, Region

from geir.dialects import make_context
from geir.ir import bytecode
from geir.ir.text import parse_module, print_module

PROGRAM = '''
func.func @main(%src: memref<4x8xf32, strided<[8, 1], offset: ?>, "gm">, %c: memref<4xf32, affine_map<(d0) -> (d0)>>,
                %t: tensor<2x3xf16>) -> (f32, f32, f32, i64) {
  %nan = arith.constant 0x7FC00000 : f32 loc(fused["conv1", "relu1"])
  %inf = arith.constant 0x7F800000 : f32 loc("conv1")
  %neg_zero = arith.constant -0.0 : f32
  %i = arith.constant -9223372036854775808 : i64
  %lo = arith.constant 1 : index
  %v = memref.subview %src[%lo, 0] [2, 8] [1, 1] : memref<4x8xf32, strided<[8, 1], offset: ?>, "gm"> to memref<2x8xf32, strided<[8, 1], offset: ?>, "gm">
  %r = scf.for %k = %lo to %lo step %lo iter_args(%acc = %nan) -> (f32) {
    %s = arith.addf %acc, %inf : f32
    scf.yield %s : f32
  }
  func.return %r, %inf, %neg_zero, %i : f32, f32, f32, i64
}
'''


def _round_trip(module: ModuleOp, ctx=None) -> ModuleOp:
    return bytecode.decode(bytecode.encode(module), ctx or make_context())


def test_the_binary_form_loads_back_to_the_same_program():
    """Text, value names, fused and named locations, NaN / inf / -0.0 and the most negative
    i64, dense arrays, strided layouts, an affine map (an attribute written as its text)."""
    module = parse_module(PROGRAM, make_context())
    back = _round_trip(module)
    assert print_module(back) == print_module(module)
    back.verify()
    ops = list(back.walk())
    assert [str(op.location) for op in ops[2:4]] == [str(op.location) for op in list(module.walk())[2:4]]
    assert "fused" in str(ops[2].location)
    nan = ops[2].properties["value"].value.data
    assert math.isnan(nan) and ops[4].properties["value"].value.data == 0.0
    assert math.copysign(1.0, ops[4].properties["value"].value.data) == -1.0
    assert ops[1].body.block.args[0].name_hint == "src"


def test_successors_and_block_arguments_keep_their_blocks():
    ctx = make_context()
    ctx.load_dialect(xdsl_test.Test)
    second = Block(arg_types=[i32])
    first = Block([xdsl_test.TestTermOp(successors=[second])])
    second.add_op(xdsl_test.TestTermOp(successors=[first]))
    module = ModuleOp([func.FuncOp("f", ((), ()), Region([first, second]))])
    back = _round_trip(module, ctx)
    assert print_module(back) == print_module(module)
    b0, b1 = back.body.block.first_op.body.blocks
    assert b0.first_op.successors[0] is b1 and b1.first_op.successors[0] is b0


def test_a_use_before_its_definition_in_program_order_cannot_be_written():
    """Possible across the blocks of a CFG region; the offline model then keeps the text alone."""
    late = arith.ConstantOp.from_int_and_width(1, 32)
    use = arith.AddiOp(late.result, late.result)
    module = ModuleOp([func.FuncOp("f", ((), ()), Region([Block([use]), Block([late])]))])
    with pytest.raises(bytecode.BytecodeError, match="'arith.addi' uses a value before its definition"):
        bytecode.encode(module)


def test_constant_bytes_can_live_outside_the_form():
    weights = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    module = parse_module('func.func @f() -> tensor<4xf32> {\n'
                          '  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>\n'
                          '  func.return %w : tensor<4xf32>\n}', make_context())
    inline = bytecode.encode(module)
    data = bytecode.encode(module, external={weights: "w0"})
    assert weights.hex().encode() in inline and weights.hex().encode() not in data and b'"w0"' in data
    back = bytecode.decode(data, make_context(), blobs={"w0": memoryview(weights)})
    assert print_module(back) == print_module(module)
    with pytest.raises(bytecode.BytecodeError, match="constant bytes 'w0' are not in the weights"):
        bytecode.decode(data, make_context(), blobs={})


def _head_and_ops(data: bytes) -> tuple[dict, bytes]:
    start = len(bytecode.MAGIC) + 8
    size = int.from_bytes(data[len(bytecode.MAGIC):start], "little")
    return json.loads(data[start:start + size]), data[start + size:]


def _assemble(head: dict, ops: bytes) -> bytes:
    text = json.dumps(head).encode()
    return bytecode.MAGIC + len(text).to_bytes(8, "little") + text + ops


@pytest.mark.parametrize("damage,message", [
    (lambda d: b"not-geir" + d[8:], "not a geir binary module"),
    (lambda d: d[:-8], "malformed binary module"),
    (lambda d: d + b"\x00\x00\x00\x00", "1 values after the module"),
    (lambda d: _assemble({**_head_and_ops(d)[0], "version": 99}, _head_and_ops(d)[1]), "version 99"),
    (lambda d: _assemble({**_head_and_ops(d)[0], "strings": [s.replace("arith.addf", "arith.nope")
                                                             for s in _head_and_ops(d)[0]["strings"]]},
                         _head_and_ops(d)[1]), "unknown op 'arith.nope'"),
    (lambda d: _assemble({**_head_and_ops(d)[0], "attrs": [["p", "nope.type", []]] + _head_and_ops(d)[0]["attrs"][1:]},
                         _head_and_ops(d)[1]), "unknown attribute 'nope.type'"),
    (lambda d: _assemble({**_head_and_ops(d)[0], "attrs": [["t", "#nope<"]] + _head_and_ops(d)[0]["attrs"][1:]},
                         _head_and_ops(d)[1]), "malformed binary module: ParseError"),
    (lambda d: _assemble({**_head_and_ops(d)[0], "attrs": [["p", "integer_type", []]] + _head_and_ops(d)[0]["attrs"][1:]},
                         _head_and_ops(d)[1]), "malformed binary module"),
])
def test_bytes_that_are_not_the_form_are_a_clear_error(damage, message):
    data = bytecode.encode(parse_module(PROGRAM, make_context()))
    with pytest.raises(bytecode.BytecodeError, match=message):
        bytecode.decode(damage(data), make_context())


def test_a_form_holding_no_module_is_an_error():
    op = func.FuncOp("f", ((), ()), Region([Block([func.ReturnOp()])]))
    with pytest.raises(bytecode.BytecodeError, match="holds 'func.func', not a module"):
        bytecode.decode(bytecode.encode(op), make_context())


def test_every_stage_of_a_compile_loads_back_to_its_text():
    """Each stage's module - graph dialect (NC1HWC0 and fractal formats, fusions, fp16 casts,
    node locations) and the lowered program (kernels, streams, the memory plan) - prints the
    same after the binary form."""
    import geir
    from geir.testing.suite import light_model

    cm = geir.compile(light_model("light_squeezenet"), opt_level=3, keep_stages=True)
    for name in cm.stage_names:
        module = cm.stages[name]
        assert print_module(_round_trip(module), elide=True) == print_module(module, elide=True), name
