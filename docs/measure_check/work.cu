// Two synthetic GPU programs for checking gpudb measure on a real NVIDIA GPU (run.sh beside it):
//   work compute : FMA chains in registers, core-clock bound (~1.3 s at 1980 MHz on an H200)
//   work memory  : 1500 copies of 1 GiB to 1 GiB (float4), DRAM-bandwidth bound (~1 s on an H200)
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
__global__ void fma_loop(float *out, int iters) {
  float a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, 0.9999f, 0.5f); b = fmaf(b, 0.9999f, 0.5f);
    c = fmaf(c, 0.9999f, 0.5f); d = fmaf(d, 0.9999f, 0.5f);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + b + c + d;
}
__global__ void copy(const float4 *in, float4 *out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = in[i];
}
int main(int argc, char **argv) {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  if (argc > 1 && !strcmp(argv[1], "compute")) {
    int blocks = sms * 16, threads = 256; float *out;
    cudaMalloc(&out, sizeof(float) * blocks * threads);
    fma_loop<<<blocks, threads>>>(out, 1 << 24);
  } else {
    size_t n = (1ull << 30) / sizeof(float4); float4 *a, *b;
    cudaMalloc(&a, n * sizeof(float4)); cudaMalloc(&b, n * sizeof(float4));
    cudaMemset(a, 0, n * sizeof(float4));
    for (int r = 0; r < 1500; ++r) copy<<<sms * 8, 512>>>(a, b, n);
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(e)); return 1; }
  return 0;
}
