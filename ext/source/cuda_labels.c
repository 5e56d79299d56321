/*
** cuda_labels.c: the CUDA kernel label rules of inputs.md section 6 (see cuda_labels.h).
** First match wins, on the lower-cased label; the order is the reference's. One rule goes
** beyond it: cuBLAS's matrix-vector kernels (`internal::gemvx::kernel<...>`, what a decode
** step's projections at batch 1 run; tests/data/kineto_gpu) are CudaMatMul like its GEMMs,
** where the reference keeps their raw names (docs/PARITY.md, "Beyond the reference").
*/
#include "source/cuda_labels.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

static int has(const char *s, const char *needle) { return strstr(s, needle) != NULL; }

const char *tl_cuda_lift_label(const char *l) {
  if (has(l, "flash_attn") || has(l, "flashattention") || has(l, "flash_fwd") ||
      (has(l, "flash") && has(l, "attention")))
    return "CudaFlashAttention";
  if (has(l, "attention")) return "CudaAttention";
  if (has(l, "gemm") || has(l, "cutlass") || has(l, "matmul") || has(l, "gemv"))
    return "CudaMatMul";
  if (has(l, "rmsnorm") || has(l, "rms_norm")) return "CudaRmsNorm";
  if (has(l, "layernorm") || has(l, "layer_norm")) return "CudaLayerNorm";
  if (has(l, "rotary") || has(l, "rope")) return "CudaRope";
  if (has(l, "silu") || has(l, "swiglu") || has(l, "gelu") || has(l, "act_and_mul"))
    return "CudaActivation";
  if (has(l, "reshape_and_cache") || has(l, "slot_mapping") || has(l, "kv_cache"))
    return "CudaKVCache";
  if (has(l, "topk") || has(l, "topp") || has(l, "sampling") || has(l, "sampler"))
    return "CudaSampling";
  if (has(l, "softmax")) return "CudaSoftmax";
  if (has(l, "splitkreduce") || has(l, "reduce_kernel")) return "CudaReduce";
  if (has(l, "distribution_") || has(l, "random") || has(l, "curand")) return "CudaAux:Random";
  if (has(l, "elementwise")) return "CudaAux:Pointwise";
  if (has(l, "memset") || has(l, "fill") || has(l, "zero")) return "CudaAux:Fill";
  if (has(l, "copy")) return "CudaAux:Copy";
  if (has(l, "index") || has(l, "gather") || has(l, "scatter")) return "CudaAux:Index";
  return NULL;
}

int tl_cuda_is_nccl_collective(const char *l) {
  static const char *const ops[] = {"allreduce", "all_reduce", "allgather", "all_gather",
                                    "reducescatter", "reduce_scatter", "alltoall", "all_to_all",
                                    "broadcast", NULL};
  if (!has(l, "nccl")) return 0;
  for (int i = 0; ops[i]; i++)
    if (has(l, ops[i])) return 1;
  return 0;
}

int tl_cuda_is_graph_launch(const char *s) {
  static const char pat[] = "cudagraphlaunch";
  size_t m = sizeof pat - 1;
  for (; *s; s++) {
    size_t i = 0;
    while (i < m && s[i] && tolower((unsigned char)s[i]) == pat[i]) i++;
    if (i == m) return 1;
  }
  return 0;
}
