"""Run geir-opt with two extra passes that misbehave on purpose.

usage: test_passes.py GEIR_OPT_ARGS...

  test-break-softmax  sets every graph.softmax axis to 99 (invalid IR)
  test-fail           raises PassFailedException
"""

import sys
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

import geir.driver.registry as registry
from geir.tools.geir_opt import main


@dataclass(frozen=True)
class BreakSoftmax(ModulePass):
    name = "test-break-softmax"

    def apply(self, ctx, op):
        for o in op.walk():
            if o.name == "graph.softmax":
                o.properties["axis"] = IntegerAttr(99, i64)


@dataclass(frozen=True)
class Fail(ModulePass):
    name = "test-fail"

    def apply(self, ctx, op):
        raise PassFailedException("this pass always fails")


_all = registry.get_all_passes


def get_all_passes():
    return {**_all(), BreakSoftmax.name: lambda: BreakSoftmax, Fail.name: lambda: Fail}


registry.get_all_passes = get_all_passes
sys.exit(main(sys.argv[1:]))
