"""ir/text.py: what the parser does beyond xDSL's (the printer's resource blobs are tested
through the offline model in test_api.py and test_interop.py)."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import ParseError

from geir.dialects import make_context
from geir.ir.text import _type_end, parse_module, print_module

PROGRAM = '''
func.func @main(%a: memref<4x8xf32, strided<[8, 1], offset: ?>, "gm">, %b: memref<4x8xf32, strided<[8, 1], offset: ?>, "gm">,
                %c: memref<4xf32, affine_map<(d0) -> (d0)>>, %d: memref<4xf32, affine_map<(d0) -> (d0)>>,
                %e: tensor<2x3xf16>, %f: tensor<2x3xf16>) {
  func.return
}
'''


def test_a_type_spelled_again_is_the_type_parsed_before():
    """The parser keeps each memref / tensor type it parsed by its text: the next one spelled
    the same is that type (attributes are values), the module prints back as it was."""
    module = parse_module(PROGRAM, make_context())
    args = module.body.block.first_op.body.block.args
    types = [arg.type for arg in args]
    assert types[0] is types[1] and types[2] is types[3] and types[4] is types[5]
    assert types[0] is not types[2]
    assert print_module(module) == print_module(parse_module(print_module(module), make_context()))
    assert 'strided<[8, 1], offset: ?>, "gm">' in print_module(module)


def test_a_bad_type_after_a_good_one_is_still_an_error():
    bad = PROGRAM.replace('%b: memref<4x8xf32, strided<[8, 1], offset: ?>, "gm">',
                          '%b: memref<4x8xf32, strided<[8, 1], offset: ?>, "gm"')
    with pytest.raises(ParseError):
        parse_module(bad, make_context())


@pytest.mark.parametrize("text,at,end", [
    ("memref<4xf32> x", 6, 13),
    ('memref<4xf32, "a>b"> x', 6, 20),                          # a '>' inside a string
    ("memref<4xf32, affine_map<(d0) -> (d0)>> x", 6, 39),       # '->' is no closing '>'
    ("memref x", 6, None),                                      # no '<': not a type body
    ("memref<4xf32", 6, None),                                  # never closed
])
def test_type_end(text, at, end):
    assert _type_end(text, at) == end
