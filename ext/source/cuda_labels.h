/*
** cuda_labels.h: CUDA kernel label rules shared by the CUDA-family readers (inputs.md
** section 6): the lifted label (compute identity) and the NCCL collective test.
**
** Both take a lower-cased kernel label. The Nsight (nsys.c) and Kineto (kineto.c) readers
** share them, so a kernel gets the same identity from either profiler.
*/
#ifndef TL_CUDA_LABELS_H
#define TL_CUDA_LABELS_H

/* The lifted label (CudaMatMul, CudaAux:Fill, ...) of a lower-cased kernel label, or NULL
** when the label is kept as its own identity. */
const char *tl_cuda_lift_label(const char *lower);
/* 1 when a lower-cased label names an NCCL collective (nccl + allreduce, allgather, ...). */
int tl_cuda_is_nccl_collective(const char *lower);
/* 1 when a host API name is a CUDA graph launch (contains cudagraphlaunch, any case). */
int tl_cuda_is_graph_launch(const char *api_name);

#endif
