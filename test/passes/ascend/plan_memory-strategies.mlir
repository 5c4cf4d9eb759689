// The strategies of ascend-plan-memory on one small instance where they differ: eight
// buffers of 1-4 KiB, buffer i written at launch start_i and last read at launch end_i
// (the kernels are empty: planning only reads which buffers each launch passes). The most
// bytes live at once is 12 KiB (launch 3: %b0 %b3 %b4 %b5 %b7).
//   best-fit     onnxruntime - program order, smallest gap             -> 15 KiB
//   greedy-size  TFLite - largest first, smallest gap                   -> 14 KiB
//   ge           GE's hybrid assigner: several, the smallest plan      -> 14 KiB
//   best         ge + search (here the exact search at the bound)      -> 12 KiB, the bound
// RUN: geir-opt %s -p 'ascend-plan-memory{strategy=best-fit},ascend-check-memory' | filecheck %s --check-prefix=BF
// RUN: geir-opt %s -p 'ascend-plan-memory{strategy=greedy-size},ascend-check-memory' | filecheck %s --check-prefix=GS
// RUN: geir-opt %s -p 'ascend-plan-memory{strategy=ge},ascend-check-memory' | filecheck %s --check-prefix=GE
// RUN: geir-opt %s -p 'ascend-plan-memory,ascend-check-memory' | filecheck %s --check-prefix=BEST
// RUN: not geir-opt %s -p 'ascend-plan-memory{strategy=fastest}' 2>&1 | filecheck %s --check-prefix=BAD

// BAD: unknown strategy 'fastest' for ascend-plan-memory; known: best-fit, greedy-size, ge, best

// BF-LABEL: func.func @search(
// BF-SAME:    attributes {ascend.workspace_size = 15360 : i64, ascend.memory_plan = {strategy = "best-fit", lower_bound = 12288 : i64, no_reuse = 19456 : i64}}
// BF:         %b0 = ascend.alloc {offset = 0 : i64, live = array<i64: 2, 4>}
// BF:         %b1 = ascend.alloc {offset = 0 : i64, live = array<i64: 5, 7>}
// BF:         %b2 = ascend.alloc {offset = 8192 : i64, live = array<i64: 1, 2>}
// BF:         %b3 = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 3>}
// BF:         %b4 = ascend.alloc {offset = 3072 : i64, live = array<i64: 0, 3>}
// BF:         %b5 = ascend.alloc {offset = 12288 : i64, live = array<i64: 3, 6>}
// BF:         %b6 = ascend.alloc {offset = 0 : i64, live = array<i64: 0, 1>}
// BF:         %b7 = ascend.alloc {offset = 10240 : i64, live = array<i64: 1, 4>}

// GS-LABEL: func.func @search(
// GS-SAME:    attributes {ascend.workspace_size = 14336 : i64, ascend.memory_plan = {strategy = "greedy-size", lower_bound = 12288 : i64, no_reuse = 19456 : i64}}
// GS:         %b0 = ascend.alloc {offset = 11264 : i64, live = array<i64: 2, 4>}
// GS:         %b1 = ascend.alloc {offset = 0 : i64, live = array<i64: 5, 7>}
// GS:         %b2 = ascend.alloc {offset = 7168 : i64, live = array<i64: 1, 2>}
// GS:         %b3 = ascend.alloc {offset = 0 : i64, live = array<i64: 1, 3>}
// GS:         %b4 = ascend.alloc {offset = 13312 : i64, live = array<i64: 0, 3>}
// GS:         %b5 = ascend.alloc {offset = 4096 : i64, live = array<i64: 3, 6>}
// GS:         %b6 = ascend.alloc {offset = 4096 : i64, live = array<i64: 0, 1>}
// GS:         %b7 = ascend.alloc {offset = 9216 : i64, live = array<i64: 1, 4>}

