// The JIT's bitcode libraries (jit/bitcode/element_functions.cc compiled by clang at build time), embedded
// as read-only data. CMake passes the paths and rebuilds this file when the bitcode changes.
  .section .rodata
  .balign 16
  .globl ember_jit_bitcode_fma
  .hidden ember_jit_bitcode_fma
ember_jit_bitcode_fma:
  .incbin EMBER_JIT_BC_FMA
  .globl ember_jit_bitcode_fma_end
  .hidden ember_jit_bitcode_fma_end
ember_jit_bitcode_fma_end:
  .byte 0
  .balign 16
  .globl ember_jit_bitcode_baseline
  .hidden ember_jit_bitcode_baseline
ember_jit_bitcode_baseline:
  .incbin EMBER_JIT_BC_BASELINE
  .globl ember_jit_bitcode_baseline_end
  .hidden ember_jit_bitcode_baseline_end
ember_jit_bitcode_baseline_end:
  .byte 0
  .section .note.GNU-stack,"",@progbits