// GE-LABEL: func.func @search(
// GE-SAME:    attributes {ascend.workspace_size = 14336 : i64, ascend.memory_plan = {strategy = "ge", lower_bound = 12288 : i64, no_reuse = 19456 : i64}}
// GE:         %b0 = ascend.alloc {offset = 11264 : i64, live = array<i64: 2, 4>}
// GE:         %b1 = ascend.alloc {offset = 0 : i64, live = array<i64: 5, 7>}
// GE:         %b2 = ascend.alloc {offset = 7168 : i64, live = array<i64: 1, 2>}
// GE:         %b3 = ascend.alloc {offset = 0 : i64, live = array<i64: 1, 3>}
// GE:         %b4 = ascend.alloc {offset = 13312 : i64, live = array<i64: 0, 3>}
// GE:         %b5 = ascend.alloc {offset = 4096 : i64, live = array<i64: 3, 6>}
// GE:         %b6 = ascend.alloc {offset = 4096 : i64, live = array<i64: 0, 1>}
// GE:         %b7 = ascend.alloc {offset = 9216 : i64, live = array<i64: 1, 4>}

// BEST-LABEL: func.func @search(
// BEST-SAME:    attributes {ascend.workspace_size = 12288 : i64, ascend.memory_plan = {strategy = "best", lower_bound = 12288 : i64, no_reuse = 19456 : i64}}
// BEST:         %b0 = ascend.alloc {offset = 7168 : i64, live = array<i64: 2, 4>}
// BEST:         %b1 = ascend.alloc {offset = 0 : i64, live = array<i64: 5, 7>}
// BEST:         %b2 = ascend.alloc {offset = 4096 : i64, live = array<i64: 1, 2>}
// BEST:         %b3 = ascend.alloc {offset = 0 : i64, live = array<i64: 1, 3>}
// BEST:         %b4 = ascend.alloc {offset = 11264 : i64, live = array<i64: 0, 3>}
// BEST:         %b5 = ascend.alloc {offset = 4096 : i64, live = array<i64: 3, 6>}
// BEST:         %b6 = ascend.alloc {offset = 6144 : i64, live = array<i64: 0, 1>}
// BEST:         %b7 = ascend.alloc {offset = 9216 : i64, live = array<i64: 1, 4>}

ascend.kernel @l0(%b4: memref<256xf32, "gm">, %b6: memref<768xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @l1(%b2: memref<512xf32, "gm">, %b3: memref<1024xf32, "gm">, %b6: memref<768xf32, "gm">, %b7: memref<512xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @l2(%b0: memref<512xf32, "gm">, %b2: memref<512xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @l3(%b3: memref<1024xf32, "gm">, %b4: memref<256xf32, "gm">, %b5: memref<768xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @l4(%b0: memref<512xf32, "gm">, %b7: memref<512xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @l5(%b1: memref<512xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @l6(%b5: memref<768xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
ascend.kernel @l7(%b1: memref<512xf32, "gm">) attributes {block_dim = 1 : i64, core_type = "vector"} {
  ascend.return
}
func.func @search() {
  %s = ascend.stream 0
  %b0 = ascend.alloc : memref<512xf32, "gm">
  %b1 = ascend.alloc : memref<512xf32, "gm">
  %b2 = ascend.alloc : memref<512xf32, "gm">
  %b3 = ascend.alloc : memref<1024xf32, "gm">
  %b4 = ascend.alloc : memref<256xf32, "gm">
  %b5 = ascend.alloc : memref<768xf32, "gm">
  %b6 = ascend.alloc : memref<768xf32, "gm">
  %b7 = ascend.alloc : memref<512xf32, "gm">
  ascend.launch @l0 on %s(%b4, %b6) : (memref<256xf32, "gm">, memref<768xf32, "gm">)
  ascend.launch @l1 on %s(%b2, %b3, %b6, %b7) : (memref<512xf32, "gm">, memref<1024xf32, "gm">, memref<768xf32, "gm">, memref<512xf32, "gm">)
  ascend.launch @l2 on %s(%b0, %b2) : (memref<512xf32, "gm">, memref<512xf32, "gm">)
  ascend.launch @l3 on %s(%b3, %b4, %b5) : (memref<1024xf32, "gm">, memref<256xf32, "gm">, memref<768xf32, "gm">)
  ascend.launch @l4 on %s(%b0, %b7) : (memref<512xf32, "gm">, memref<512xf32, "gm">)
  ascend.launch @l5 on %s(%b1) : (memref<512xf32, "gm">)
  ascend.launch @l6 on %s(%b5) : (memref<768xf32, "gm">)
  ascend.launch @l7 on %s(%b1) : (memref<512xf32, "gm">)
  func.return
}
